"""The podman command line of one sandboxed command: every protection is a flag, and nothing secret in it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wfbench.adapters.sandbox.command_limits import ResourceLimits
from wfbench.adapters.sandbox.podman_argv import ArgvInputs, in_workdir, podman_argv, root_shim
from wfbench.domain.environment.image import ContainerImage
from wfbench.domain.errors import SandboxError
from wfbench.domain.workspace.sandbox import Mount, SandboxPolicy


def _argv(tmp_path: Path, *, docker: bool = False, **policy: object) -> list[str]:
    values: dict[str, object] = {
        "workspace": str(tmp_path),
        "workspace_writable": False,
        "network": False,
        "timeout_s": 10.0,
        "env": {"PATH": "/usr/bin", "SECRET": "s3cr3t-value"},
    }
    values.update(policy)
    inputs = ArgvInputs(
        podman=("podman", "--runtime", "runc"),
        name="wfbench-1-n2-abc",
        owner="1:2",
        image=ContainerImage("sha256:feed", workdir="/testbed"),
        limits=ResourceLimits(),
        env_names=("PATH", "SECRET", "TMPDIR"),
        docker=docker,
        unset_env=("LANG",) if docker else (),
    )
    argv, _ = podman_argv(["/bin/sh", "-c", "true"], policy=SandboxPolicy(**values), inputs=inputs)  # type: ignore[arg-type]
    return argv


def test_every_command_runs_without_network_capabilities_or_a_writable_root(tmp_path: Path) -> None:
    argv = " ".join(_argv(tmp_path))
    for flag in ("--network none", "--read-only", "--cap-drop ALL", "no-new-privileges", "--pids-limit 512"):
        assert flag in argv
    assert "--user 1000:1000" in argv
    assert "--uidmap 1000:0:1" in argv


def test_the_host_network_is_kept_only_when_the_policy_says_so(tmp_path: Path) -> None:
    assert "--network host" in " ".join(_argv(tmp_path, network=True))


def test_environment_values_never_reach_the_command_line(tmp_path: Path) -> None:
    argv = _argv(tmp_path)
    assert "s3cr3t-value" not in " ".join(argv)
    assert argv[argv.index("SECRET") - 1] == "--env"


def test_the_commands_tmpdir_goes_by_value_so_podman_keeps_the_hosts_for_itself(tmp_path: Path) -> None:
    """A TMPDIR such as /tmp/wfbench-tmp exists only in the container: podman must not inherit it."""
    argv = _argv(tmp_path)
    assert "TMPDIR" not in argv
    passed = [
        argv[i + 1] for i, arg in enumerate(argv) if arg == "--env" and argv[i + 1].startswith("TMPDIR=")
    ]
    assert passed == ["TMPDIR=/tmp"]


def test_the_workspace_is_mounted_read_only_at_the_images_workdir(tmp_path: Path) -> None:
    argv = _argv(tmp_path)
    assert f"type=bind,source={tmp_path},destination=/testbed,ro=true" in argv
    writable = _argv(tmp_path, workspace_writable=True)
    assert f"type=bind,source={tmp_path},destination=/testbed" in writable


def test_a_mount_under_slash_workspace_moves_with_the_workdir(tmp_path: Path) -> None:
    argv = _argv(tmp_path, mounts=(Mount(str(tmp_path), "/workspace/sub"),))
    assert f"type=bind,source={tmp_path},destination=/testbed/sub,ro=true" in argv
    assert in_workdir("/workspace", "/src") == "/src"
    assert in_workdir("/workspaces", "/src") == "/workspaces"


def test_a_mount_path_with_a_comma_is_refused(tmp_path: Path) -> None:
    odd = tmp_path / "a,b"
    odd.mkdir()
    with pytest.raises(SandboxError, match="cannot hold"):
        _argv(odd)


def test_the_image_entrypoint_never_runs_and_hostname_is_dropped(tmp_path: Path) -> None:
    argv = _argv(tmp_path)
    tail = argv[argv.index("--entrypoint") :]
    assert tail[:6] == ["--entrypoint", "/usr/bin/env", "sha256:feed", "-u", "HOSTNAME", "/bin/sh"]


def test_the_root_shim_holds_only_the_mount_points_of_runtimes_under_root(tmp_path: Path) -> None:
    shim = root_shim(str(tmp_path), ["/root/.pyenv/versions/3.11.7", "/usr/lib/x"])
    assert sorted(p.name for p in Path(shim).iterdir()) == [".pyenv"]
    assert (Path(shim) / ".pyenv/versions/3.11.7").is_dir()
    assert root_shim(str(tmp_path / "none"), ["/opt/py"]) == ""


def test_docker_runs_the_command_as_the_harness_uid_without_podmans_flags(tmp_path: Path) -> None:
    """docker has no per-container user namespace, --unsetenv-all or notmpcopyup (oci_cli.py)."""
    argv = " ".join(_argv(tmp_path, docker=True))
    for flag in ("--network none", "--read-only", "--cap-drop ALL", "no-new-privileges", "--pids-limit 512"):
        assert flag in argv
    assert f"--user {os.getuid()}:{os.getgid()}" in argv
    for podman_only in ("--uidmap", "--unsetenv-all", "notmpcopyup", "--read-only-tmpfs", ",U"):
        assert podman_only not in argv


def test_docker_removes_the_images_own_variables_in_the_entrypoint(tmp_path: Path) -> None:
    argv = _argv(tmp_path, docker=True)
    after_image = argv[argv.index("sha256:feed") + 1 :]
    assert after_image[:4] == ["-u", "HOSTNAME", "-u", "LANG"]
