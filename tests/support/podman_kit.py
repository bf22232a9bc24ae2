"""The podman backend in tests: the local base image (built once, cached) and a preflighted sandbox.

The base image comes from ``scripts/base-image`` (mmdebstrap + ``podman import``; the tar is cached
under ``$WFBENCH_CACHE/images``, so only the first run on a machine pays the ~3 min build). Tests
skip with a reason when podman or the image is unavailable, and fail instead under
``WFBENCH_REQUIRE_PODMAN=1`` (CI).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from tests.conftest import require_or_skip

REQUIRE = "WFBENCH_REQUIRE_PODMAN"
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "base-image"


@functools.cache
def _base_image() -> tuple[str | None, str]:
    """(image name, "") or (None, why not): runs the project script at most once per session."""
    if shutil.which("podman") is None:
        return None, "podman is not installed (scripts/install-tools --podman)"
    try:
        done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=900, check=False)
    except subprocess.TimeoutExpired:
        return None, "scripts/base-image timed out"
    if done.returncode != 0:
        return None, f"scripts/base-image failed: {done.stderr.strip()[-400:]}"
    return done.stdout.strip().splitlines()[-1], ""


def base_image() -> str:
    """The base image's name, or skip (fail under ``WFBENCH_REQUIRE_PODMAN=1``)."""
    name, why = _base_image()
    if name is None:
        require_or_skip(REQUIRE, why)
    assert name is not None
    return name


def podman_sandbox(**kwargs: object):  # noqa: ANN201 - PodmanSandbox, imported lazily
    """A preflighted :class:`PodmanSandbox` over the base image, or skip/fail like :func:`base_image`."""
    from wfbench.adapters.sandbox.podman import PodmanSandbox
    from wfbench.domain.errors import SandboxUnavailable

    sandbox = PodmanSandbox(base_image(), **kwargs)  # type: ignore[arg-type]
    try:
        sandbox.preflight()
    except SandboxUnavailable as exc:
        require_or_skip(REQUIRE, f"podman cannot run here: {exc}")
    return sandbox


def podman_env() -> dict[str, str]:
    """The environment a subprocess ``wfbench --sandbox podman`` needs to find the base image."""
    return {**os.environ, "WFBENCH_PODMAN_IMAGE": base_image()}
