"""The corpus's ``environment`` and ``env`` keys, validated (docs/real-repos.md "Environments").

A corpus (top level) or a task declares ``environment``; a task's own replaces the corpus's, and
``environment: false`` opts a task out. ``env`` is a task's variables (name → value), checked
against the names the harness owns and credential-like names.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from typing import Any

import attrs

from wfbench.domain.environment.spec import (
    BUILD_TIMEOUT_S,
    DEFAULT_WORKDIR,
    EnvironmentSpec,
    ImageSource,
    task_env_problem,
)
from wfbench.domain.errors import InputError

#: Keys of a container-image environment (docs/containers.md).
IMAGE_KEYS = frozenset({"image", "containerfile", "context", "workdir", "build_args", "path"})
ENVIRONMENT_KEYS = frozenset({"python", "install", "key_files", "key", "timeout"}) | IMAGE_KEYS
#: An image reference: ``NAME[:TAG][@sha256:HEX]`` (registry host and path segments allowed).
_IMAGE_REF = re.compile(r"^[a-z0-9][a-z0-9._/:-]{0,254}(@sha256:[0-9a-f]{64})?$")
_VERSION = re.compile(r"^3\.[0-9]{1,2}$")
_ARG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def parse_environment(
    raw: Any, *, locator: str, field: str = "environment", root: str | None = None
) -> EnvironmentSpec | None:
    """An ``environment`` mapping as a spec; ``false`` is no environment.

    ``root`` is the corpus directory: a ``containerfile`` and its ``context`` are relative to it.

    Raises:
        InputError: naming the field (``environment.python``, ``environment.install``…).
    """
    if raw is False:
        return None
    if not isinstance(raw, Mapping):
        raise InputError("must be a mapping (or false for no environment)", locator=locator, field=field)
    unknown = sorted(str(k) for k in raw if k not in ENVIRONMENT_KEYS)
    if unknown:
        allowed = ", ".join(sorted(ENVIRONMENT_KEYS))
        raise InputError(f"unknown key (allowed: {allowed})", locator=locator, field=f"{field}.{unknown[0]}")
    image = _image_source(raw, locator, field, root)
    if image is not None and "python" in raw:
        raise InputError(
            "an image environment brings its own toolchain (drop python:)",
            locator=locator,
            field=f"{field}.python",
        )
    return EnvironmentSpec(
        python=None
        if image is not None
        else _python(raw.get("python", "harness"), locator, f"{field}.python"),
        install=_commands(raw.get("install", []), locator, f"{field}.install"),
        key_files=_key_files(raw.get("key_files"), locator, f"{field}.key_files"),
        timeout_s=_timeout(raw.get("timeout", BUILD_TIMEOUT_S), locator, f"{field}.timeout"),
        image=image,
        key=_key(raw, locator, f"{field}.key"),
    )


def _image_source(raw: Mapping[str, Any], locator: str, field: str, root: str | None) -> ImageSource | None:
    """The ``image`` / ``containerfile`` + ``context`` / ``workdir`` / ``build_args`` keys, or None."""
    if not IMAGE_KEYS & set(raw):
        return None
    image, containerfile = raw.get("image"), raw.get("containerfile")
    if (image is None) == (containerfile is None):
        raise InputError(
            "an image environment names exactly one of image: and containerfile:",
            locator=locator,
            field=field,
        )
    base = os.path.abspath(root or ".")
    source = ImageSource(
        workdir=_workdir(raw.get("workdir", DEFAULT_WORKDIR), locator, f"{field}.workdir"),
        path=_path_dirs(raw.get("path", []), locator, f"{field}.path"),
    )
    if image is not None:
        if "context" in raw or "build_args" in raw:
            key = "context" if "context" in raw else "build_args"
            raise InputError("only a containerfile: has this key", locator=locator, field=f"{field}.{key}")
        if not isinstance(image, str) or not _IMAGE_REF.match(image):
            raise InputError(
                "must be an image reference NAME[:TAG|@sha256:…]", locator=locator, field=f"{field}.image"
            )
        return attrs.evolve(source, image=image)
    path = _corpus_path(containerfile, base, locator, f"{field}.containerfile", directory=False)
    context = _corpus_path(
        raw.get("context", os.path.dirname(path)), base, locator, f"{field}.context", directory=True
    )
    args = _build_args(raw.get("build_args"), locator, f"{field}.build_args")
    return attrs.evolve(source, containerfile=path, context=context, build_args=args)


def _workdir(raw: Any, locator: str, field: str) -> str:
    if not isinstance(raw, str) or not os.path.isabs(raw) or os.path.normpath(raw) != raw or raw == "/":
        raise InputError("must be a normalised absolute path other than /", locator=locator, field=field)
    if any(c in raw for c in ",:\x00\n"):
        raise InputError("must not hold ',', ':' or control characters", locator=locator, field=field)
    return raw


def _path_dirs(raw: Any, locator: str, field: str) -> tuple[str, ...]:
    """``path``: directories of the image put first on ``PATH`` (absolute, no ``:``)."""
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        raise InputError("must be a list of absolute directories of the image", locator=locator, field=field)
    for item in raw:
        if not isinstance(item, str) or not os.path.isabs(item) or any(c in item for c in ":\x00\n"):
            raise InputError(
                f"{item!r} must be an absolute directory of the image (no ':')", locator=locator, field=field
            )
    return tuple(raw)


def _corpus_path(raw: Any, base: str, locator: str, field: str, *, directory: bool) -> str:
    if not isinstance(raw, str) or not raw:
        raise InputError("must be a path (relative to the corpus)", locator=locator, field=field)
    path = os.path.normpath(os.path.join(base, raw))
    if not (os.path.isdir(path) if directory else os.path.isfile(path)):
        kind = "directory" if directory else "file"
        raise InputError(f"{kind} does not exist: {path}", locator=locator, field=field)
    return path


def _build_args(raw: Any, locator: str, field: str) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, Mapping) or not all(
        isinstance(k, str) and _ARG_NAME.match(k) and isinstance(v, str | int | float) for k, v in raw.items()
    ):
        raise InputError("must be a mapping of NAME: value", locator=locator, field=field)
    return tuple(sorted((k, str(v)) for k, v in raw.items()))


def _python(raw: Any, locator: str, field: str) -> str | None:
    if raw is None or raw == "none":
        return None
    if not isinstance(raw, str) or not raw.strip():
        raise InputError(
            "must be harness, none, a version such as 3.12, or an interpreter path",
            locator=locator,
            field=field,
        )
    if raw == "harness":
        return raw
    if _VERSION.match(raw):
        if shutil.which(f"python{raw}") is None:
            raise InputError(f"python{raw} is not installed on this machine", locator=locator, field=field)
        return raw
    if not os.path.isabs(raw) or not (os.path.isfile(raw) and os.access(raw, os.X_OK)):
        raise InputError(
            f"{raw} is not an executable interpreter (an absolute path)", locator=locator, field=field
        )
    return raw


def _commands(raw: Any, locator: str, field: str) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(c, str) and c.strip() for c in raw):
        raise InputError("must be a command or a list of commands", locator=locator, field=field)
    return tuple(raw)


def _key_files(raw: Any, locator: str, field: str) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw or not all(isinstance(p, str) and p for p in raw):
        raise InputError("must be a non-empty list of paths of the repository", locator=locator, field=field)
    paths = []
    for path in raw:
        norm = os.path.normpath(path)
        if os.path.isabs(path) or norm == "." or norm.startswith("..") or "\x00" in path:
            raise InputError(
                f"{path!r} must be a relative path inside the repository", locator=locator, field=field
            )
        paths.append(norm)
    return tuple(sorted(set(paths)))


def _key(raw: Mapping[str, Any], locator: str, field: str) -> str | None:
    """``key``: one line of text naming what the environment depends on (not with ``key_files``)."""
    if "key" not in raw:
        return None
    if "key_files" in raw:
        raise InputError("key and key_files are exclusive (one keys the build)", locator=locator, field=field)
    key = raw["key"]
    if not isinstance(key, str) or not key.strip() or len(key) > 512 or any(c in key for c in "\x00\n\r"):
        raise InputError("must be one line of text (at most 512 characters)", locator=locator, field=field)
    return key


def _timeout(raw: Any, locator: str, field: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 1 <= raw <= 86400:
        raise InputError("must be a number of seconds (1..86400)", locator=locator, field=field)
    return float(raw)


def parse_task_env(raw: Any, *, locator: str) -> tuple[tuple[str, str], ...]:
    """A task's ``env`` mapping (name → value) as sorted pairs.

    Raises:
        InputError: naming ``env.<NAME>`` and why (reserved, credential-like, not one line).
    """
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise InputError("must be a mapping of NAME: value", locator=locator, field="env")
    pairs: list[tuple[str, str]] = []
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise InputError("must be a string", locator=locator, field=f"env.{name}")
        text = str(value)
        problem = task_env_problem(str(name), text)
        if problem:
            raise InputError(problem, locator=locator, field=f"env.{name}")
        pairs.append((str(name), text))
    return tuple(sorted(pairs))
