#!/usr/bin/env python3
"""Per-cell cost outside the agent, and bwrap start-up overhead.

Builds a generated repository of ~2,000 files (with some history), a sanitized snapshot of it,
then measures, ``--repeats`` times each, in the same run:

* per cell: ``private_copy`` + one trivial sandboxed command (``/usr/bin/true`` in bwrap over
  the copy, read-only, network off) + ``remove_tree``;
* the comparator: ``git clone --no-local --no-hardlinks`` of the same repository (what a cell
  would cost if it cloned instead of copying a snapshot), plus its removal;
* bwrap start-up: ``/usr/bin/true`` through ``BwrapSandbox.run`` vs through ``run_managed``
  directly on the host.

Prints medians in milliseconds and the ratio per-cell ÷ clone (target ≤ 0.25).

``--sessions N`` (and ``--real-sessions N`` for the real Claude Code CLI) adds the **bridge**:
a 2-turn scripted session (a ``Write``, then ``end_turn``) through ``ClaudeCLI.run_session`` in
bwrap, behind the key proxy, measured side by side (interleaved, same process, same load) in two
ways: *host network* (the sandbox shares the host's network namespace; the agent talks TCP to the
proxy's loopback port; the agent is PID 1 and dumpable: the layout before issue 10) and *bridged*
(``--unshare-net``; the forwarder is PID 1 and presents the cell's lease socket on the sandbox's
own loopback; the agent is started non-dumpable). Prints medians and the extra wall time per
session (target ≤ 10%). ``--bridge-only`` skips the repository part.

The phases are interleaved: each repeat runs every phase once, in an order rotated from one
repeat to the next, so no phase always runs on the warmest caches or in the quietest moment of a
shared machine (run one after the other, the ratio moved with the order the phases ran in).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from wfbench.adapters.repo.snapshot import build_snapshot
from wfbench.adapters.repo.workspace import private_copy, remove_tree
from wfbench.adapters.sandbox.bwrap import BwrapSandbox
from wfbench.adapters.sandbox.process import run_managed
from wfbench.domain.workspace.sandbox import SandboxPolicy

SESSION_SCRIPT = """
conversations:
  - when: ["Task bench"]
    turns:
      - tools: [{name: Write, input: {file_path: "{workspace}/out.txt", content: "x"}}]
        usage: {input_tokens: 100, output_tokens: 10}
      - {say: "Done.", usage: {input_tokens: 5, output_tokens: 2}}
"""

GIT_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True)


def make_repo(root: Path, files: int, commits: int) -> None:
    """``files`` small source files in 40 directories, committed over ``commits`` commits."""
    git(root, "init", "-q", "-b", "main")
    per_commit = max(1, files // commits)
    for i in range(files):
        path = root / f"pkg{i % 40:02d}" / f"mod_{i:05d}.py"
        path.parent.mkdir(exist_ok=True)
        body = "".join(f"def f_{i}_{j}(x):\n    return x * {j} + {i}\n\n" for j in range(12))
        path.write_text(body)
        if (i + 1) % per_commit == 0:
            git(root, "add", "-A")
            git(root, "commit", "-qm", f"batch {i}")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "last", "--allow-empty")


def interleaved_ms(phases: dict[str, Callable[[int], None]], repeats: int) -> dict[str, float]:
    """The median ms of each phase over ``repeats`` rounds; each round runs every phase once, in an
    order rotated by one place per round (so each phase runs first, second, ... equally often)."""
    names = list(phases)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for i in range(repeats):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            phases[name](i)
            samples[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


def bridge_sessions(runs: int, real_runs: int) -> None:
    """Sessions with the host network vs through the bridge, interleaved; prints medians and the overhead."""
    import attrs

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.conftest import claude_binary

    from wfbench.adapters.agents.claude import ClaudeCLI
    from wfbench.adapters.gateway.key_proxy import KeyProxy
    from wfbench.adapters.provider.script import ProviderScript
    from wfbench.adapters.provider.scripted import ScriptedProvider
    from wfbench.domain.session.records import SessionRequest

    sandbox = BwrapSandbox()
    sandbox.preflight()
    agents = [("stand-in", ClaudeCLI.standin(), runs)]
    binary = claude_binary()
    if real_runs and binary is not None:
        agents.append(("real Claude Code", ClaudeCLI.real(binary), real_runs))
    script = ProviderScript.from_yaml(SESSION_SCRIPT, source="bench")
    with (
        ScriptedProvider(script) as provider,
        KeyProxy(provider.base_url, "sk-bench", model="claude-sonnet-4-5") as proxy,
    ):
        for name, cli, count in agents:
            samples: dict[str, list[float]] = {"host network": [], "bridged": []}
            for index in range(count + 1):  # the first round warms caches and is dropped
                for mode in ("host network", "bridged") if index % 2 else ("bridged", "host network"):
                    with tempfile.TemporaryDirectory() as ws:
                        policy = SandboxPolicy(
                            workspace=ws, workspace_writable=True, network=True, timeout_s=120
                        )
                        if mode == "bridged":
                            lease = proxy.lease("bench", model="claude-sonnet-4-5")
                            env, key = {"ANTHROPIC_BASE_URL": lease.bridge.url}, lease.token  # type: ignore[union-attr]
                            policy = attrs.evolve(policy, network=False, bridges=(lease.bridge,))
                        else:
                            lease = None
                            env, key = {"ANTHROPIC_BASE_URL": proxy.base_url}, proxy.dummy_token
                        request = SessionRequest(
                            prompt="Task bench",
                            model="claude-sonnet-4-5",
                            allowed_tools=("Write",),
                            env=env,
                            secrets={"ANTHROPIC_API_KEY": key},
                            timeout_s=120,
                        )
                        cli_for_mode = cli if mode == "bridged" else _dumpable(cli)
                        started = time.perf_counter()
                        record = cli_for_mode.run_session(request, sandbox=sandbox, policy=policy)
                        elapsed = (time.perf_counter() - started) * 1000
                        if lease is not None:
                            lease.close()
                        assert record.ok, (mode, record.error_detail)
                        if index:
                            samples[mode].append(elapsed)
            host, bridged = (statistics.median(samples[m]) for m in ("host network", "bridged"))
            print(
                f"{name} session, median of {count} each (ms): host network {host:8.1f}"
                f"   bridged {bridged:8.1f}   extra {bridged - host:+7.1f}"
                f" ({(bridged / host - 1) * 100:+.1f}%)  (target <= +10%)"
            )


def _dumpable(cli: object) -> object:
    """The same agent started as before issue 10: PID 1 of its sandbox and dumpable."""
    import attrs

    from wfbench.adapters.agents.claude import ClaudeCLI

    @attrs.frozen
    class DumpableCLI(ClaudeCLI):
        def session_policy(self, *args: object, **kwargs: object) -> SandboxPolicy:
            return attrs.evolve(ClaudeCLI.session_policy(self, *args, **kwargs), non_dumpable=False)  # type: ignore[arg-type]

    return DumpableCLI(**attrs.asdict(cli, recurse=False))  # type: ignore[arg-type]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--dir", default=None, help="where the repository, cells and clones live")
    parser.add_argument(
        "--sessions", type=int, default=0, help="stand-in sessions per mode (bridge overhead)"
    )
    parser.add_argument("--real-sessions", type=int, default=0, help="real Claude CLI sessions per mode")
    parser.add_argument("--bridge-only", action="store_true", help="only the bridge measurement")
    args = parser.parse_args()
    if args.sessions or args.real_sessions:
        print(f"load at start {os.getloadavg()[0]:.1f}")
        bridge_sessions(args.sessions, args.real_sessions)
        print(f"load at end {os.getloadavg()[0]:.1f}")
    if args.bridge_only:
        return 0

    sandbox = BwrapSandbox()
    sandbox.preflight()
    work = Path(tempfile.mkdtemp(prefix="wfbench-bench-", dir=args.dir))
    try:
        repo = work / "repo"
        repo.mkdir()
        make_repo(repo, args.files, args.commits)
        started = time.perf_counter()
        snapshot = build_snapshot(str(repo), "main", str(work / "snapshot"))
        snapshot_ms = (time.perf_counter() - started) * 1000
        tracked = sum(1 for p in Path(snapshot.path).rglob("*") if p.is_file() and ".git" not in p.parts)

        def cell(i: int) -> None:
            ws = private_copy(snapshot, str(work / f"cell{i}"))
            policy = SandboxPolicy(workspace=ws, workspace_writable=False, network=False, timeout_s=30)
            result = sandbox.run(["/usr/bin/true"], policy=policy)
            assert result.ok, result
            assert remove_tree(ws) is None

        def clone(i: int) -> None:
            dest = work / f"clone{i}"
            git(work, "clone", "-q", "--no-local", "--no-hardlinks", str(repo), str(dest))
            assert remove_tree(str(dest)) is None

        def copy_only(i: int) -> None:
            ws = private_copy(snapshot, str(work / f"copy{i}"))
            assert remove_tree(ws) is None

        policy = SandboxPolicy(workspace=str(work), workspace_writable=False, network=False, timeout_s=30)

        def bwrap_true(_: int) -> None:
            assert sandbox.run(["/usr/bin/true"], policy=policy).ok

        def host_true(_: int) -> None:
            assert run_managed(["/usr/bin/true"], env={}, timeout_s=30).ok

        cell(-1), clone(-1)  # one warm-up of each, then interleaved rounds
        medians = interleaved_ms({"cell": cell, "clone": clone, "copy": copy_only}, args.repeats)
        cell_ms, clone_ms, copy_ms = medians["cell"], medians["clone"], medians["copy"]
        startup = interleaved_ms({"bwrap": bwrap_true, "host": host_true}, args.repeats * 2)
        bwrap_ms, host_ms = startup["bwrap"], startup["host"]
    finally:
        remove_tree(str(work))

    load = os.getloadavg()[0]
    print(f"machine: {platform.platform()}, {os.cpu_count()} cpus, load {load:.1f}")
    print(f"python: {platform.python_version()}")
    print(f"filesystem of the cells: {work.parent}")
    print(f"repository: {tracked} files, {args.commits} commits; snapshot built once in {snapshot_ms:.0f} ms")
    print(f"median of {args.repeats} interleaved rounds (ms):")
    print(f"  per cell (private copy + bwrap true + remove): {cell_ms:8.1f}")
    print(f"    of which copy + remove:                      {copy_ms:8.1f}")
    print(f"  git clone --no-local --no-hardlinks + rm:      {clone_ms:8.1f}")
    print(f"  ratio per cell / clone:                        {cell_ms / clone_ms:8.3f}  (target <= 0.25)")
    print(f"median of {args.repeats * 2} interleaved rounds (ms):")
    print(f"  /usr/bin/true via BwrapSandbox.run:            {bwrap_ms:8.1f}")
    print(f"  /usr/bin/true via run_managed (host):          {host_ms:8.1f}")
    print(f"  bwrap start-up overhead:                       {bwrap_ms - host_ms:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
