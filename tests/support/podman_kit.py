"""The container backends in tests: the local base image (built once, cached) and a preflighted sandbox.

podman and docker alike (one adapter); docker needs its daemon running (``scripts/docker-daemon``,
started by ``scripts/install-tools --docker``): without it docker tests skip with a reason, and fail
instead under ``WFBENCH_REQUIRE_DOCKER=1``.

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
REQUIRE_DOCKER = "WFBENCH_REQUIRE_DOCKER"
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


@functools.cache
def _docker_image() -> tuple[str | None, str]:
    """(image name, "") or (None, why not): the base image in the docker daemon's store, at most once."""
    if shutil.which("docker") is None:
        return None, "docker is not installed (scripts/install-tools --docker)"
    probe = subprocess.run(
        ["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        return (
            None,
            f"the docker daemon does not answer (scripts/docker-daemon): {probe.stderr.strip()[-300:]}",
        )
    try:
        done = subprocess.run(
            ["bash", str(SCRIPT), "--docker"], capture_output=True, text=True, timeout=900, check=False
        )
    except subprocess.TimeoutExpired:
        return None, "scripts/base-image --docker timed out"
    if done.returncode != 0:
        return None, f"scripts/base-image --docker failed: {done.stderr.strip()[-400:]}"
    return done.stdout.strip().splitlines()[-1], ""


def docker_image() -> str:
    """The base image's name in docker's store, or skip (fail under ``WFBENCH_REQUIRE_DOCKER=1``)."""
    name, why = _docker_image()
    if name is None:
        require_or_skip(REQUIRE_DOCKER, why)
    assert name is not None
    return name


def docker_sandbox(**kwargs: object):  # noqa: ANN201 - DockerSandbox, imported lazily
    """A preflighted :class:`DockerSandbox` over the base image, or skip/fail like :func:`docker_image`."""
    from wfbench.adapters.sandbox.podman import DockerSandbox
    from wfbench.domain.errors import SandboxUnavailable

    sandbox = DockerSandbox(docker_image(), **kwargs)  # type: ignore[arg-type]
    try:
        sandbox.preflight()
    except SandboxUnavailable as exc:
        require_or_skip(REQUIRE_DOCKER, f"docker cannot run here: {exc}")
    return sandbox
