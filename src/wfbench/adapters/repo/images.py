"""Task images: a named image, or a Containerfile built locally, plus the task's install on top; cached.

How an image environment (:class:`wfbench.domain.environment.spec.ImageSource`) becomes the image every
command of a task's cells runs in (docs/containers.md):

1. **The base.** ``image: NAME`` is used as it is (``podman pull`` when it is not in the local
   store). ``containerfile: PATH`` + ``context: DIR`` is built with ``podman build``, tagged
   ``localhost/wfbench-build:<input digest>``: the digest covers the Containerfile's bytes, every file
   of the context (path, mode, bytes; links by target) and the build arguments, so an unchanged input
   is never rebuilt and a changed one always is.
2. **The task's install on top** (only when the spec has ``install``): a generated Containerfile
   ``FROM <base id>`` that copies the task's snapshot (or only its ``key_files``) to the workdir and
   ``RUN``s the install commands under ``set -eu``, tagged ``localhost/wfbench-env:<digest>`` where the
   digest is :func:`environment_digest` over the spec, the base image's id, the snapshot key and the
   task's variables. Cells mount their own copy of the snapshot over the workdir, so an editable
   install points at the agent's code.
3. **The identity.** The environment's digest is the final image's id (podman's content digest of
   its configuration, which names every layer): what ``environment_digest`` on each row says.

A lock per digest makes concurrent sweeps build once; the last build's output is in
``<cache>/<digest>.log``. Builds reach the network as ``podman build`` does (package registries);
cells never do.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence

import attrs

from wfbench.adapters.repo.workspace import private_copy
from wfbench.domain.environment.image import ContainerImage, image_path
from wfbench.domain.environment.spec import (
    BuiltEnvironment,
    EnvironmentSpec,
    ImageSource,
    environment_digest,
    snapshot_key,
)
from wfbench.domain.errors import SandboxError
from wfbench.domain.ports import CancelToken
from wfbench.domain.workspace.rules import Snapshot

__all__ = ["ContainerImages", "context_digest", "image_input_digest"]

BUILD_TAG = "localhost/wfbench-build"
ENV_TAG = "localhost/wfbench-env"
LOG_TAIL = 1500
INSPECT_TIMEOUT_S = 120.0


def context_digest(directory: str) -> str:
    """sha256 over every entry of ``directory`` (relative path, kind, mode, bytes or link target), sorted."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(directory, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, directory)
            info = os.lstat(path)
            if os.path.islink(path):
                digest.update(f"L\0{rel}\0{os.readlink(path)}\0".encode())
                continue
            digest.update(f"F\0{rel}\0{info.st_mode & 0o7777:o}\0{info.st_size}\0".encode())
            with open(path, "rb") as handle:
                for piece in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(piece)
    return digest.hexdigest()


def image_input_digest(source: ImageSource) -> str:
    """The identity of a Containerfile build: its bytes, its context's content and its build arguments."""
    assert source.containerfile is not None
    assert source.context is not None
    with open(source.containerfile, "rb") as handle:
        containerfile = hashlib.sha256(handle.read()).hexdigest()
    material = {
        "containerfile": containerfile,
        "context": context_digest(source.context),
        "build_args": [list(pair) for pair in source.build_args],
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


@attrs.frozen
class ImageFacts:
    """What a built image says about itself: its id (content digest) and the ``PATH`` it declares."""

    id: str
    path: str = ""


class ContainerImages:
    """Builds and caches task images with ``podman`` (``command``: ``podman [--runtime R]``, or ``docker``).

    ``cache_dir`` holds the build logs and locks (the images live in the CLI's store).
    ``build_flags`` go to every ``build`` (docker's daemon here has no bridge: ``--network host`` lets a
    build reach the package registries, as podman's own build network does).
    """

    def __init__(self, command: Sequence[str], *, cache_dir: str, build_flags: Sequence[str] = ()) -> None:
        self._podman = tuple(command)
        self._cache = os.path.abspath(cache_dir)
        self._build_flags = tuple(build_flags)
        self._cli_name = os.path.basename(self._podman[0]) if self._podman else "podman"

    def ensure(
        self,
        spec: EnvironmentSpec,
        *,
        snapshot: Snapshot,
        task_env: Mapping[str, str],
        cancel: CancelToken | None = None,  # noqa: ARG002 - builds run to their timeout
    ) -> BuiltEnvironment:
        """The task's image (built or taken from the cache) as a built environment.

        Raises:
            SandboxError: the image cannot be pulled or built (the log's tail and its path).
        """
        source = spec.image
        if source is None:
            raise SandboxError("not an image environment")
        os.makedirs(self._cache, mode=0o700, exist_ok=True)
        base, built_s, cached = self._base(source, spec.timeout_s)
        if spec.install:
            key = _snapshot_key(spec, snapshot)
            digest = environment_digest(spec, base=base.id, key=key, task_env=task_env, location="podman")
            facts, seconds, hit = self._on_top(spec, snapshot, task_env, base, digest)
            built_s, cached, base = built_s + seconds, cached and hit, facts
        image = ContainerImage(ref=base.id, workdir=source.workdir, path=image_path(base.path, source.path))
        return BuiltEnvironment(
            digest=base.id.removeprefix("sha256:"),
            host_path="",
            mount="",
            python=False,
            build_s=round(built_s, 3),
            cached=cached,
            image=image,
        )

    def _base(self, source: ImageSource, timeout_s: float) -> tuple[ImageFacts, float, bool]:
        if source.image is not None:
            found = self.inspect(source.image)
            if found is not None:
                return found, 0.0, True
            self._podman_checked(["pull", source.image], timeout_s, log=None)
            pulled = self.inspect(source.image)
            if pulled is None:
                raise SandboxError(f"image {source.image} is not in the local store after a pull")
            return pulled, 0.0, False
        assert source.containerfile is not None
        assert source.context is not None
        tag = f"{BUILD_TAG}:{image_input_digest(source)[:32]}"
        args = ["build", *self._build_flags, "--quiet", "--tag", tag, "--file", source.containerfile]
        for name, value in source.build_args:
            args += ["--build-arg", f"{name}={value}"]
        return self._built(tag, [*args, source.context], timeout_s)

    def _on_top(
        self,
        spec: EnvironmentSpec,
        snapshot: Snapshot,
        task_env: Mapping[str, str],
        base: ImageFacts,
        digest: str,
    ) -> tuple[ImageFacts, float, bool]:
        assert spec.image is not None
        tag = f"{ENV_TAG}:{digest[:32]}"
        with tempfile.TemporaryDirectory(prefix="image-", dir=self._cache) as scratch:
            context = os.path.join(scratch, "context")
            if spec.key_files is None:
                private_copy(snapshot, context)
            else:
                _copy_key_files(snapshot.path, spec.key_files, context)
            containerfile = os.path.join(scratch, "Containerfile")
            with open(containerfile, "w", encoding="utf-8") as handle:
                handle.write(install_containerfile(base.id, spec.image.workdir, spec.install, task_env))
            return self._built(
                tag,
                ["build", *self._build_flags, "--quiet", "--tag", tag, "--file", containerfile, context],
                spec.timeout_s,
            )

    def _built(self, tag: str, args: list[str], timeout_s: float) -> tuple[ImageFacts, float, bool]:
        """``tag``'s facts when it exists; else build it with ``args`` (once, under a lock)."""
        found = self.inspect(tag)
        if found is not None:
            return found, 0.0, True
        name = tag.rsplit(":", 1)[-1]
        with _locked(os.path.join(self._cache, f"{name}.lock")):
            found = self.inspect(tag)
            if found is not None:
                return found, 0.0, True
            seconds = self._podman_checked(args, timeout_s, log=os.path.join(self._cache, f"{name}.log"))
        built = self.inspect(tag)
        if built is None:
            raise SandboxError(f"{self._cli_name} built {tag} but it is not in the local store")
        return built, seconds, False

    def inspect(self, ref: str) -> ImageFacts | None:
        """The id and declared ``PATH`` of ``ref`` in the local store, or None when it is not there."""
        done = subprocess.run(
            [*self._podman, "image", "inspect", "--format", "{{.Id}} {{json .Config.Env}}", ref],
            capture_output=True,
            text=True,
            timeout=INSPECT_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0 or not done.stdout.strip():
            return None
        image_id, _, env_json = done.stdout.strip().partition(" ")
        try:
            env = json.loads(env_json) or []
        except ValueError:
            env = []
        path = next((item[5:] for item in env if isinstance(item, str) and item.startswith("PATH=")), "")
        return ImageFacts(id=f"sha256:{image_id.removeprefix('sha256:')}", path=path)

    def _podman_checked(self, args: list[str], timeout_s: float, *, log: str | None) -> float:
        import time

        started = time.monotonic()
        try:
            done = subprocess.run([*self._podman, *args], capture_output=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired as exc:
            raise SandboxError(f"{self._cli_name} {args[0]} timed out after {timeout_s:.0f} s") from exc
        text = (done.stdout + b"\n" + done.stderr).decode("utf-8", "replace")
        if log is not None:
            with open(log, "w", encoding="utf-8") as handle:
                handle.write(text)
        if done.returncode != 0:
            where = f"; log {log}" if log else ""
            raise SandboxError(
                f"{self._cli_name} {args[0]} failed (exit {done.returncode}{where}):"
                f" {text.strip()[-LOG_TAIL:]}"
            )
        return time.monotonic() - started


def install_containerfile(
    base: str, workdir: str, install: Sequence[str], task_env: Mapping[str, str]
) -> str:
    """``FROM base``, the task's variables, the snapshot at ``workdir``, the install (``set -eu``)."""
    lines = [f"FROM {base}"]
    for name, value in sorted(task_env.items()):
        lines.append(f"ENV {name}={json.dumps(value)}")
    lines += [f"WORKDIR {workdir}", f"COPY . {workdir}"]
    script = "set -eu\n" + "\n".join(install) + "\n"
    lines.append(f"RUN {json.dumps(['/bin/sh', '-c', script])}")  # exec form: JSON keeps the newlines
    return "\n".join(lines) + "\n"


def _snapshot_key(spec: EnvironmentSpec, snapshot: Snapshot) -> Mapping[str, str] | str:
    files: dict[str, str] = {}
    for path in spec.key_files or ():
        try:
            with open(os.path.join(snapshot.path, path), "rb") as handle:
                files[path] = hashlib.sha256(handle.read()).hexdigest()
        except FileNotFoundError:
            files[path] = "missing"
    return snapshot_key(spec, snapshot.repo, snapshot.tree, files)


def _copy_key_files(root: str, paths: Sequence[str], target: str) -> None:
    os.makedirs(target)
    for path in paths:
        source = os.path.join(root, path)
        if os.path.isfile(source) and not os.path.islink(source):
            os.makedirs(os.path.dirname(os.path.join(target, path)), exist_ok=True)
            with open(source, "rb") as src, open(os.path.join(target, path), "wb") as dst:
                dst.write(src.read())


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
