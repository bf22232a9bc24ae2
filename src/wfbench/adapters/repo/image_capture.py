"""The ``ImageWorkdirs`` adapter: ``podman build``, then the image's working directory as one git commit.

The image is built (runc, bounded ulimits: ``../shared/research/containers.md``), tagged
``localhost/wfbench-harbor-<task>:<digest>`` so a re-import reuses it, created (never started) and
its working directory copied out with ``podman cp``. The copy becomes a git repository with one
parentless commit (fixed author and date, so the same image gives the same commit). What git
cannot hold is left out and said: nested ``.git`` directories (their history is exactly what a
parentless snapshot hides), and special files.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Sequence

from wfbench.domain.environment.capture import CapturedWorkdir, CaptureRequest
from wfbench.domain.errors import InputError, SandboxUnavailable

__all__ = ["PodmanWorkdirs"]

_GIT_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_NAME": "wfbench",
    "GIT_AUTHOR_EMAIL": "wfbench@localhost",
    "GIT_COMMITTER_NAME": "wfbench",
    "GIT_COMMITTER_EMAIL": "wfbench@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+00:00",
}
_ULIMITS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096")


class PodmanWorkdirs:
    """Podman (``--runtime runc`` by default) as the image builder of the Harbor import."""

    def __init__(self, podman: str = "podman", runtime: str = "runc") -> None:
        self._podman = [podman, "--runtime", runtime]

    def _run(self, args: Sequence[str], *, timeout: float, what: str) -> str:
        try:
            done = subprocess.run(
                [*self._podman, *args], capture_output=True, text=True, timeout=timeout, check=False
            )
        except FileNotFoundError:
            raise SandboxUnavailable(
                "podman is not installed (the Harbor import builds task images)"
            ) from None
        except subprocess.TimeoutExpired:
            raise InputError(f"{what} timed out after {timeout:g} s") from None
        if done.returncode != 0:
            raise InputError(f"{what} failed: {(done.stderr or done.stdout).strip()[-800:]}")
        return done.stdout.strip()

    def _image(self, request: CaptureRequest) -> str:
        if request.image is not None:
            return request.image
        assert request.containerfile is not None
        assert request.context is not None
        digest = _tree_digest(request.context, request.containerfile)
        tag = f"localhost/wfbench-harbor-{request.task.lower()}:{digest[:16]}"
        exists = subprocess.run([*self._podman, "image", "exists", tag], capture_output=True, check=False)
        if exists.returncode != 0:
            args = ["build", *_ULIMITS, "-q", "-t", tag, "-f", request.containerfile, request.context]
            self._run(args, timeout=request.timeout_s, what=f"building {request.containerfile}")
        return tag

    def capture(self, request: CaptureRequest, dest: str) -> CapturedWorkdir:
        """Build (or reuse) the image and commit its working directory as a repository at ``dest``."""
        image = self._image(request)
        image_id = self._run(["image", "inspect", "--format", "{{.Id}}", image], timeout=60, what="inspect")
        workdir = request.workdir or self._run(
            ["image", "inspect", "--format", "{{.Config.WorkingDir}}", image], timeout=60, what="inspect"
        )
        if not workdir or workdir == "/":
            raise InputError(f"the image {image} has no working directory (WORKDIR) other than /")
        container = self._run(["create", *_ULIMITS, image, "true"], timeout=120, what="podman create")
        with tempfile.TemporaryDirectory(prefix="wfbench-capture-") as scratch:
            copy = os.path.join(scratch, "workdir")
            try:
                self._run(["cp", f"{container}:{workdir}/.", copy], timeout=600, what=f"copying {workdir}")
            finally:
                subprocess.run([*self._podman, "rm", "-f", container], capture_output=True, check=False)
            left_out = _prune(copy)
            commit, files = _commit(copy, dest, request.task)
        return CapturedWorkdir(dest, workdir, commit, image_id, files, left_out)


def _tree_digest(context: str, containerfile: str) -> str:
    """sha256 over the Containerfile and every file of the build context (paths and bytes)."""
    digest = hashlib.sha256()
    with open(containerfile, "rb") as handle:
        digest.update(handle.read())
    for root, dirs, files in os.walk(context):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            digest.update(os.path.relpath(path, context).encode() + b"\0")
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as handle:
                    digest.update(handle.read())
    return digest.hexdigest()


def _prune(copy: str) -> tuple[str, ...]:
    """Remove what a git tree cannot hold (``.git`` directories, special files); what was removed."""
    removed = []
    for root, dirs, files in os.walk(copy):
        for name in [*dirs, *files]:
            path = os.path.join(root, name)
            mode = os.lstat(path).st_mode
            if name == ".git" or not (stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                removed.append(os.path.relpath(path, copy))
                shutil.rmtree(path) if stat.S_ISDIR(mode) else os.unlink(path)
        dirs[:] = [d for d in dirs if os.path.isdir(os.path.join(root, d))]
    return tuple(sorted(removed))


def _commit(copy: str, dest: str, task: str) -> tuple[str, int]:
    """``dest``: ``copy``'s files as a git work tree with one commit; (commit, file count)."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
    shutil.copytree(copy, dest, symlinks=True)
    git = ["git", "-c", "safe.directory=*", "-c", "core.autocrlf=false", "-C", dest]
    message = f"{task}: the image's working directory"
    for step in (
        ["init", "-q", "-b", "main"],
        ["add", "-A", "-f", "."],
        ["commit", "-q", "--allow-empty", "--no-verify", "-m", message],
    ):
        subprocess.run([*git, *step], env=_GIT_ENV, capture_output=True, check=True)
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], env=_GIT_ENV, capture_output=True, text=True, check=True
    )
    listed = subprocess.run([*git, "ls-files"], env=_GIT_ENV, capture_output=True, text=True, check=True)
    return head.stdout.strip(), len(listed.stdout.splitlines())
