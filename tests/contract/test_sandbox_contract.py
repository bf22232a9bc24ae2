"""One contract for every Sandbox backend: bwrap, podman and host-unsafe.

Each property is one test, run against both backends. A property a backend cannot hold is a
strict xfail with the reason (so the gap stays visible and the day it holds the suite says so).
bwrap tests skip with a reason unless WFBENCH_REQUIRE_BWRAP=1, which turns the skip into a failure;
podman tests likewise under WFBENCH_REQUIRE_PODMAN=1 (they run over the local base image,
``scripts/base-image``).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import HARNESS_PYTHON, require_or_skip
from tests.support.tmp_guard import scratch_env
from wfbench.adapters.sandbox.bwrap import BwrapSandbox, python_runtime_paths
from wfbench.adapters.sandbox.host import UnsafeHostSandbox
from wfbench.domain.errors import SandboxUnavailable
from wfbench.domain.ports import Sandbox
from wfbench.domain.workspace.sandbox import Mount, ProcessState, SandboxPolicy

#: docker's variant (~110 s for this suite and the bridges') runs in the nightly tier; CI's own docker
#: test is the cheap cleanup one (tests/integration/sandbox/test_container_cleanup.py).
BACKENDS = (
    "bwrap",
    "podman",
    pytest.param("docker", marks=[pytest.mark.slow, pytest.mark.nightly]),
    "host-unsafe",
)
PATH = f"{os.path.dirname(os.path.realpath(sys.executable))}:/usr/bin:/bin"
PY = os.path.realpath(sys.executable)  # inside the sandbox: the standard library only

GAPS = {
    "host_files": "host-unsafe runs on the host: every host file the harness user can read is visible",
    "tmp": "host-unsafe has no mount namespace: /tmp is the host's /tmp (only TMPDIR is private)",
    "network": "host-unsafe has no network namespace: verify and oracle commands reach the host network",
    "pid": "host-unsafe has no PID namespace: host processes are visible",
    "setsid": "host-unsafe owns only a process group: a descendant that calls setsid escapes it",
    "parent": "host-unsafe has no die-with-parent: a killed harness leaves its command running",
}


#: Docker has no per-container user namespace: the command runs as the harness's own uid, which
#: owns the image's root files when the harness is root (no capability; the root is read-only).
DOCKER_ROOT_GAP = (
    "docker runs the command as the harness's uid (root here) without capabilities: it can read the"
    " image's root-owned files such as /etc/shadow (never write them; never the host's)"
)


def make_sandbox(backend: str, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    """The backend under test, ready to run (bwrap preflighted)."""
    if backend == "bwrap":
        sandbox = BwrapSandbox()
        try:
            sandbox.preflight()
        except SandboxUnavailable as exc:
            require_or_skip("WFBENCH_REQUIRE_BWRAP", f"bubblewrap cannot run here: {exc}")
        return sandbox
    if backend == "podman":
        from tests.support.podman_kit import podman_sandbox

        return podman_sandbox()  # type: ignore[no-any-return]
    if backend == "docker":
        from tests.support.podman_kit import docker_sandbox

        return docker_sandbox()  # type: ignore[no-any-return]
    monkeypatch.delenv("CI", raising=False)
    return UnsafeHostSandbox()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def sandbox(backend: str, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    return make_sandbox(backend, monkeypatch)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README").write_text("hello\n")
    return ws


def gap(request: pytest.FixtureRequest, backend: str, key: str) -> None:
    """Mark this test a strict xfail when host-unsafe cannot hold the property ``key``."""
    if backend == "host-unsafe":
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=GAPS[key]))


def policy(ws: Path, **kw: object) -> SandboxPolicy:
    values: dict[str, object] = {
        "workspace": str(ws),
        "workspace_writable": True,
        "network": False,
        "timeout_s": 30.0,
        "env": {"PATH": PATH},
    }
    values.update(kw)
    return SandboxPolicy(**values)  # type: ignore[arg-type]


def sh(sandbox: Sandbox, ws: Path, script: str, **kw: object):  # noqa: ANN201
    return sandbox.run(["/bin/sh", "-c", script], policy=policy(ws, **kw))


def pids_with(token: str) -> list[int]:
    """Host pids whose command line contains ``token`` (processes this test started)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if token.encode() in cmdline and int(entry) != os.getpid():
                found.append(int(entry))
    return found


@pytest.fixture
def token() -> Iterator[str]:
    """A unique marker for processes a test starts; any survivor is killed (by pid) afterwards."""
    value = f"wfbench-probe-{uuid.uuid4().hex}"
    yield value
    for pid in pids_with(value):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def sleeping(token: str) -> list[int]:
    """Pids of the sleeper itself (its argv holds both the sleep call and the token)."""
    return [p for p in pids_with(token) if b"time.sleep" in Path(f"/proc/{p}/cmdline").read_bytes()]


def sleeper(token: str, seconds: int = 300) -> str:
    return f"{PY} -c 'import time; time.sleep({seconds})' {token}"


def wait_gone(token: str, within_s: float = 5.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while (alive := pids_with(token)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


# --- running ------------------------------------------------------------------------------------


def test_a_command_runs_and_returns_its_stdout_and_exit_code(sandbox: Sandbox, workspace: Path) -> None:
    """stdout and the exit status of the command come back as values."""
    result = sh(sandbox, workspace, "cat README; echo err >&2; exit 3")
    assert result.state is ProcessState.EXITED
    assert result.returncode == 3
    assert result.stdout == b"hello\n"
    assert b"err" in result.stderr_tail
    assert sh(sandbox, workspace, "true").ok


def test_stdin_reaches_the_command(sandbox: Sandbox, workspace: Path) -> None:
    """Bytes given as stdin are the command's standard input."""
    result = sandbox.run(["/bin/cat"], policy=policy(workspace), stdin=b"prompt text")
    assert result.ok
    assert result.stdout == b"prompt text"


def test_the_command_starts_in_the_workspace(sandbox: Sandbox, workspace: Path) -> None:
    """The working directory is the workspace as the sandbox shows it."""
    pol = policy(workspace)
    result = sandbox.run(["/bin/pwd"], policy=pol)
    assert result.stdout.decode().strip() == sandbox.workspace_path(pol)


# --- environment --------------------------------------------------------------------------------


def test_the_environment_is_exactly_the_allow_list(
    sandbox: Sandbox, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing of the harness's environment leaks; only the policy's variables plus HOME, TMPDIR, PWD."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "host-secret-value")
    monkeypatch.setenv("GITHUB_TOKEN", "host-token-value")
    result = sandbox.run(["/usr/bin/env"], policy=policy(workspace, env={"PATH": PATH, "WFBENCH_X": "1"}))
    names = {line.split("=", 1)[0] for line in result.stdout.decode().splitlines()}
    assert names == {"PATH", "WFBENCH_X", "HOME", "TMPDIR", "PWD"}
    assert b"host-secret-value" not in result.stdout
    assert b"host-token-value" not in result.stdout


def test_environment_values_never_appear_in_any_argv(sandbox: Sandbox, workspace: Path) -> None:
    """A secret passed in the environment is not in the command line of any visible process."""
    secret = f"sk-{uuid.uuid4().hex}"
    script = "for f in /proc/[0-9]*/cmdline; do cat $f 2>/dev/null; echo; done; echo $MODEL_KEY | wc -c"
    result = sh(sandbox, workspace, script, env={"PATH": PATH, "MODEL_KEY": secret})
    assert result.ok
    assert secret.encode() not in result.stdout
    assert result.stdout.split()[-1] == str(len(secret) + 1).encode()  # the value did arrive


# --- filesystem ---------------------------------------------------------------------------------


def test_a_writable_workspace_takes_writes(sandbox: Sandbox, workspace: Path) -> None:
    """Implementation phases can create and change files in the workspace."""
    result = sh(sandbox, workspace, "echo new > created.txt && echo more >> README")
    assert result.ok
    assert (workspace / "created.txt").read_text() == "new\n"
    assert (workspace / "README").read_text() == "hello\nmore\n"


def test_a_read_only_workspace_refuses_writes(sandbox: Sandbox, workspace: Path) -> None:
    """Review, verify and oracle runs cannot create, change or delete workspace files."""
    script = "echo x > new.txt; echo x >> README; rm -f README; mkdir d; echo done"
    result = sh(sandbox, workspace, script, workspace_writable=False)
    assert result.stdout == b"done\n"
    assert sorted(p.name for p in workspace.iterdir()) == ["README"]
    assert (workspace / "README").read_text() == "hello\n"


def test_read_only_paths_stay_read_only_in_a_writable_workspace(sandbox: Sandbox, workspace: Path) -> None:
    """An evaluated skill directory cannot be changed even when the rest of the workspace can."""
    skill = workspace / ".claude" / "skills" / "fix"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("original\n")
    script = "echo evil > .claude/skills/fix/SKILL.md; echo x > .claude/skills/fix/new; echo ok > other.txt"
    result = sh(sandbox, workspace, script, read_only_paths=(".claude/skills/fix",))
    assert result.returncode == 0
    assert (skill / "SKILL.md").read_text() == "original\n"
    assert not (skill / "new").exists()
    assert (workspace / "other.txt").exists()


def test_a_read_only_mount_is_readable_and_not_writable(
    sandbox: Sandbox, workspace: Path, tmp_path: Path
) -> None:
    """A declared read-only mount shows its files and refuses writes to them."""
    dep = tmp_path / "dep"
    dep.mkdir()
    (dep / "lib.txt").write_text("dependency\n")
    dep.chmod(0o555)
    (dep / "lib.txt").chmod(0o444)
    pol = policy(workspace, mounts=(Mount(str(dep), "/opt/dep"),))
    where = sandbox.mount_path("/opt/dep", pol)
    result = sandbox.run(["/bin/sh", "-c", f"cat {where}/lib.txt; echo x > {where}/lib.txt"], policy=pol)
    assert result.stdout == b"dependency\n"
    assert (dep / "lib.txt").read_text() == "dependency\n"
    dep.chmod(0o755)


def test_host_files_outside_the_mounts_are_invisible(
    sandbox: Sandbox, backend: str, workspace: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A secret beside the workspace and the harness's home cannot be read."""
    gap(request, backend, "host_files")
    secret = tmp_path / "secret.txt"
    secret.write_text("beside-the-clone\n")
    home = Path.home()
    script = f"cat {secret}; ls {tmp_path}; cat /etc/hostname; echo; ls -A {home}"
    result = sh(sandbox, workspace, script)
    assert b"beside-the-clone" not in result.stdout
    assert b"secret.txt" not in result.stdout
    # Of the harness's home only the path to the bound Python runtime (if it lives there) shows.
    runtime_parts = {
        Path(p).relative_to(home).parts[0] for p in python_runtime_paths() if Path(p).is_relative_to(home)
    }
    # Of /etc/hostname only the sandbox's own name may show (podman writes one; bwrap has none).
    assert set(result.stdout.decode().split()) - {"wfbench"} <= runtime_parts
    hidden = [p.name for p in home.iterdir() if p.name not in runtime_parts]
    assert hidden == [] or not set(hidden) & set(result.stdout.decode().split())


def test_root_only_files_cannot_be_read(
    sandbox: Sandbox, backend: str, workspace: Path, request: pytest.FixtureRequest
) -> None:
    """/etc/shadow (the host's under host-unsafe, the image's in a container) is not readable."""
    gap(request, backend, "host_files")
    if backend == "docker" and os.getuid() == 0:
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=DOCKER_ROOT_GAP))
    result = sh(sandbox, workspace, "cat /etc/shadow")
    assert result.returncode != 0
    assert b"root:" not in result.stdout


def test_home_is_private_and_fresh_per_run(sandbox: Sandbox, workspace: Path) -> None:
    """HOME starts empty, is writable, is not the harness's home, and does not carry over."""
    first = sh(sandbox, workspace, 'ls -A "$HOME"; echo planted > "$HOME/.profile"; echo "$HOME"')
    assert first.ok
    assert first.stdout.splitlines() == [first.stdout.splitlines()[-1]]  # empty listing
    assert first.stdout.decode().strip() != str(Path.home())
    second = sh(sandbox, workspace, 'ls -A "$HOME"')
    assert second.ok
    assert second.stdout == b""


def test_tmpdir_is_private_and_fresh_per_run(sandbox: Sandbox, workspace: Path) -> None:
    """TMPDIR is writable, starts empty, and is gone after the run."""
    first = sh(sandbox, workspace, 'ls -A "$TMPDIR"; echo x > "$TMPDIR/f" && echo "$TMPDIR"')
    assert first.ok
    assert len(first.stdout.splitlines()) == 1
    assert sh(sandbox, workspace, 'ls -A "$TMPDIR"').stdout == b""


def test_slash_tmp_is_not_the_hosts(
    sandbox: Sandbox, backend: str, workspace: Path, token: str, request: pytest.FixtureRequest
) -> None:
    """A file written to /tmp inside the sandbox does not land in the host's /tmp."""
    gap(request, backend, "tmp")
    result = sh(sandbox, workspace, f"echo x > /tmp/{token}")
    host_file = Path("/tmp") / token
    landed = host_file.exists()
    host_file.unlink(missing_ok=True)
    assert result.ok
    assert not landed


# --- network ------------------------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on loopback that accepts connections; yields its port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.sendall(b"hi")
                conn.close()
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(2)
    server.close()


def connect_script(port: int) -> list[str]:
    code = f"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=3); print(s.recv(2))"
    return [PY, "-c", code]


def test_the_network_is_kept_when_the_policy_allows_it(
    sandbox: Sandbox, workspace: Path, listener: int
) -> None:
    """Agent sessions reach a loopback listener of the host (the model endpoint)."""
    result = sandbox.run(connect_script(listener), policy=policy(workspace, network=True))
    assert result.ok
    assert b"hi" in result.stdout


def test_the_network_is_off_when_the_policy_says_so(
    sandbox: Sandbox, backend: str, workspace: Path, listener: int, request: pytest.FixtureRequest
) -> None:
    """Verify and oracle runs cannot reach even the host's loopback listener."""
    gap(request, backend, "network")
    result = sandbox.run(connect_script(listener), policy=policy(workspace, network=False))
    assert result.returncode != 0
    assert b"hi" not in result.stdout


# --- processes ----------------------------------------------------------------------------------


def test_the_command_cannot_see_host_processes(
    sandbox: Sandbox, backend: str, workspace: Path, request: pytest.FixtureRequest
) -> None:
    """The harness's own pid does not exist inside the sandbox."""
    gap(request, backend, "pid")
    result = sh(
        sandbox, workspace, f"test -e /proc/{os.getpid()} && echo visible; ls /proc | grep -c '^[0-9]'"
    )
    assert b"visible" not in result.stdout
    assert int(result.stdout.split()[-1]) < 10


def test_no_background_process_survives_the_run(sandbox: Sandbox, workspace: Path, token: str) -> None:
    """A background process the command leaves behind is gone when run() returns."""
    result = sh(sandbox, workspace, f"{sleeper(token)} & echo started")
    assert result.stdout == b"started\n"
    assert wait_gone(token, within_s=0.5) == []


def test_a_setsid_descendant_does_not_survive_the_run(
    sandbox: Sandbox, backend: str, workspace: Path, token: str, request: pytest.FixtureRequest
) -> None:
    """Even a descendant that left the process group (setsid) is gone when run() returns."""
    gap(request, backend, "setsid")
    result = sh(
        sandbox, workspace, f"setsid {sleeper(token)} > /dev/null 2>&1 < /dev/null & sleep 0.3; echo started"
    )
    assert result.stdout == b"started\n"
    assert wait_gone(token, within_s=0.5) == []


def test_a_timeout_kills_the_whole_tree(sandbox: Sandbox, workspace: Path, token: str) -> None:
    """A command over its time limit is ended with its children, and the result says timeout."""
    started = time.monotonic()
    result = sh(sandbox, workspace, f"{sleeper(token)} & {sleeper(token)}", timeout_s=1.0)
    assert result.timed_out
    assert result.state in (ProcessState.TIMEOUT, ProcessState.FORCED_KILL)
    assert not result.ok
    assert time.monotonic() - started < 20
    assert wait_gone(token) == []


def test_cancellation_ends_the_run(sandbox: Sandbox, workspace: Path, token: str) -> None:
    """Setting the cancel token ends the command and its children; the state is cancelled."""
    cancel = threading.Event()
    timer = threading.Timer(0.5, cancel.set)
    timer.start()
    try:
        result = sandbox.run(
            ["/bin/sh", "-c", f"{sleeper(token)} & wait"], policy=policy(workspace), cancel=cancel
        )
    finally:
        timer.cancel()
    assert result.state is ProcessState.CANCELLED
    assert not result.timed_out
    assert wait_gone(token) == []


_HARNESS = """
import sys
from wfbench.domain.workspace.sandbox import SandboxPolicy
import os
backend, ws = sys.argv[1:3]
script = os.environ["HARNESS_SCRIPT"]
if backend == "bwrap":
    from wfbench.adapters.sandbox.bwrap import BwrapSandbox as S
elif backend == "podman":
    from wfbench.adapters.sandbox.podman import PodmanSandbox
    S = lambda: PodmanSandbox(os.environ["WFBENCH_PODMAN_IMAGE"])
elif backend == "docker":
    from wfbench.adapters.sandbox.podman import DockerSandbox
    S = lambda: DockerSandbox(os.environ["WFBENCH_PODMAN_IMAGE"])
else:
    from wfbench.adapters.sandbox.host import UnsafeHostSandbox as S
env = {"PATH": "/usr/bin:/bin"}
pol = SandboxPolicy(workspace=ws, workspace_writable=True, network=False, timeout_s=120, env=env)
S().run(["/bin/sh", "-c", script], policy=pol)
"""


def test_the_sandbox_dies_with_its_parent(
    backend: str, workspace: Path, token: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the harness is killed outright (SIGKILL), the sandboxed processes die with it."""
    make_sandbox(backend, monkeypatch)  # skip/require like the other tests
    gap(request, backend, "parent")
    with scratch_env() as scratch:  # the killed harness's private root (wfbench-sandbox-*) goes there
        env = {k: v for k, v in scratch.items() if k != "CI"}
        if backend in ("podman", "docker"):
            from tests.support.podman_kit import base_image, docker_image

            env["WFBENCH_PODMAN_IMAGE"] = base_image() if backend == "podman" else docker_image()
        # Not in the harness's argv: only sandboxed pids match.
        env["HARNESS_SCRIPT"] = f"{sleeper(token)} & wait"
        _kill_the_harness(backend, workspace, token, env, monkeypatch)


def _kill_the_harness(
    backend: str, workspace: Path, token: str, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL a harness whose sandboxed command sleeps; nothing of the command may survive it."""
    harness = subprocess.Popen([HARNESS_PYTHON, "-c", _HARNESS, backend, str(workspace)], env=env)
    try:
        deadline = time.monotonic() + 20
        while not sleeping(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sleeping(token), "the sandboxed command never started"
        harness.send_signal(signal.SIGKILL)
        harness.wait(10)
        survivors = wait_gone(token, within_s=5.0)
        if survivors and backend in ("bwrap", "podman", "docker"):
            # Known gap (docs/security.md): under load, about one SIGKILL in ten leaves the
            # namespace's PID 1 running although bwrap's own process died (the kernel's
            # parent-death signal did not reach it). The backstop: every command runs in a pids
            # cgroup owned by its harness, and the next sandbox start kills the groups of dead
            # owners. Without that backstop, this branch fails. Under podman the container belongs
            # to the runtime's monitor (conmon), never to the harness: the next preflight removes
            # the containers of dead owners (``remove_stale_containers``), always.
            make_sandbox(backend, monkeypatch).preflight()
            survivors = wait_gone(token, within_s=5.0)
        assert survivors == []
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait(10)


# --- backend-specific ---------------------------------------------------------------------------


def test_bwrap_preflight_fails_closed_with_a_clear_message(tmp_path: Path) -> None:
    """A bwrap that cannot start namespaces is a SandboxUnavailable naming the preflight, no fallback."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(SandboxUnavailable, match="preflight failed.*uid map.*never falls back"):
        BwrapSandbox(str(fake)).preflight()
    with pytest.raises(SandboxUnavailable, match="not installed"):
        BwrapSandbox(str(tmp_path / "missing-bwrap")).preflight()


def test_host_unsafe_is_refused_when_ci_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """CI must prove the real sandbox: host-unsafe cannot even be constructed there."""
    monkeypatch.setenv("CI", "true")
    with pytest.raises(SandboxUnavailable, match="CI environment variable is set"):
        UnsafeHostSandbox()
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        UnsafeHostSandbox(environ={"CI": "1"})


def test_host_unsafe_warns_what_it_does_not_protect(monkeypatch: pytest.MonkeyPatch) -> None:
    """Construction logs a warning naming host files, the network and the PID namespace."""
    import structlog

    monkeypatch.delenv("CI", raising=False)
    with structlog.testing.capture_logs() as logs:
        UnsafeHostSandbox()
    warning = next(entry for entry in logs if entry["log_level"] == "warning")
    for word in ("host files", "network", "PID namespace"):
        assert word in warning["message"]


def test_host_unsafe_restores_workspace_modes_after_a_read_only_run(
    monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    """The mode-bit lock of a read-only run is lifted afterwards, even when the command failed."""
    monkeypatch.delenv("CI", raising=False)
    (workspace / "sub").mkdir()
    (workspace / "sub" / "x.sh").write_text("echo\n")
    (workspace / "sub" / "x.sh").chmod(0o754)
    before = {p: p.stat().st_mode for p in [workspace, *workspace.rglob("*")]}
    result = sh(UnsafeHostSandbox(), workspace, "touch sub/y; exit 4", workspace_writable=False)
    assert result.returncode == 4
    assert {p: p.stat().st_mode for p in [workspace, *workspace.rglob("*")]} == before
    assert not (workspace / "sub" / "y").exists()


def test_a_symlinked_workspace_is_refused(sandbox: Sandbox, tmp_path: Path, workspace: Path) -> None:
    """The workspace must be a real directory, not a link pointing somewhere else."""
    from wfbench.domain.errors import SandboxError

    link = tmp_path / "link"
    link.symlink_to(workspace)
    with pytest.raises(SandboxError, match="real directory"):
        sandbox.run(["/bin/true"], policy=policy(link))


def test_each_backend_reports_its_name(backend: str) -> None:
    """Rows record the backend by this name (bwrap, podman or host-unsafe)."""
    from wfbench.adapters.sandbox.podman import DockerSandbox, PodmanSandbox

    backends = {"bwrap": BwrapSandbox, "podman": PodmanSandbox, "docker": DockerSandbox}
    assert {**backends, "host-unsafe": UnsafeHostSandbox}[backend].name == backend


def test_a_writable_mount_outside_the_workspace_takes_writes(
    sandbox: Sandbox, workspace: Path, tmp_path: Path
) -> None:
    """The review artifact directory is writable at its own target while the workspace is read-only."""
    out = tmp_path / "review-output"
    out.mkdir()
    pol = policy(
        workspace, workspace_writable=False, mounts=(Mount(str(out), "/review-output", writable=True),)
    )
    where = sandbox.mount_path("/review-output", pol)
    result = sandbox.run(
        ["/bin/sh", "-c", f"echo '{{}}' > {where}/review-output.json; echo x > in-ws"], policy=pol
    )
    assert (out / "review-output.json").read_text() == "{}\n"
    assert not (workspace / "in-ws").exists()
    assert result.returncode != 0


def test_the_command_starts_in_the_policys_working_directory(sandbox: Sandbox, workspace: Path) -> None:
    """A relative cwd is resolved inside the workspace."""
    (workspace / "pkg").mkdir()
    pol = policy(workspace, cwd="pkg")
    result = sandbox.run(["/bin/pwd"], policy=pol)
    assert result.stdout.decode().strip() == f"{sandbox.workspace_path(pol)}/pkg"
