"""Harbor-format tasks (Terminal-Bench 2.0's format) read and mapped to wfbench tasks (docs/harbor.md).

A Harbor task is a directory: ``task.toml``, ``instruction.md``, ``environment/Dockerfile``,
``tests/test.sh`` (+ helpers; uploaded only after the agent finishes; writes its reward to
``/logs/verifier/reward.txt``) and an optional ``solution/solve.sh``. :func:`read_task` reads one
(refusing what is missing); :func:`map_task` decides, key by key, what it becomes — mapped,
reported, or refused — without touching anything (pure). Every key of ``task.toml`` lands in one
of three places: the task, a note (reported, never silently dropped), or an :class:`InputError`
naming the file and the key.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from typing import Any

import attrs

from wfbench.app.corpus.task_limits import parse_cpus, parse_task_size
from wfbench.domain.environment.spec import task_env_problem
from wfbench.domain.errors import InputError

__all__ = [
    "HarborTask",
    "ImportOptions",
    "MappedTask",
    "map_task",
    "read_task",
]

#: Where a Harbor task's tests expect to be, and where they write the reward (Harbor's contract).
TESTS_MOUNT = "/tests"
TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
MAX_TEST_FILES = 7  # the oracle's limit is 8 files; one slot stays for the harness's canary
_TEMPLATE = re.compile(r"\$\{")


@attrs.frozen
class HarborTask:
    """One Harbor task directory as read: its id, config, prompt and the files of each part."""

    id: str
    directory: str
    config: Mapping[str, Any]
    instruction: str
    #: Paths relative to ``tests/`` (``test.sh`` among them), sorted.
    tests: tuple[str, ...]
    has_dockerfile: bool
    has_solution: bool


@attrs.frozen
class ImportOptions:
    """What the user opted into at import time."""

    #: ``--network host``: tasks that need the internet keep the host's network (contaminating).
    network_host: bool = False
    #: The oracle passes when the reward is above this (and test.sh exited 0).
    reward_above: float = 0.0


@attrs.frozen
class MappedTask:
    """The wfbench task (a corpus entry, without ``repo``/``ref``: the capture adds them) and the notes."""

    task: Mapping[str, Any]
    #: The image's working directory when ``task.toml`` names it (else the image's own WORKDIR).
    workdir: str | None
    notes: tuple[str, ...]


def _where(task: HarborTask, name: str = "task.toml") -> dict[str, str]:
    return {"source": os.path.join(task.directory, name), "locator": task.id}


def read_task(directory: str) -> HarborTask:
    """Read a Harbor task directory.

    Raises:
        InputError: no ``task.toml``/``instruction.md``/``tests/test.sh``, an unreadable or invalid
            ``task.toml``, or a directory name that is not a task id.
    """
    directory = os.path.abspath(directory)
    task_id = os.path.basename(directory.rstrip("/"))
    if not TASK_ID.match(task_id):
        raise InputError(
            "a task directory's name must match [A-Za-z0-9][A-Za-z0-9._-]{0,127}", source=directory
        )
    config = _toml(os.path.join(directory, "task.toml"), task_id)
    instruction = _read(os.path.join(directory, "instruction.md"), task_id)
    tests_dir = os.path.join(directory, "tests")
    if not os.path.isfile(os.path.join(tests_dir, "test.sh")):
        raise InputError(
            "is required (the verifier)", source=directory, locator=task_id, field="tests/test.sh"
        )
    tests = []
    for root, dirs, files in os.walk(tests_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        tests += [os.path.relpath(os.path.join(root, f), tests_dir).replace(os.sep, "/") for f in files]
    return HarborTask(
        id=task_id,
        directory=directory,
        config=config,
        instruction=instruction,
        tests=tuple(sorted(tests)),
        has_dockerfile=os.path.isfile(os.path.join(directory, "environment", "Dockerfile")),
        has_solution=os.path.isfile(os.path.join(directory, "solution", "solve.sh")),
    )


def _read(path: str, task_id: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise InputError("is required", source=path, locator=task_id) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", source=path, locator=task_id) from None
    if not text.strip():
        raise InputError("is empty", source=path, locator=task_id)
    return text


def _toml(path: str, task_id: str) -> Mapping[str, Any]:
    text = _read(path, task_id) if os.path.exists(path) else None
    if text is None:
        raise InputError("is required", source=path, locator=task_id)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", source=path, locator=task_id) from None


@attrs.define
class _Mapper:
    """One task's mapping in progress: the task entry, its notes, the keys seen."""

    harbor: HarborTask
    options: ImportOptions
    notes: list[str] = attrs.field(factory=list)
    env: dict[str, str] = attrs.field(factory=dict)
    environment: dict[str, Any] = attrs.field(factory=dict)
    oracle_env: dict[str, str] = attrs.field(factory=dict)
    needs_network: list[str] = attrs.field(factory=list)
    limits: dict[str, float | str] = attrs.field(factory=dict)
    workdir: str | None = None
    task_class: str = "harbor"

    def note(self, key: str, what: str) -> None:
        self.notes.append(f"{self.harbor.id}: {key}: {what}")

    def refuse(self, key: str, why: str) -> InputError:
        return InputError(why, field=key, **_where(self.harbor))

    def section(self, name: str) -> Mapping[str, Any]:
        raw = self.harbor.config.get(name, {})
        if not isinstance(raw, Mapping):
            raise self.refuse(name, "must be a table")
        return raw


def _top(m: _Mapper) -> None:
    handlers = {
        "version": None,
        "schema_version": None,
        "metadata": _metadata,
        "task": _package,
        "verifier": _verifier,
        "agent": _agent,
        "environment": _environment,
        "solution": _solution,
    }
    for key, value in m.harbor.config.items():
        if key in handlers:
            handler = handlers[key]
            if handler is not None:
                handler(m)
        elif key == "steps" and value:
            raise m.refuse("steps", "multi-step tasks are not supported (one instruction, one verifier)")
        elif key in ("source", "multi_step_reward_strategy", "artifacts", "steps"):
            m.note(key, f"not used by wfbench ({value!r})")
        else:
            m.note(key, "unknown key, not used")


def _metadata(m: _Mapper) -> None:
    for key, value in m.section("metadata").items():
        if key == "category" and isinstance(value, str) and value.strip():
            m.task_class = f"harbor:{value.strip()}"
        else:
            m.note(f"metadata.{key}", f"kept only in this report ({value!r})")


def _package(m: _Mapper) -> None:
    for key, value in m.section("task").items():
        m.note(f"task.{key}", f"package metadata, not used ({value!r}); the task id is the directory name")


def _timeout(m: _Mapper, key: str, value: Any, limit: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 1 <= value <= 86400:
        raise m.refuse(key, "must be a number of seconds (1..86400)")
    m.limits[limit] = value


def _network(m: _Mapper, key: str, value: Any, *, verifier: bool = False) -> None:
    public = value is True or value in ("public", "allowlist")
    if verifier and public:
        m.note(key, f"{value!r}: the verifier never has a network in wfbench (test.sh runs offline)")
    elif public:
        m.needs_network.append(f"{key} = {value!r}")
    elif value not in (False, "no-network", None):
        raise m.refuse(key, "must be public, allowlist or no-network")


def _verifier(m: _Mapper) -> None:
    for key, value in m.section("verifier").items():
        name = f"verifier.{key}"
        if key == "timeout_sec":
            _timeout(m, name, value, "verifier_timeout")
        elif key == "env":
            m.oracle_env.update(_env_table(m, name, value))
        elif key in ("network_mode", "allow_internet"):
            _network(m, name, value, verifier=True)
        elif key == "allowed_hosts":
            m.note(name, "the verifier never has a network in wfbench")
        elif key in ("environment", "environment_mode", "collect"):
            raise m.refuse(name, "a separate verifier environment is not supported")
        else:
            m.note(name, f"not supported, not used ({value!r})")


def _agent(m: _Mapper) -> None:
    for key, value in m.section("agent").items():
        name = f"agent.{key}"
        if key == "timeout_sec":
            _timeout(m, name, value, "agent_timeout")
        elif key in ("network_mode", "allow_internet"):
            _network(m, name, value)
        elif key == "allowed_hosts":
            m.needs_network.append(f"{name} = {value!r}")
        else:
            m.note(name, f"not supported, not used ({value!r})")


_RESOURCES = ("cpus", "memory_mb", "storage_mb", "memory", "storage")


def _environment(m: _Mapper) -> None:
    for key, value in m.section("environment").items():
        name = f"environment.{key}"
        if key == "build_timeout_sec":
            if isinstance(value, bool) or not isinstance(value, int | float) or not 1 <= value <= 86400:
                raise m.refuse(name, "must be a number of seconds (1..86400)")
            m.environment["timeout"] = value
        elif key == "docker_image":
            if not isinstance(value, str) or not value:
                raise m.refuse(name, "must be an image reference")
            m.environment["image"] = value
        elif key == "workdir":
            if not isinstance(value, str) or not value.startswith("/"):
                raise m.refuse(name, "must be an absolute path")
            m.workdir = value
        elif key == "env":
            m.env.update(_env_table(m, name, value))
        elif key in ("allow_internet", "network_mode"):
            _network(m, name, value)
        elif key == "allowed_hosts":
            m.needs_network.append(f"{name} = {value!r}")
        elif key == "os" and str(value).lower() != "linux":
            raise m.refuse(name, "only linux containers are supported")
        elif key in ("gpus", "tpu", "gpu_types") and value:
            raise m.refuse(name, "accelerators are not supported")
        elif key == "mcp_servers" and value:
            raise m.refuse(name, "task MCP servers are not supported (an arm names its MCP config)")
        elif key in _RESOURCES:
            _resource(m, key, value)
        else:
            m.note(name, f"not supported, not used ({value!r})")


def _resource(m: _Mapper, key: str, value: Any) -> None:
    """``cpus``, ``memory_mb``/``storage_mb`` (MiB) or the deprecated ``memory``/``storage`` (``"4G"``).

    Each becomes the task's ``limits.cpus``/``memory``/``storage`` (enforced per task: docs/harbor.md);
    ``memory`` and ``memory_mb`` (or the storage pair) that disagree are refused, as Harbor does.
    """
    name = f"environment.{key}"
    try:
        if key == "cpus":
            m.limits["cpus"] = parse_cpus(value)
            return
        if key.endswith("_mb"):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"must be a whole, positive number of MiB, got {value!r}")
            size = f"{value}M"
        else:
            size = value.strip().upper() if isinstance(value, str) else value
        parse_task_size(size)
    except ValueError as exc:
        raise m.refuse(name, str(exc)) from None
    limit = key.removesuffix("_mb")
    previous = m.limits.get(limit)
    if previous is not None and parse_task_size(previous) != parse_task_size(size):
        raise m.refuse(name, f"conflicts with the task's other {limit} value ({previous})")
    m.limits[limit] = size


def _solution(m: _Mapper) -> None:
    for key, value in m.section("solution").items():
        m.note(f"solution.{key}", f"not used ({value!r})")


def _env_table(m: _Mapper, key: str, raw: Any) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        raise m.refuse(key, "must be a table of NAME = value")
    out = {}
    for name, value in raw.items():
        text = str(value)
        if _TEMPLATE.search(text):
            raise m.refuse(
                f"{key}.{name}", "host templates (${VAR}) are not resolved: secrets stay on the host"
            )
        problem = task_env_problem(str(name), text)
        if problem:
            raise m.refuse(f"{key}.{name}", problem)
        out[str(name)] = text
    return out


def oracle_command(env: Mapping[str, str]) -> str:
    """The oracle's command: Harbor's ``test.sh`` from the staged tests, with the verifier's variables."""
    import shlex

    prefix = "".join(f"{name}={shlex.quote(value)} " for name, value in sorted(env.items()))
    return f"{prefix}bash {TESTS_MOUNT}/test.sh"


def _refusals(m: _Mapper) -> None:
    """What the whole task says that wfbench cannot honour (beyond single keys)."""
    harbor = m.harbor
    if not harbor.has_dockerfile and "image" not in m.environment:
        raise InputError(
            "is required (or [environment] docker_image)", field="environment/Dockerfile", **_where(harbor)
        )
    if m.needs_network and not m.options.network_host:
        raise m.refuse(
            m.needs_network[0].split(" ", 1)[0],
            f"the task asks for the internet ({'; '.join(m.needs_network)}): "
            "import with --network host to let its agent sessions share the host's network (contaminating)",
        )
    if len(harbor.tests) > MAX_TEST_FILES:
        raise InputError(
            f"{len(harbor.tests)} files; the hidden oracle stages at most {MAX_TEST_FILES}",
            field="tests/",
            **_where(harbor),
        )


def _entry(m: _Mapper, base: str) -> dict[str, Any]:
    harbor = m.harbor
    environment = dict(m.environment)
    if "image" not in environment:
        environment["containerfile"] = f"{base}/environment/Dockerfile"
        environment["context"] = f"{base}/environment"
    task: dict[str, Any] = {
        "id": harbor.id,
        "class": m.task_class,
        "kind": "implementation",
        "prompt": harbor.instruction,
        "verify": "true",
        "environment": environment,
        "oracle": {
            "command": oracle_command(m.oracle_env),
            "report": "reward",
            "reward_above": m.options.reward_above,
            "mount": TESTS_MOUNT,
            "files": [{"source": f"{base}/tests/{name}", "target": name} for name in harbor.tests],
        },
    }
    optional = {
        "env": dict(sorted(m.env.items())),
        "limits": dict(sorted(m.limits.items())),
        "network": "host" if m.needs_network else None,
        "gold_script": f"{base}/solution/solve.sh" if harbor.has_solution else None,
    }
    task.update({key: value for key, value in optional.items() if value})
    return task


def map_task(harbor: HarborTask, options: ImportOptions, *, base: str) -> MappedTask:
    """``harbor`` as a corpus task entry (paths under ``base``, relative to the corpus), with the notes.

    Raises:
        InputError: a refused key (named), the internet asked for without ``--network host``, or
            more test files than the oracle may stage.
    """
    m = _Mapper(harbor, options)
    _top(m)
    _refusals(m)
    return MappedTask(task=_entry(m, base), workdir=m.workdir, notes=tuple(m.notes))
