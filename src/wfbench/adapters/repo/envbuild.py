"""The Environments adapter: build a task's environment once per digest, inside the sandbox, and cache it.

Layout under the cache directory (``$WFBENCH_CACHE/envs``, default ``~/.cache/wfbench/envs``)::

    <digest>/                    the environment (mounted read-only at /env in every cell)
    <digest>/.wfbench-env.json   written last: an entry without it is incomplete and rebuilt
    <digest>.lock                held while building (concurrent sweeps wait, then reuse)
    <digest>.log                 the last build's output
    caches/<digest>/pip, uv/     that digest's package caches (never shared with another build)

A build runs in the sandbox over a private, writable copy of the task's snapshot (``/workspace``)
with the environment directory mounted writable at the place cells see it (``/env`` under bwrap;
its own host path under ``host-unsafe``, which has no mounts), under ``set -eu``:
``<python> -m venv [--without-pip] /env`` for a Python environment (never with system
site-packages), then the spec's install commands. Only a build reaches the package registries
(:func:`proxied_registries`: its own network namespace and a bridge to an allow-listing CONNECT
proxy); cells never do.

Why a standard ``venv`` plus the task's own commands (pip by default): it needs nothing but the
interpreter, its layout is what every Python tool expects, and the install commands are the
project's own (``pip install -e .[test]``, ``pip install -r requirements.txt``, ``uv pip sync``);
the digest, not the tool, provides the caching.

No writable state is shared between builds of different inputs (issue 26): a build's package
caches are its digest's own (``caches/<digest>/``), because pip and uv trust their caches and a
repository's build script (what ``pip install -e .`` runs) can write there; a poisoned cache
would reach every later build of another corpus. When ``key_files`` key a build (so that commits
of one repository share it) the repository's own path is in the digest too, so two
repositories with the same lockfiles never share an environment one of them built.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping

import attrs

from wfbench.adapters.repo.workspace import private_copy
from wfbench.adapters.sandbox.common import force_remove
from wfbench.domain.environment.spec import (
    ENV_MOUNT,
    BuiltEnvironment,
    EnvironmentSpec,
    environment_digest,
    snapshot_key,
)
from wfbench.domain.errors import InputError, SandboxError
from wfbench.domain.ports import CancelToken, Environments, Sandbox
from wfbench.domain.workspace.rules import Snapshot
from wfbench.domain.workspace.sandbox import Bridge, Mount, SandboxPolicy

MARKER = ".wfbench-env.json"
CACHE_MOUNT = "/wfbench-cache"
#: The system CA bundle: pip and uv otherwise trust only their own bundled roots.
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
#: Where a container backend's build sees the host's CA bundle (the image's may lack this machine's
#: roots, e.g. a TLS-inspecting proxy's): the registry access is the host's, so is its trust.
HOST_CA_TARGET = "/opt/wfbench/host-ca-certificates.crt"
SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib64")
LOG_TAIL = 1500
#: The container backends (one adapter, two CLIs): their venv builds run over the default image.
CONTAINERS = ("podman", "docker")
#: Where a build sees the uv binary (read-only), when uv is the installer.
UV_MOUNT = "/opt/wfbench/uv"
#: Install commands that need pip itself (a module of the environment), not a ``pip`` command.
_REAL_PIP_MARKERS = ("-m pip", "ensurepip", "pip.main")


def default_uv(environ: Mapping[str, str]) -> str | None:
    """The uv binary builds use: ``$WFBENCH_UV_BIN`` (``off``: none, pip only), else the one
    ``scripts/install-tools`` pins (``$WFBENCH_CACHE/uv/bin/uv``), else ``uv`` on PATH; None without one."""
    chosen = environ.get("WFBENCH_UV_BIN")
    if chosen == "off":
        return None
    root = os.path.dirname(default_cache_dir(environ))
    for candidate in (chosen, os.path.join(root, "uv", "bin", "uv"), shutil.which("uv")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.realpath(candidate)
    return None


def default_cache_dir(environ: Mapping[str, str]) -> str:
    """``$WFBENCH_CACHE/envs``, else ``$XDG_CACHE_HOME/wfbench/envs``, else ``~/.cache/wfbench/envs``."""
    root = environ.get("WFBENCH_CACHE") or os.path.join(
        environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "wfbench"
    )
    return os.path.join(os.path.abspath(root), "envs")


@attrs.frozen
class RegistryAccess:
    """How a build reaches the package registries: the host network, or bridges plus proxy variables."""

    host_network: bool = True
    bridges: tuple[Bridge, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict)


@contextlib.contextmanager
def proxied_registries() -> Iterator[RegistryAccess]:
    """The default: the build has its own network namespace, and a bridge to an allow-listing CONNECT
    proxy on the host (:mod:`wfbench.adapters.gateway.registry_proxy`) named in ``HTTPS_PROXY``."""
    from wfbench.adapters.gateway.registry_proxy import RegistryProxy
    from wfbench.adapters.sandbox.net_bridge import TcpBridge

    with RegistryProxy() as proxy, TcpBridge(proxy.address) as tunnel:
        url = tunnel.bridge.url
        names = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")
        yield RegistryAccess(host_network=False, bridges=(tunnel.bridge,), env=dict.fromkeys(names, url))


@contextlib.contextmanager
def host_network() -> Iterator[RegistryAccess]:
    """The host's network as it is (``network: host``-style; for machines without the bridge)."""
    yield RegistryAccess()


@attrs.frozen
class BaseInterpreter:
    """A resolved base interpreter: its executable, its install prefix and its identity."""

    executable: str
    prefix: str
    identity: str


def resolve_base(python: str) -> BaseInterpreter:
    """The interpreter a spec's ``python`` names (``harness``, ``3.X`` or a path).

    Raises:
        InputError: it cannot be found or does not run.
    """
    if python == "harness":
        executable = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
        return BaseInterpreter(executable, os.path.realpath(sys.base_prefix), f"{executable} {sys.version}")
    found = shutil.which(f"python{python}") if not os.path.isabs(python) else python
    if not found:
        raise InputError(f"python{python} is not installed", field="environment.python")
    executable = os.path.realpath(found)
    probe = subprocess.run(
        [executable, "-I", "-c", "import sys; print(sys.base_prefix); print(sys.version)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )
    lines = probe.stdout.splitlines()
    if probe.returncode != 0 or len(lines) < 2:
        raise InputError(
            f"{executable} does not run: {probe.stderr.strip()[-200:]}", field="environment.python"
        )
    return BaseInterpreter(executable, os.path.realpath(lines[0]), f"{executable} {' '.join(lines[1:])}")


class CachedEnvironments:
    """Builds environments through ``sandbox`` into ``cache_dir``; a digest already built is reused."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        cache_dir: str,
        registry: Callable[[], contextlib.AbstractContextManager[RegistryAccess]] = proxied_registries,
        command_env: Mapping[str, str] | None = None,
        images: Environments | None = None,
        uv: str | None = None,
    ) -> None:
        self._sandbox = sandbox
        self._images = images  # image environments (a container backend only; docs/containers.md)
        self._cache = os.path.abspath(cache_dir)
        self._registry = registry
        self._command_env = dict(command_env or {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"})
        self._uv = uv
        self._uv_version: str | None = None

    def installer(self, spec: EnvironmentSpec) -> str | None:
        """``uv <version>`` when uv makes this spec's environment and runs its ``pip`` commands; None
        for the interpreter's ``venv`` and pip: no uv, a shell-only environment, nothing to install
        (``venv --without-pip`` starts faster than uv's interpreter query in a fresh cache), or an
        install command that needs pip's own module (``python -m pip``, ``ensurepip``)."""
        if self._uv is None or spec.python is None or not spec.install:
            return None  # nothing to install: the interpreter's own venv is the cheaper start
        if any(marker in command for command in spec.install for marker in _REAL_PIP_MARKERS):
            return None
        if self._uv_version is None:
            probe = subprocess.run(
                [self._uv, "--version"], capture_output=True, text=True, timeout=60, check=False, env={}
            )
            words = probe.stdout.split()
            self._uv_version = f"uv {words[1]}" if probe.returncode == 0 and len(words) >= 2 else ""
        return self._uv_version or None

    @property
    def cache_dir(self) -> str:
        """Where environments are kept."""
        return self._cache

    def location(self) -> str:
        """Where commands see an environment: ``/env`` under bwrap, ``/env`` over the default image
        under podman (the image's userland is part of the identity), the host path otherwise."""
        if self._sandbox.name in CONTAINERS:
            return f"{self._sandbox.name}:{getattr(self._sandbox, 'default_image', '')}:{ENV_MOUNT}"
        return ENV_MOUNT if self._sandbox.name == "bwrap" else f"host:{self._cache}"

    def digest(self, spec: EnvironmentSpec, *, snapshot: Snapshot, task_env: Mapping[str, str]) -> str:
        """The digest ``ensure`` would build under (resolving the interpreter).

        Raises:
            InputError: the interpreter cannot be used.
            SandboxError: an image environment cannot be built (its digest is the image's id).
        """
        if spec.image is not None:
            return self.ensure(spec, snapshot=snapshot, task_env=task_env).digest
        base = None if spec.python is None else resolve_base(spec.python)
        return self._digest(spec, snapshot, task_env, base)

    def _digest(
        self, spec: EnvironmentSpec, snapshot: Snapshot, env: Mapping[str, str], base: BaseInterpreter | None
    ) -> str:
        files = {path: _file_digest(os.path.join(snapshot.path, path)) for path in spec.key_files or ()}
        key = snapshot_key(
            spec, snapshot.repo, snapshot.tree, files
        )  # the repository as named: same on nodes
        return environment_digest(
            spec,
            base=None if base is None else base.identity,
            key=key,
            task_env=env,
            location=self.location(),
            installer=self.installer(spec),
        )

    def ensure(
        self,
        spec: EnvironmentSpec,
        *,
        snapshot: Snapshot,
        task_env: Mapping[str, str],
        cancel: CancelToken | None = None,
    ) -> BuiltEnvironment:
        """The built environment (from the cache when present).

        Raises:
            InputError: the interpreter cannot be used.
            SandboxError: the build failed (the message holds the log's tail and its path), or the
                environment is an image and the sandbox is not a container backend.
        """
        if spec.image is not None:
            if self._images is None:
                raise SandboxError(
                    "this task's environment is a container image: run it with --sandbox podman (or docker)"
                    " (docs/containers.md)"
                )
            return self._images.ensure(spec, snapshot=snapshot, task_env=task_env, cancel=cancel)
        base = None if spec.python is None else resolve_base(spec.python)
        digest = self._digest(spec, snapshot, task_env, base)
        os.makedirs(self._cache, mode=0o700, exist_ok=True)
        final = os.path.join(self._cache, digest)
        if _complete(final, digest):
            return self._built(digest, final, base, cached=True)
        with _locked(final + ".lock"):
            if _complete(final, digest):
                return self._built(digest, final, base, cached=True)
            started = time.monotonic()
            self._build(spec, snapshot, task_env, base, final, cancel)
            seconds = round(time.monotonic() - started, 3)
            _write_marker(
                final,
                {
                    "digest": digest,
                    "spec": spec.manifest(),
                    "build_s": seconds,
                    "base": None if base is None else base.identity,
                    "installer": self.installer(spec) or "venv+pip",
                },
            )
        return attrs.evolve(self._built(digest, final, base, cached=False), build_s=seconds)

    def _built(
        self, digest: str, final: str, base: BaseInterpreter | None, *, cached: bool
    ) -> BuiltEnvironment:
        mount = ENV_MOUNT if self._sandbox.name in ("bwrap", *CONTAINERS) else final
        runtime = () if base is None or _under_system(base.prefix) else (base.prefix,)
        return BuiltEnvironment(
            digest=digest,
            host_path=final,
            mount=mount,
            python=base is not None,
            cached=cached,
            runtime_paths=runtime,
        )

    def _build(  # noqa: PLR0917 - one private step of ensure(), called once
        self,
        spec: EnvironmentSpec,
        snapshot: Snapshot,
        task_env: Mapping[str, str],
        base: BaseInterpreter | None,
        final: str,
        cancel: CancelToken | None,
    ) -> None:
        if os.path.lexists(final):
            force_remove(final)  # an incomplete earlier build
        os.mkdir(final, 0o755)
        caches = os.path.join(self._cache, "caches", os.path.basename(final))  # this digest's own
        for name in ("pip", "uv"):
            os.makedirs(os.path.join(caches, name), mode=0o700, exist_ok=True)
        scratch = tempfile.mkdtemp(prefix="build-", dir=self._cache)
        try:
            workspace = private_copy(snapshot, os.path.join(scratch, "workspace"), cancel=cancel)
            mounts = [Mount(final, ENV_MOUNT, writable=True), Mount(caches, CACHE_MOUNT, writable=True)]
            if base is not None and not _under_system(base.prefix):
                mounts.append(Mount(base.prefix, base.prefix))
            ca = CA_BUNDLE
            if self._sandbox.name in CONTAINERS and os.path.isfile(CA_BUNDLE):
                mounts.append(Mount(os.path.realpath(CA_BUNDLE), HOST_CA_TARGET))
                ca = HOST_CA_TARGET
            uv = self._uv if self.installer(spec) is not None else None
            if uv is not None:
                mounts.append(Mount(uv, UV_MOUNT))
            with self._registry() as registry:
                policy = SandboxPolicy(
                    workspace=workspace,
                    workspace_writable=True,
                    network=registry.host_network,
                    timeout_s=spec.timeout_s,
                    mounts=tuple(mounts),
                    bridges=registry.bridges,
                )
                where = self._sandbox.mount_path(ENV_MOUNT, policy)
                cache_seen = self._sandbox.mount_path(CACHE_MOUNT, policy)
                env = {**self._build_env(where, cache_seen, task_env, ca), **registry.env}
                policy = attrs.evolve(policy, env=env)
                uv_seen = None if uv is None else self._sandbox.mount_path(UV_MOUNT, policy)
                script = _script(spec, base, where, uv=uv_seen)
                result = self._sandbox.run(["/bin/sh", "-c", script], policy=policy, cancel=cancel)
        finally:
            force_remove(scratch)
        log = (result.stdout + b"\n" + result.stderr_tail).decode("utf-8", "replace")
        log_path = final + ".log"
        with open(log_path, "w", encoding="utf-8") as handle:
            handle.write(log)
        if not result.ok:
            force_remove(final)
            tail = log.strip()[-LOG_TAIL:]
            status = f"{result.state}, exit {result.returncode}"
            raise SandboxError(f"the environment build failed ({status}; log {log_path}): {tail}")

    def _build_env(
        self, where: str, cache_seen: str, task_env: Mapping[str, str], ca: str = CA_BUNDLE
    ) -> dict[str, str]:
        env = dict(self._command_env)
        env["PATH"] = f"{where}/bin:{env.get('PATH', '/usr/local/bin:/usr/bin:/bin')}"
        env.update(
            VIRTUAL_ENV=where,
            PIP_CACHE_DIR=f"{cache_seen}/pip",
            UV_CACHE_DIR=f"{cache_seen}/uv",
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            PIP_NO_INPUT="1",
            PIP_PROGRESS_BAR="off",
        )
        if os.path.isfile(CA_BUNDLE):
            env.update(PIP_CERT=ca, SSL_CERT_FILE=ca, REQUESTS_CA_BUNDLE=ca)
        env.update(task_env)
        return env


def _script(spec: EnvironmentSpec, base: BaseInterpreter | None, where: str, *, uv: str | None = None) -> str:
    """The build: ``set -eu``, the environment itself, then the install commands.

    With ``uv`` (where the build sees the binary): ``uv venv`` makes the environment (no pip in it)
    and ``pip``/``pip3`` on the build's PATH are ``uv pip``, so ``pip install -e .[test]`` and
    ``pip install -r requirements.txt`` run through uv; without it, the interpreter's ``venv``.
    """
    lines = ["set -eu"]
    if base is None:
        lines.append(f"mkdir -p '{where}/bin'")
    elif uv is not None:
        lines.append(
            f"UV_PYTHON_DOWNLOADS=never '{uv}' venv --quiet --no-config --no-project"
            f" --python '{base.executable}' '{where}'"
        )
        if spec.install:
            lines += [
                'shim="${TMPDIR:-/tmp}/wfbench-uv-pip" && mkdir -p "$shim"',
                f"printf '#!/bin/sh\\nexec %s pip \"$@\"\\n' '{uv}' >\"$shim/pip\"",
                'chmod 755 "$shim/pip" && cp "$shim/pip" "$shim/pip3"',
                'PATH="$shim:$PATH" && export PATH',
            ]
    else:
        pip = "" if spec.with_pip else " --without-pip"
        lines.append(f"'{base.executable}' -m venv{pip} '{where}'")
    lines.extend(spec.install)
    return "\n".join(lines) + "\n"


def _under_system(path: str) -> bool:
    return any(path == tree or path.startswith(tree + "/") for tree in SYSTEM_TREES)


def _file_digest(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except FileNotFoundError:
        return "missing"


def _complete(final: str, digest: str) -> bool:
    try:
        with open(os.path.join(final, MARKER), encoding="utf-8") as handle:
            return bool(json.load(handle).get("digest") == digest)
    except (OSError, ValueError, AttributeError):
        return False


def _write_marker(final: str, data: Mapping[str, object]) -> None:
    from wfbench.adapters.store.atomic import write_bytes_atomic

    write_bytes_atomic(os.path.join(final, MARKER), json.dumps(data, sort_keys=True).encode("utf-8"))


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class PlannedEnvironments:
    """The environments a sweep would use, named without building one (``wfbench run --dry-run``).

    ``ensure`` returns what :meth:`CachedEnvironments.ensure` would (the same digest, path and
    mount; ``cached`` says whether the build is already done), so the dry run binds each task's
    environment digest exactly as the run will, and its reuse count and estimate are the run's.
    """

    def __init__(self, environments: CachedEnvironments) -> None:
        self._inner = environments

    def ensure(
        self,
        spec: EnvironmentSpec,
        *,
        snapshot: Snapshot,
        task_env: Mapping[str, str],
        cancel: CancelToken | None = None,
    ) -> BuiltEnvironment:
        """The environment ``spec`` would be for ``snapshot`` (never built here).

        Raises:
            InputError: the interpreter cannot be used.
        """
        del cancel
        base = None if spec.python is None else resolve_base(spec.python)
        digest = self._inner._digest(spec, snapshot, task_env, base)
        final = os.path.join(self._inner.cache_dir, digest)
        return self._inner._built(digest, final, base, cached=_complete(final, digest))
