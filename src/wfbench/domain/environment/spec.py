"""What a task's environment is, what identifies it, and which task variables are allowed.

An :class:`EnvironmentSpec` says how to build the directory every cell of a task gets read-only at
``/env`` (its ``bin/`` first on ``PATH``): a base (the harness's Python, an interpreter, or none for a
shell-only environment) plus install commands. :func:`environment_digest` is the identity of one
build: the spec, the resolved base, the snapshot content it is keyed on and the task variables.
Equal digests mean the same environment, so a build is reused across cells and sweeps; the digest
is stamped on every row and takes part in comparator reuse (docs/real-repos.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping

import attrs

from wfbench.domain.environment.image import ContainerImage

#: Where the environment appears inside the sandbox.
ENV_MOUNT = "/env"
#: A build's default time limit (seconds).
BUILD_TIMEOUT_S = 1800.0
SCHEMA_VERSION = 1
#: Task variable names: shell-safe identifiers.
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
#: Names the harness sets itself (or that would change how every program starts).
RESERVED_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "TMPDIR",
        "PWD",
        "USER",
        "LOGNAME",
        "SHELL",
        "VIRTUAL_ENV",
        "PYTHONHOME",
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "BASH_ENV",
        "ENV",
        "IFS",
        "PS4",
        "SHELLOPTS",
        "BASHOPTS",
        "PROMPT_COMMAND",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
    }
)
RESERVED_PREFIXES = ("WFBENCH_", "ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GIT_", "BASH_FUNC_")
#: A name that looks like a credential never becomes a task variable (it would reach the agent).
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)
MAX_VALUE = 4096


#: Where the workspace appears inside a task image when the spec names no ``workdir``.
DEFAULT_WORKDIR = "/workspace"


@attrs.frozen
class ImageSource:
    """A task's container image: a named image, or a Containerfile built locally (docs/containers.md).

    Exactly one of ``image`` (``NAME[:TAG|@sha256:…]``, used as it is: pulled when absent) and
    ``containerfile`` (an absolute path; built with ``context``, an absolute directory, by the
    container runtime, cached by the digest of both) is set. ``workdir`` is where the task's
    repository lives inside the image (``/testbed`` for SWE-bench images): each cell's private copy
    of the snapshot is mounted there. ``build_args`` are ``--build-arg`` pairs of a Containerfile.
    ``path`` are directories put before the image's declared ``PATH`` in every command: how an
    environment inside the image is activated (``/opt/miniconda3/envs/testbed/bin`` for SWE-bench's
    conda env ``testbed``), with no shell start-up file involved.
    """

    image: str | None = None
    containerfile: str | None = None
    context: str | None = None
    workdir: str = DEFAULT_WORKDIR
    build_args: tuple[tuple[str, str], ...] = ()
    path: tuple[str, ...] = ()

    def manifest(self) -> dict[str, object]:
        """The source as canonical data (the image's content digest identifies what was built)."""
        data: dict[str, object] = {
            "image": self.image,
            "containerfile": self.containerfile,
            "context": self.context,
            "workdir": self.workdir,
            "build_args": [list(pair) for pair in self.build_args],
        }
        if self.path:  # absent otherwise: earlier digests stay as they were
            data["path"] = list(self.path)
        return data


@attrs.frozen
class EnvironmentSpec:
    """How to build a task's environment.

    ``python``: ``"harness"`` (the harness's own interpreter, by its base installation), a version
    such as ``"3.12"`` (``python3.12`` found on the host), an absolute interpreter path, or ``None``
    for a shell-only environment (no interpreter: ``/env/bin`` holds what ``install`` puts there).
    A Python environment is a standard virtual environment of that interpreter (no system
    site-packages), with pip when there are install commands. ``install`` runs under ``set -eu``
    inside the sandbox with the task's snapshot at ``/workspace`` and package-registry access.
    ``key_files`` (paths of the snapshot) key the build instead of the whole snapshot tree, so
    commits that share them share the environment (lockfiles); ``None`` keys on the tree. ``key``
    (a text naming what the environment depends on, e.g. SWE-bench's ``environment_setup_commit``)
    keys it instead of both: the tasks of one repository with equal keys share one build, made over
    the snapshot of whichever task needed it first.
    ``image`` makes the environment a container image (a container backend only): ``install``
    then runs inside a container of that image, as its root user, and the result is committed as
    the task's image; ``python`` is ``None`` (the image brings its own toolchain).
    """

    python: str | None = "harness"
    install: tuple[str, ...] = ()
    key_files: tuple[str, ...] | None = None
    timeout_s: float = BUILD_TIMEOUT_S
    image: ImageSource | None = None
    key: str | None = None

    @property
    def with_pip(self) -> bool:
        """pip is installed into a Python environment when there is something to install."""
        return self.python is not None and bool(self.install)

    def manifest(self) -> dict[str, object]:
        """The spec as canonical data (what the digest covers)."""
        data: dict[str, object] = {
            "python": self.python,
            "install": list(self.install),
            "key_files": None if self.key_files is None else list(self.key_files),
        }
        if self.image is not None:  # absent otherwise: digests of venv environments stay as they were
            data["image"] = self.image.manifest()
        if self.key is not None:  # likewise
            data["key"] = self.key
        return data


@attrs.frozen
class BuiltEnvironment:
    """A built environment: its digest, host directory, where commands see it and how it was had.

    ``build_s`` is the time this sweep spent building it (0.0 when it came from the cache).
    """

    digest: str
    host_path: str
    mount: str
    python: bool
    build_s: float = 0.0
    cached: bool = False
    #: Host trees (the base interpreter's install) every command needs at the same path.
    runtime_paths: tuple[str, ...] = ()
    #: The task's image (an image environment): every command of its cells runs in it.
    image: ContainerImage | None = None

    @property
    def has_directory(self) -> bool:
        """True when there is a built directory to mount at :data:`ENV_MOUNT` (an image has none)."""
        return bool(self.host_path)

    @property
    def bin_dir(self) -> str:
        """The ``bin/`` directory as commands see it (first on ``PATH``)."""
        return f"{self.mount}/bin"


def environment_digest(
    spec: EnvironmentSpec,
    *,
    base: str | None,
    key: Mapping[str, str] | str,
    task_env: Mapping[str, str],
    location: str,
    installer: str | None = None,
) -> str:
    """The identity of one build (hex sha256 of canonical JSON).

    ``base`` identifies the resolved interpreter (path and version) or is ``None`` (shell-only);
    ``key`` is the snapshot tree id, or the sha256 of each key file (``"missing"`` when absent);
    ``location`` is where the environment lives as commands see it (paths are baked into it);
    ``installer`` names what made the environment and ran ``pip`` when it was not the interpreter's
    own ``venv`` and pip (``"uv 0.13.8"``): a different installer can resolve differently, so it is
    another build. ``None`` (venv and pip) leaves the material, and so every earlier digest, as is.
    """
    material: dict[str, object] = {
        "schema_version": SCHEMA_VERSION,
        "spec": spec.manifest(),
        "base": base,
        "key": key if isinstance(key, str) else dict(sorted(key.items())),
        "env": dict(sorted(task_env.items())),
        "location": location,
    }
    if installer is not None:
        material["installer"] = installer
    text = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: The repository's entry in a key made of key files or a ``key`` (NUL: never a path of the snapshot).
REPOSITORY_KEY = "\0repository"


def snapshot_key(
    spec: EnvironmentSpec, repo: str, tree: str, files: Mapping[str, str]
) -> Mapping[str, str] | str:
    """What a build of ``spec`` over a snapshot is keyed on: its ``key``, its key files' digests or its tree.

    ``files`` holds the sha256 of each of ``spec.key_files`` (``"missing"`` when absent). A ``key``
    or key files come with the repository (``repo``), so two repositories never share a build.
    """
    if spec.key is not None:
        return {"\0key": spec.key, REPOSITORY_KEY: repo}
    if spec.key_files is None:
        return tree
    return {**files, REPOSITORY_KEY: repo}


def task_env_problem(name: str, value: str) -> str | None:
    """Why ``name=value`` cannot be a task variable, or ``None``.

    Names are identifiers, not one the harness sets (``PATH``, ``HOME``, ``VIRTUAL_ENV``, proxies,
    the loader's ``LD_*``…), not in a harness namespace (``WFBENCH_``, ``ANTHROPIC_``, ``CLAUDE_``,
    ``OPENAI_``, ``CODEX_``, ``GIT_``) and not credential-like (key, token, secret, password…): task
    variables reach the agent's tools, so a secret must never be one. Values are single-line text.
    """
    if not ENV_NAME.match(name):
        return "must be an identifier ([A-Za-z_][A-Za-z0-9_]*)"
    if name in RESERVED_NAMES or name.upper() in RESERVED_NAMES:
        return "is set by the harness"
    if name.upper().startswith(RESERVED_PREFIXES):
        return "is in a namespace the harness owns"
    if SECRET_NAME.search(name):
        return "looks like a credential; secrets are never task variables"
    if "\x00" in value or "\n" in value or "\r" in value:
        return "must be one line of text"
    if len(value) > MAX_VALUE:
        return f"is longer than {MAX_VALUE} characters"
    return None
