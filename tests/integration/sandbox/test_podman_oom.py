"""An OOM kill under podman is named, and leaves nothing in the harness's working directory.

conmon writes an empty ``oom`` file into podman's working directory when the container is OOM-killed:
the adapter runs podman in the command's private root, so a sweep (or the test suite) never finds one
in its own checkout.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.podman_kit import podman_sandbox
from wfbench.adapters.sandbox.command_limits import ResourceLimits
from wfbench.domain.workspace.sandbox import SandboxPolicy


def test_an_oom_kill_under_podman_leaves_no_file_in_the_harness_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "harness-cwd"
    cwd.mkdir()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    monkeypatch.chdir(cwd)
    sandbox = podman_sandbox(limits=ResourceLimits(memory_bytes=128 * 1024**2))
    policy = SandboxPolicy(
        workspace=str(workspace),
        workspace_writable=True,
        network=False,
        timeout_s=120.0,
        env={"PATH": "/usr/bin:/bin"},
    )

    big = sandbox.run(["/usr/bin/python3", "-c", "b = bytearray(1024**3)"], policy=policy)

    assert big.returncode == 137, big.detail
    assert list(cwd.iterdir()) == []
