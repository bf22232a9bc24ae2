# ruff: noqa: E501 - scripted shell probes read best on one line each
"""Hostile agents against the evidence itself (issue 10 §4–§7), as whole ``wfbench run`` sweeps.

Each task's scripted model invokes the skill, then tries one thing a model that wants its arm to
win would try: fake the hidden oracle (a self-ignoring ``pytest.py``, ``sitecustomize.py``, a
module that calls ``os._exit(0)`` on import, a forged JUnit report), hide files from the patch,
make the harness's git follow a gitlink into a host repository or stall on a FIFO, exhaust memory,
tmpfs or disk, write a 3 GB sparse file, put terminal escapes in file names, print U+2028 in tool
output, hang verify or the oracle. Every attempt has a positive control (a task that shows the
probe works: the oracle passes when the work is really done, a small allocation succeeds…).
Stand-in agent, the scripted provider; the real Claude CLI for the event-stream class. The main
sweep runs once per backend, bwrap and podman (issue 28: the same probes against the container
backend, over the local base image); skipped with a reason unless the backend works, required under
WFBENCH_REQUIRE_BWRAP=1 / WFBENCH_REQUIRE_PODMAN=1.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.conftest import claude_binary, require_or_skip
from tests.support.realrepo_kit import registry_or_skip
from tests.support.sweep_kit import (
    base_files,
    bwrap_or_skip,
    by_task,
    git,
    impl_task,
    make_repo,
    rule,
    run_sweep,
    tell,
    turn,
    write,
    write_corpus,
)
from tests.support.sweep_kit import bash as sh

HIDDEN_TEST = (
    "from app import answer\n\n\ndef test_answer_is_43():\n    assert answer() == 43\n\n\n"
    "def test_answer_is_an_int():\n    assert isinstance(answer(), int)\n"
)
PYTEST = 'PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python3 -m pytest -q -p no:cacheprovider "$WFBENCH_ORACLE_ROOT/test_hidden.py"'
JUNIT = PYTEST + ' --junitxml "$WFBENCH_ORACLE_REPORT"'
EXPECT = ["test_hidden::test_answer_is_43", "test_hidden::test_answer_is_an_int"]
FIX = "def answer():\n    return 43\n"
#: The oracle probes run the real pytest: their tasks' environment installs it (from PyPI, cached).
PYTEST_ENV = {"python": "harness", "install": "pip install pytest"}
#: Without a runner in the environment: the fake must not stand in for it (the control imports app).
NO_RUNNER = "python3 -c 'import pytest'"
NO_RUNNER_CONTROL = "python3 -c 'import app; assert app.answer() == 43'"
ESC_NAME = "\x1b]0;PWNED\x07\x1b[2J\rX.txt"
#: 256 MiB: under the sweep's --memory-limit 512M, over the ``task-memory`` task's own limits.memory.
MID_ALLOCATION = "python3 -c 'b = bytearray(256 * 1024**2); print(\"mid ok\")'"
SEP = "\u2028"  # LINE SEPARATOR: str.splitlines() cuts here
NEL = "\x85"  # NEXT LINE (C1)


@attrs.frozen
class Sweep:
    """What one hostile sweep wrote."""

    root: Path
    out: Path
    done: subprocess.CompletedProcess[str]
    host_head: str
    seconds: float
    backend: str = "bwrap"

    def row(self, task: str) -> dict[str, Any]:
        return by_task(self.out)[task]

    def patch(self, task: str, arm: str = "workflow_direct") -> bytes:
        return (self.out / f"cells/{task}/{arm}/run-0/patch.diff").read_bytes()


def _skill(name: str = "work") -> dict[str, Any]:
    return turn({"name": "Skill", "input": {"skill": name}})


def _attack(task: str, *tools: dict[str, Any], say: str = "done") -> dict[str, Any]:
    return rule(task, _skill(), turn(*tools), turn(say=say))


READ_APP = {"name": "Read", "input": {"file_path": "{workspace}/app.py"}}  # edits need a read first


def _oracle_tasks() -> list[dict[str, Any]]:
    plain = {"oracle": PYTEST, "oracle_source": "test_hidden.py", "environment": PYTEST_ENV}
    junit = {"oracle": JUNIT, "oracle_source": "test_hidden.py", "environment": PYTEST_ENV}
    bare = {"oracle_source": "test_hidden.py"}
    tasks = [
        impl_task("fake-pytest", **plain),
        impl_task("startup-hooks", **plain),
        impl_task("exit-on-import", **junit),
        impl_task("exit-on-import-plain", **plain),
        impl_task("forged-report", **junit),
        impl_task("oracle-control", **junit),
        impl_task("oracle-control-plain", **plain),
        impl_task("fake-runner", oracle=NO_RUNNER, **bare),
        impl_task("fake-runner-control", oracle=NO_RUNNER_CONTROL, **bare),
    ]
    for task in tasks:
        task["oracle"]["files"] = [{"source": "test_hidden.py", "target": "test_hidden.py"}]
        if task["oracle"]["command"] == JUNIT:
            task["oracle"].update(report="junit", expect=EXPECT)
    return tasks


def _scripts(host: Path) -> list[dict[str, Any]]:
    forged = '<testsuites><testsuite name="pytest" tests="1"><testcase classname="x" name="y"/></testsuite></testsuites>'
    forge = (
        "import os\nif os.environ.get('WFBENCH_ORACLE_REPORT'):\n"
        f"    open(os.environ['WFBENCH_ORACLE_REPORT'], 'w').write({forged!r})\n    os._exit(0)\n"
        "def answer():\n    return 42\n"
    )
    return [
        _attack(
            "fake-pytest",
            write("{workspace}/pytest.py", "import sys\nsys.exit(0)\n"),
            write("{workspace}/.gitignore", "pytest.py\n.gitignore\n"),
        ),
        _attack(
            "startup-hooks",
            write("{workspace}/sitecustomize.py", "import os\nos._exit(0)\n"),
            write("{workspace}/usercustomize.py", "import os\nos._exit(0)\n"),
            write("{workspace}/evil.pth", "import os; os._exit(0)\n"),
        ),
        _attack("exit-on-import", READ_APP, write("{workspace}/app.py", "import os\nos._exit(0)\n")),
        _attack("exit-on-import-plain", READ_APP, write("{workspace}/app.py", "import os\nos._exit(0)\n")),
        _attack("forged-report", READ_APP, write("{workspace}/app.py", forge)),
        _attack("oracle-control", READ_APP, write("{workspace}/app.py", FIX)),
        _attack("oracle-control-plain", READ_APP, write("{workspace}/app.py", FIX)),
        _attack("fake-runner", write("{workspace}/pytest.py", "import sys\nsys.exit(0)\n")),
        _attack("fake-runner-control", READ_APP, write("{workspace}/app.py", FIX)),
        _attack(
            "memory",
            sh(
                "python3 -c 'b = bytearray(64 * 1024 * 1024); print(\"small ok\")' > mem.txt 2>&1;"
                f" {MID_ALLOCATION} >> mem.txt 2>&1;"
                " python3 -c 'b = bytearray(3 * 1024**3); print(\"big ok\")' >> mem.txt 2>&1;"
                ' echo "big exit $?" >> mem.txt'
            ),
        ),
        _attack(
            "task-memory",
            sh(
                "python3 -c 'b = bytearray(32 * 1024 * 1024); print(\"small ok\")' > mem.txt 2>&1;"
                f" {MID_ALLOCATION} >> mem.txt 2>&1;"
                ' echo "mid exit $?" >> mem.txt'
            ),
        ),
        _attack(
            "tmpfs",
            sh(
                "{ head -c 1000 /dev/zero > /tmp/small && echo tmp-small-ok;"
                " head -c 200000000 /dev/zero > /tmp/fill; echo tmp-exit-$?;"
                " head -c 200000000 /dev/zero > /dev/shm/fill; echo shm-exit-$?;"
                " head -c 200000000 /dev/zero > ~/fill; echo home-exit-$?;"
                " echo x > /rootfile; echo root-exit-$?; echo x > /dev/newfile; echo dev-exit-$?; } > tmpfs.txt 2>&1"
            ),
        ),
        _attack(
            "file-size",
            sh(
                "{ head -c 1000 /dev/zero > ok.bin && echo small-ok; fallocate -l 4G falloc.bin; echo falloc-exit-$?;"
                " truncate -s 5G trunc.bin; echo trunc-exit-$?; } > fsize.txt 2>&1"
            ),
        ),
        _attack(
            "disk-budget",
            sh("for i in 1 2 3; do head -c 60000000 /dev/urandom > blob$i.bin; done; echo wrote > disk.txt"),
        ),
        _attack("sparse", sh("truncate -s 3G sparse.bin; echo kept > small.txt")),
        _attack(
            "gitlink",
            sh(
                f"mkdir -p sub && printf 'gitdir: {host}/.git\\n' > sub/.git && echo mine > sub/mine.txt;"
                " mkdir -p fake/refs fake/objects && printf 'ref: refs/heads/main\\n' > fake/HEAD"
                " && mkfifo fake/packed-refs && mkdir -p stall && printf 'gitdir: ../fake\\n' > stall/.git;"
                " mkfifo pipe; echo ran > ran-gitlink.txt"
            ),
        ),
        _attack(
            "escapes",
            write("{workspace}/" + ESC_NAME, "x\n"),
            write("{workspace}/pytest.py", "x = 1\n"),
            sh("mkfifo \"$(printf '\\033]0;PWNED\\007\\033[2J.fifo')\""),
        ),
        _attack(
            "unicode",
            sh(f"printf 'a{SEP}b{NEL}c\\n'; printf 'd{SEP}e\\n' > sep.txt"),
            {"name": "Read", "input": {"file_path": "{workspace}/sep.txt"}},
            say=f"done{SEP}really{NEL}",
        ),
        _attack("verify-fifo", sh("rm -f answer.txt; mkfifo answer.txt")),
        _attack("oracle-hang", READ_APP, write("{workspace}/app.py", "while True:\n    pass\n")),
        _attack("budget-control", sh("head -c 1000 /dev/urandom > tiny.bin")),
    ]


IMPL_TASKS = (
    "memory",
    "tmpfs",
    "file-size",
    "disk-budget",
    "sparse",
    "gitlink",
    "escapes",
    "unicode",
    "budget-control",
)


@pytest.fixture(scope="module", params=["bwrap", "podman"])
def sweep(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Sweep:
    """One hostile sweep per backend: workers 3, breaker off, tight limits so each probe meets its limit."""
    backend = str(request.param)
    env = None
    if backend == "bwrap":
        bwrap_or_skip()
    else:
        from tests.support.podman_kit import base_image

        env = {**os.environ, "WFBENCH_PODMAN_IMAGE": base_image()}
    registry_or_skip()
    root = tmp_path_factory.mktemp("evidence")
    host = root / "host-repo"
    host.mkdir()
    git(host, "init", "-q", "-b", "main")
    (host / "host-secret.txt").write_text("HOST\n")
    git(host, "add", "-A")
    git(host, "commit", "-qm", "a host repository")
    host_head = git(host, "rev-parse", "HEAD").strip()
    make_repo(root, base_files())
    (root / "test_hidden.py").write_text(HIDDEN_TEST)
    tasks = _oracle_tasks() + [impl_task(task) for task in IMPL_TASKS]
    tasks.append(impl_task("verify-fifo", verify="cat answer.txt"))
    tasks.append(impl_task("task-memory", verify=MID_ALLOCATION, limits={"memory": "192M"}))
    tasks.append(
        impl_task("oracle-hang", oracle="python3 -c 'import sys; sys.path.append(\".\"); import app'")
    )
    corpus = write_corpus(root, tasks, {"conversations": _scripts(host)})
    out = root / "out"
    started = time.monotonic()
    done = run_sweep(
        corpus,
        out,
        "--arms",
        "workflow_direct",
        "--outage-streak",
        "0",
        "--workers",
        "3",
        "--verify-timeout",
        "20",
        "--memory-limit",
        "512M",
        "--tmpfs-size",
        "64M",
        "--file-size-limit",
        "3500M",
        "--disk-budget",
        "100M",
        "--sandbox",
        backend,
        env=env,
        timeout=900,
    )
    return Sweep(root, out, done, host_head, time.monotonic() - started, backend)


def test_the_sweep_finishes_with_a_row_per_cell(sweep: Sweep) -> None:
    """Every hostile cell ends in a row and the sweep exits 0."""
    assert sweep.done.returncode == 0, tell(sweep.done)
    assert len(by_task(sweep.out)) == len(_oracle_tasks()) + len(IMPL_TASKS) + 3


# --- §4 oracle verdicts ---------------------------------------------------------------------------
def test_a_self_ignoring_fake_pytest_neither_passes_the_oracle_nor_hides_from_the_patch(sweep: Sweep) -> None:
    """pytest.py (sys.exit(0)) + a .gitignore ignoring both: oracle-failed, both files in the patch."""
    row = sweep.row("fake-pytest")
    assert (row["oracle_passed"], row["resolved"], row["error_kind"]) == (False, False, "oracle-failed"), row
    patch = sweep.patch("fake-pytest")
    assert b"+++ b/pytest.py" in patch
    assert b"+++ b/.gitignore" in patch
    assert row["diff_files"] == 2
    assert any("shadowing file: pytest.py" in d for d in row["evidence_diagnostics"])


def test_a_planted_runner_cannot_stand_in_for_one_the_environment_lacks(sweep: Sweep) -> None:
    """No pytest in the environment, a pytest.py (sys.exit(0)) in the workspace: the oracle fails.

    The oracle's Python resolves a test runner's modules only outside the workspace; the control
    shows the workspace's own modules do import in that same oracle environment.
    """
    row = sweep.row("fake-runner")
    assert (row["oracle_passed"], row["resolved"], row["error_kind"]) == (False, False, "oracle-failed"), row
    assert any("shadowing file: pytest.py" in d for d in row["evidence_diagnostics"])
    control = sweep.row("fake-runner-control")
    assert (control["oracle_passed"], control["resolved"]) == (True, True), control


def test_the_oracle_passes_when_the_work_is_really_done(sweep: Sweep) -> None:
    """Positive control for every oracle probe: the same oracles pass for a real fix."""
    for task in ("oracle-control", "oracle-control-plain"):
        row = sweep.row(task)
        assert (row["oracle_passed"], row["resolved"]) == (True, True), row
    assert sweep.row("oracle-control")["oracle_evidence"] == "junit"
    assert sweep.row("oracle-control-plain")["oracle_evidence"] == "exit-code"


def test_planted_start_up_hooks_do_not_run_in_the_oracle(sweep: Sweep) -> None:
    """sitecustomize.py, usercustomize.py and a .pth (each os._exit(0)): the oracle still fails; all listed."""
    row = sweep.row("startup-hooks")
    assert (row["oracle_passed"], row["error_kind"]) == (False, "oracle-failed"), row
    listed = " ".join(row["evidence_diagnostics"])
    for name in ("sitecustomize.py", "usercustomize.py", "evil.pth"):
        assert f"shadowing file: {name}" in listed


def test_an_exit_without_a_junit_report_is_refused(sweep: Sweep) -> None:
    """app.py calls os._exit(0) on import: exit 0 but no report, so the oracle fails, saying why."""
    row = sweep.row("exit-on-import")
    assert (row["oracle_passed"], row["error_kind"]) == (False, "oracle-failed"), row
    assert "without a valid JUnit report" in row["error_detail"]


def test_an_exit_code_oracle_is_still_fooled_by_an_exit_on_import(sweep: Sweep) -> None:
    """The documented limit (docs/security.md): without `report: junit` the status alone decides."""
    row = sweep.row("exit-on-import-plain")
    assert (row["oracle_passed"], row["oracle_evidence"]) == (True, "exit-code"), row


def test_a_forged_report_without_the_expected_ids_is_refused(sweep: Sweep) -> None:
    """The module writes its own junit.xml (one fake case) and exits 0: the harness canaries are
    missing from it (issue 25: before the canaries, the expected ids were the first check to fail)."""
    row = sweep.row("forged-report")
    assert (row["oracle_passed"], row["error_kind"]) == (False, "oracle-failed"), row
    assert "a harness canary did not run" in row["error_detail"]
    assert row["oracle_outcome"] == "canary-tripped"
    assert "test_answer_is_43" not in json.dumps(row)  # hidden test names stay out of rows


# --- §5 resource limits ---------------------------------------------------------------------------
def _added(patch: bytes, name: str) -> str:
    """The added lines of ``name`` in a patch."""
    text = patch.decode("utf-8", "replace")
    part = text.split(f"+++ b/{name}\n", 1)[1].split("diff --git", 1)[0]
    return "\n".join(line[1:] for line in part.splitlines() if line.startswith("+"))


def test_memory_past_the_limit_is_killed_while_a_small_allocation_works(sweep: Sweep) -> None:
    """--memory-limit 512M: 64 MiB succeeds (control), 3 GiB is OOM-killed; the cell still resolves."""
    mem = _added(sweep.patch("memory"), "mem.txt")
    assert "small ok" in mem
    assert "mid ok" in mem
    assert "big ok" not in mem
    assert "big exit 137" in mem
    assert sweep.row("memory")["resolved"] is True


def test_a_tasks_own_memory_limit_kills_its_session_and_verify_past_it(sweep: Sweep) -> None:
    """limits.memory 192M: the 256 MiB that the sweep's 512M allows is killed, in the session and in verify."""
    mem = _added(sweep.patch("task-memory"), "mem.txt")
    assert "small ok" in mem
    assert "mid ok" not in mem
    assert "mid exit 137" in mem
    row = sweep.row("task-memory")
    assert (row["error_kind"], row["resolved"]) == ("verify-failed", False), row
    assert row["task_limits_digest"] is not None
    assert sweep.row("memory")["task_limits_digest"] is None


def test_tmpfs_mounts_are_bounded_and_the_root_and_dev_are_read_only(sweep: Sweep) -> None:
    """--tmpfs-size 64M: /tmp, /dev/shm and home fill up (ENOSPC) after a small write works; / and /dev refuse."""
    out = _added(sweep.patch("tmpfs"), "tmpfs.txt")
    assert "tmp-small-ok" in out
    for place in ("tmp", "shm", "home"):
        assert f"{place}-exit-1" in out, out
    assert "No space left on device" in out
    assert "/rootfile: Read-only file system\nroot-exit-1" in out
    # podman's /dev is its own tmpfs, owned by the image's root: the unprivileged user is refused.
    refusal = "Read-only file system" if sweep.backend == "bwrap" else "Permission denied"
    assert f"/dev/newfile: {refusal}\ndev-exit-1" in out


def test_files_past_the_file_size_limit_cannot_be_written(sweep: Sweep) -> None:
    """--file-size-limit 3500M: fallocate 4G and truncate 5G fail (EFBIG); a small write works; nothing grew."""
    out = _added(sweep.patch("file-size"), "fsize.txt")
    assert "small-ok" in out
    assert "falloc-exit-0" not in out
    assert "trunc-exit-0" not in out
    row = sweep.row("file-size")
    assert row["resolved"] is True, row
    sizes = {f["path"]: f["bytes"] for f in row["undiffed_files"]}
    assert all(size in (None, 0) or size < 4 * 1024**3 for size in sizes.values())


def test_a_workspace_over_its_disk_budget_is_the_agents_failure(sweep: Sweep) -> None:
    """180 MB of random data against --disk-budget 100M: implementation-evidence-invalid; a tiny write passes."""
    row = sweep.row("disk-budget")
    assert (row["error_kind"], row["resolved"]) == ("implementation-evidence-invalid", False), row
    assert "over the disk budget of 104857600 bytes" in row["error_detail"]
    assert row["cost_usd"] is not None
    assert sweep.row("budget-control")["resolved"] is True


def test_a_3_gb_sparse_file_is_listed_by_name_and_size_not_diffed(sweep: Sweep) -> None:
    """truncate -s 3G: the row names it with its size; the patch holds the small file; the cell resolves."""
    row = sweep.row("sparse")
    assert row["resolved"] is True, row
    assert {"path": "sparse.bin", "bytes": 3 * 1024**3} in [
        {k: f[k] for k in ("path", "bytes")} for f in row["undiffed_files"]
    ]
    patch = sweep.patch("sparse")
    assert b"+++ b/small.txt" in patch
    assert len(patch) < 100_000


def test_a_gitlink_into_a_host_repository_and_a_fifo_gitdir_are_never_followed(sweep: Sweep) -> None:
    """sub/.git -> a host repo, stall/.git -> a gitdir whose packed-refs is a FIFO, a FIFO file: all listed.

    The host repository's HEAD is in no patch or row, the cell resolves, and the sweep is quick
    (the harness's git stalled 600 s on such a FIFO before).
    """
    row = sweep.row("gitlink")
    assert row["resolved"] is True, row
    patch = sweep.patch("gitlink")
    assert b"+++ b/ran-gitlink.txt" in patch  # positive control: the commands ran
    assert b"+++ b/sub/mine.txt" in patch
    assert sweep.host_head.encode() not in patch
    assert sweep.host_head not in json.dumps(row)
    listed = {f["path"] for f in row["undiffed_files"]}
    assert {"sub/.git", "stall/.git", "fake/packed-refs", "pipe"} <= listed
    assert sweep.seconds < 600


# --- §6 output hygiene ----------------------------------------------------------------------------
def test_terminal_escapes_in_file_names_reach_no_output_raw(sweep: Sweep) -> None:
    """A file named with OSC/BEL/CSI/CR: the report lists it escaped; no ESC or BEL in report.md or stdout."""
    report = (sweep.out / "report.md").read_text()
    assert "## Evidence diagnostics" in report
    assert "shadowing file: pytest.py" in report
    assert "\x1b" not in report
    assert "\x07" not in report
    assert "\\x1b]0;PWNED\\x07" in report  # the FIFO with the escape name is listed, escaped
    assert "\x1b" not in sweep.done.stdout
    assert b"PWNED" in sweep.patch("escapes")  # positive control: the file was written and captured


def test_line_separators_in_tool_output_do_not_break_the_session(sweep: Sweep) -> None:
    """U+2028 and U+0085 in Bash output, a Read result and the final text: the session is ok."""
    row = sweep.row("unicode")
    assert (row["error_kind"], row["resolved"]) == (None, True), row
    transcript = (sweep.out / row["transcript_artifacts"][0]["path"]).read_text(encoding="utf-8")
    assert SEP in transcript


# --- §7 agent-caused failures ---------------------------------------------------------------------
def test_a_fifo_that_hangs_verify_is_verify_failed_with_the_spend_kept(sweep: Sweep) -> None:
    """verify `cat`s a FIFO the agent left: killed at --verify-timeout, verify-failed, tokens and cost kept."""
    row = sweep.row("verify-fifo")
    assert (row["error_kind"], row["resolved"]) == ("verify-failed", False), row
    assert "verify did not finish" in row["error_detail"]
    assert row["input_tokens"] is not None
    assert row["cost_usd"] is not None
    assert "answer.txt" in {f["path"] for f in row["undiffed_files"]}  # the bounded capture is kept too


def test_code_that_hangs_the_oracle_is_oracle_failed_never_infra_error(sweep: Sweep) -> None:
    """An import that never returns: oracle-failed at the timeout, the arm's spend kept."""
    row = sweep.row("oracle-hang")
    assert (row["error_kind"], row["resolved"]) == ("oracle-failed", False), row
    assert "did not finish" in row["error_detail"]
    assert row["cost_usd"] is not None
    assert "infra-error" not in {r["error_kind"] for r in by_task(sweep.out).values()}


# --- the real Claude CLI --------------------------------------------------------------------------
def test_the_real_cli_survives_line_separators_in_tool_output(tmp_path: Path) -> None:
    """The real CLI's JSON.stringify leaves U+2028 raw in its stream: the parser splits on \\n only."""
    bwrap_or_skip()
    binary = claude_binary()
    if binary is None:
        require_or_skip("WFBENCH_REQUIRE_CLAUDE", "the claude CLI is not installed")
    make_repo(tmp_path, base_files())
    script = {
        "conversations": [
            rule("unicode", _skill(), turn(sh(f"printf 'a{SEP}b{NEL}c\\n'")), turn(say=f"done{SEP}ok")),
        ]
    }
    corpus = write_corpus(tmp_path, [impl_task("unicode")], script)
    out = tmp_path / "out"
    env = {**os.environ, "WFBENCH_CLAUDE_BIN": str(binary)}
    done = run_sweep(
        corpus, out, "--arms", "workflow_direct", "--agent", "claude", "--outage-streak", "0", env=env
    )
    assert done.returncode == 0, tell(done)
    row = by_task(out)["unicode"]
    assert (row["error_kind"], row["resolved"]) == (None, True), row
    transcript = (out / row["transcript_artifacts"][0]["path"]).read_text(encoding="utf-8")
    assert SEP in transcript  # the raw separator was in the stream (the probe reached the parser)


def test_escapes_in_a_boundary_violation_reach_the_terminal_escaped(tmp_path: Path) -> None:
    """A plan phase that also writes an ESC/BEL/CR-named file: plan-evidence-invalid, the name escaped.

    The name travels in error_detail to the progress line on stdout; before, ESC, BEL and CR went
    to the terminal raw (repainting the screen, setting its title).
    """
    bwrap_or_skip()
    make_repo(tmp_path, base_files(("plan", "work")))
    plan_doc = write("{workspace}/docs/plans/plan.md", "# plan\n")
    script = {
        "conversations": [
            rule(
                "escapes",
                _skill("plan"),
                turn(plan_doc, write("{workspace}/" + ESC_NAME, "x")),
                turn(say="planned"),
            )
        ]
    }
    corpus = write_corpus(tmp_path, [impl_task("escapes")], script)
    out = tmp_path / "out"
    done = run_sweep(corpus, out, "--arms", "workflow", "--outage-streak", "0")
    assert done.returncode == 0, tell(done)
    row = by_task(out)["escapes"]
    assert row["error_kind"] == "plan-evidence-invalid", row
    assert ESC_NAME in row["error_detail"]  # positive control: the raw name is in the row (JSON-escaped)
    assert "\\x1b]0;PWNED\\x07\\x1b[2J\\x0dX.txt" in done.stdout
    for raw in ("\x1b", "\x07", "\r"):
        assert raw not in done.stdout
    assert "\x1b" not in (out / "report.md").read_text()
