"""The run manifest: what a sweep was started with, so ``--resume`` runs exactly that sweep again.

Every sweep writes ``manifest.json`` at its root before its first cell. ``--resume DIR`` reads it
and runs that configuration; the rules here decide what a resume may and may not change:

* **Configuration** (:data:`CONFIG_OPTIONS`: corpus, arms, runs, model, agent, sandbox, provider
  script, base URL, candidate overlay, reused results, expensive tasks, timeouts) is the
  identity of the evidence. An option given on the command line that differs from the manifest
  is refused (:func:`option_conflicts`), naming the option and both values; one that is not
  given is taken from the manifest. Mixing two configurations in one ``results.jsonl`` is the
  trap this closes.
* **What the configuration points at** must not have drifted either (:func:`drift_conflicts`):
  the corpus file's bytes, the provider script's, the overlay's digest, the runtime (wfbench,
  Python, the agent and its version), and each task's binding (commit, prompt, setup, verify,
  oracle and dependency digests).
* **How the sweep runs** (:data:`OPERATIONAL_OPTIONS`: workers, window, outage streak, throttle
  retries and back-off) may change on a resume; it does not change what a cell measures.

Pure: values in, decisions out (``json`` is the caller's business). The schema is versioned
(:data:`MANIFEST_SCHEMA_VERSION`); fields this version does not know are kept verbatim
(``extra``), so a manifest gains fields (environment digests, per-agent versions) without
breaking older readers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from wfbench.domain.errors import InputError

__all__ = [
    "CONFIG_OPTIONS",
    "MANIFEST_NAME",
    "MANIFEST_SCHEMA_VERSION",
    "OPERATIONAL_OPTIONS",
    "TASK_BINDING_KEYS",
    "Conflict",
    "RunManifest",
    "check_model_name",
    "drift_conflicts",
    "option_conflicts",
    "row_conflicts",
]

MANIFEST_NAME = "manifest.json"
MANIFEST_SCHEMA_VERSION = 1

#: Command-line option → manifest field: the configuration a resume must not change.
CONFIG_OPTIONS: Mapping[str, str] = {
    "CORPUS": "corpus_path",
    "--arms": "arms",
    "--runs": "runs",
    "--model": "model",
    "--agent": "agent",
    "--sandbox": "sandbox",
    "--provider-script": "provider_script",
    "--base-url": "base_url",
    "--candidate-overlay": "candidate_overlay",
    "--reuse-results": "reuse_results",
    "--include-expensive": "include_expensive",
    "--timeout": "session_timeout_s",
    "--verify-timeout": "verify_timeout_s",
    "--tasks": "task_filter",
    "--no-provider-script": "no_provider_script",
}
#: Options a resume may change (they change how the sweep runs, not what a cell measures).
OPERATIONAL_OPTIONS = ("--workers", "--window", "--outage-streak", "--throttle-retries", "--throttle-backoff")
#: The fields of a task binding a resume compares (the dependency digests only when both are known).
TASK_BINDING_KEYS = (
    "sha",
    "prompt_digest",
    "setup_digest",
    "verify_digest",
    "oracle_digest",
    "oracle_command_digest",
    "oracle_manifest_digest",
    "sandbox_dependency_content_digest",
    "sandbox_dependency_manifest_digest",
    "environment_digest",
    "limits_digest",
)
_OPTIONAL_TASK_KEYS = frozenset(
    {
        "sandbox_dependency_content_digest",
        "sandbox_dependency_manifest_digest",
        "environment_digest",
        "limits_digest",
    }
)
_MUTABLE_MODEL = re.compile(r"(^|[-/@:])(auto|latest)$", re.IGNORECASE)


def check_model_name(raw: str | None, *, field: str = "--model") -> str:
    """The pinned model id, stripped; blank and mutable aliases are refused (as the reference does).

    A name ending in ``auto`` or ``latest`` (whole, or after ``-``, ``/``, ``@`` or ``:``, in any
    case) names whatever the provider serves today, so evidence measured with it cannot be
    compared with tomorrow's.

    Raises:
        InputError: blank, or a mutable alias (naming ``field``).
    """
    name = (raw or "").strip()
    if not name:
        raise InputError("a named model is required so evidence cannot drift (got a blank name)", field=field)
    if _MUTABLE_MODEL.search(name):
        raise InputError(
            f"{name!r} is a mutable alias (it names whatever is served today); pin an exact model id",
            field=field,
        )
    return name


@attrs.frozen
class Conflict:
    """One way a resume contradicts its manifest: what (an option, a file, a task field), both values.

    ``drift`` is False for an option the user typed, True for something that changed on disk or
    in the runtime since the sweep started.
    """

    what: str
    recorded: str
    requested: str
    drift: bool = False

    def message(self) -> str:
        """The text of one error line."""
        if self.drift:
            return f"{self.what} changed since the sweep started (was {self.recorded}, now {self.requested})"
        return f"{self.what} {self.requested} contradicts this sweep's {self.what} {self.recorded}"


@attrs.frozen
class RunManifest:
    """``manifest.json``: the configuration of one sweep, recorded before its first cell."""

    started_at: str
    argv: tuple[str, ...]
    wfbench_version: str
    corpus_path: str
    corpus_digest: str
    demo: bool
    arms: tuple[str, ...]
    runs: int
    model: str
    agent: str
    agent_version: str | None
    sandbox: str
    provider_script: str | None
    provider_script_digest: str | None
    base_url: str | None
    candidate_overlay: str | None
    candidate_overlay_digest: str | None
    reuse_results: str | None
    include_expensive: bool
    session_timeout_s: float
    verify_timeout_s: float
    runtime_digest: str
    workers: int
    window: int | None
    outage_streak: int
    #: ``{name: digest}`` of the task environments the sweep was measured in (empty until built).
    environment_digests: Mapping[str, str] = attrs.field(factory=dict)
    #: One binding per selected task (``id`` plus :data:`TASK_BINDING_KEYS`), set once tasks are bound.
    tasks: tuple[Mapping[str, Any], ...] = ()
    #: ``--tasks``: the ids or globs that selected the tasks (empty: every task).
    task_filter: tuple[str, ...] = ()
    #: ``--no-provider-script``: the corpus's provider script was ignored for ``--base-url``.
    no_provider_script: bool = False
    #: ``{arm: {"agent", "agent_version", "runtime_digest"}}``: what each arm's rows run under.
    arm_runtimes: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    #: Fields of a newer schema, kept verbatim.
    extra: Mapping[str, Any] = attrs.field(factory=dict)
    schema_version: int = MANIFEST_SCHEMA_VERSION

    def to_mapping(self) -> dict[str, Any]:
        """The ``manifest.json`` object (plain JSON types)."""
        known = {
            field.name: getattr(self, field.name)
            for field in attrs.fields(RunManifest)
            if field.name not in ("extra", "schema_version")
        }
        known["argv"] = list(self.argv)
        known["task_filter"] = list(self.task_filter)
        known["arms"] = list(self.arms)
        known["environment_digests"] = dict(self.environment_digests)
        known["tasks"] = [dict(task) for task in self.tasks]
        known["arm_runtimes"] = {arm: dict(runtime) for arm, runtime in self.arm_runtimes.items()}
        return {"schema_version": self.schema_version, **known, **dict(self.extra)}

    @classmethod
    def from_mapping(cls, raw: Any, *, source: str = MANIFEST_NAME) -> RunManifest:
        """Read what :meth:`to_mapping` wrote.

        Raises:
            InputError: not an object, an unsupported schema, or a field missing or mistyped
                (naming ``source`` and the field).
        """
        if not isinstance(raw, Mapping):
            raise InputError("a run manifest must be a JSON object", source=source)
        version = raw.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool) or version > MANIFEST_SCHEMA_VERSION:
            raise InputError(
                f"unsupported run manifest schema {version!r} (this wfbench reads {MANIFEST_SCHEMA_VERSION})",
                source=source,
                field="schema_version",
            )
        values: dict[str, Any] = {}
        for field in attrs.fields(RunManifest):
            if field.name in ("extra", "schema_version"):
                continue
            if field.name not in raw:
                if field.default is attrs.NOTHING:
                    raise InputError("is missing", source=source, field=field.name)
                continue
            values[field.name] = _field_value(field.name, raw[field.name], source)
        known = {field.name for field in attrs.fields(RunManifest)}
        extra = {key: value for key, value in raw.items() if key not in known}
        return cls(**values, extra=extra, schema_version=version)

    def option_value(self, option: str) -> object:
        """The recorded value of a configuration option (see :data:`CONFIG_OPTIONS`)."""
        return getattr(self, CONFIG_OPTIONS[option])


_TEXT = (
    "started_at",
    "wfbench_version",
    "corpus_path",
    "corpus_digest",
    "model",
    "agent",
    "sandbox",
    "runtime_digest",
)
_OPTIONAL_TEXT = (
    "agent_version",
    "provider_script",
    "provider_script_digest",
    "base_url",
    "candidate_overlay",
    "candidate_overlay_digest",
    "reuse_results",
)


def _field_value(name: str, value: Any, source: str) -> Any:
    def fail(expected: str) -> InputError:
        return InputError(f"must be {expected}", source=source, field=name)

    if name in _TEXT:
        if not isinstance(value, str):
            raise fail("a string")
        return value
    if name in _OPTIONAL_TEXT:
        if value is not None and not isinstance(value, str):
            raise fail("a string or null")
        return value
    if name in ("demo", "include_expensive", "no_provider_script"):
        if not isinstance(value, bool):
            raise fail("true or false")
        return value
    if name in ("runs", "workers", "outage_streak", "window"):
        if value is None and name == "window":
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise fail("a non-negative integer")
        return value
    if name in ("session_timeout_s", "verify_timeout_s"):
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise fail("a number")
        return float(value)
    if name in ("argv", "arms", "task_filter"):
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise fail("a list of strings")
        return tuple(value)
    if name == "arm_runtimes":
        if not isinstance(value, Mapping) or not all(isinstance(v, Mapping) for v in value.values()):
            raise fail("an object of objects")
        return {str(arm): dict(runtime) for arm, runtime in value.items()}
    if name == "environment_digests":
        if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
            raise fail("an object of strings")
        return dict(value)
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise fail("a list of objects")
    return tuple(dict(item) for item in value)


def _shown(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple | list):
        return ",".join(map(str, value)) or "none"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def option_conflicts(manifest: RunManifest, given: Mapping[str, object]) -> tuple[Conflict, ...]:
    """Options given on the command line (``{"--runs": 5}``) that differ from the manifest.

    ``given`` holds only options the user typed, normalized the way the manifest records them
    (absolute paths, split arm lists, the stripped model). Operational options are never conflicts.
    """
    conflicts = []
    for option, value in given.items():
        if option not in CONFIG_OPTIONS:
            continue
        recorded = manifest.option_value(option)
        if option in ("--timeout", "--verify-timeout") and isinstance(value, int | float):
            same = recorded == float(value)
        elif option in ("--arms", "--tasks") and isinstance(value, Sequence):
            same = tuple(recorded) == tuple(value)  # type: ignore[arg-type]
        else:
            same = recorded == value
        if not same:
            conflicts.append(Conflict(option, _shown(recorded), _shown(value)))
    return tuple(conflicts)


def drift_conflicts(recorded: RunManifest, current: RunManifest) -> tuple[Conflict, ...]:
    """What changed under the configuration since the sweep started (files, runtime, task bindings).

    ``current`` is the manifest this resume would write now (same configuration, fresh digests).
    """
    checks = (
        ("the corpus file", recorded.corpus_digest, current.corpus_digest),
        ("the provider script", recorded.provider_script_digest, current.provider_script_digest),
        ("the candidate overlay", recorded.candidate_overlay_digest, current.candidate_overlay_digest),
        ("the agent version", recorded.agent_version, current.agent_version),
        ("the runtime (wfbench, Python, agent, script)", recorded.runtime_digest, current.runtime_digest),
    )
    conflicts = [
        Conflict(what, _shown(old), _shown(new), drift=True) for what, old, new in checks if old != new
    ]
    conflicts += _task_conflicts(recorded.tasks, current.tasks)
    return tuple(conflicts)


def _task_conflicts(
    recorded: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]]
) -> list[Conflict]:
    if not recorded or not current:
        return []
    old_ids = [str(task.get("id")) for task in recorded]
    new_ids = [str(task.get("id")) for task in current]
    if old_ids != new_ids:
        return [Conflict("the selected tasks", ",".join(old_ids), ",".join(new_ids), drift=True)]
    conflicts = []
    for old, new in zip(recorded, current, strict=True):
        for key in TASK_BINDING_KEYS:
            before, after = old.get(key), new.get(key)
            if key in _OPTIONAL_TASK_KEYS and (before is None or after is None):
                continue
            if before != after:
                conflicts.append(
                    Conflict(f"task {old.get('id')} {key}", _shown(before), _shown(after), drift=True)
                )
    return conflicts


def row_conflicts(manifest: RunManifest, rows: Sequence[Any]) -> tuple[Conflict, ...]:
    """Where rows written without a manifest disagree with the configuration about to resume them.

    A sweep from before run manifests records its configuration only in its rows: each names its
    model, sandbox backend, runtime digest, arm, run and task commit. A resume of such a sweep
    runs the configuration given on the command line, and is refused where the rows say otherwise.
    """
    conflicts: list[Conflict] = []

    def agreed(name: str) -> list[str]:
        return sorted({str(row.extra.get(name)) for row in rows if row.extra.get(name) not in (None, "")})

    for option, field, expected in (
        ("--model", "benchmark_model", manifest.model),
        ("--sandbox", "sandbox_backend", manifest.sandbox),
        ("the runtime (wfbench, Python, agent, script)", "runtime_digest", manifest.runtime_digest),
    ):
        seen = [value for value in agreed(field) if value != expected]
        if seen:
            conflicts.append(Conflict(option, ",".join(seen), expected, drift=not option.startswith("--")))
    extra_arms = sorted({row.arm for row in rows} - set(manifest.arms))
    if extra_arms:
        conflicts.append(Conflict("--arms", ",".join(sorted({r.arm for r in rows})), ",".join(manifest.arms)))
    top = max((row.run for row in rows), default=-1)
    if top >= manifest.runs:
        conflicts.append(Conflict("--runs", str(top + 1), str(manifest.runs)))
    commits = {str(task.get("id")): task.get("sha") for task in manifest.tasks}
    for row in rows:
        sha = row.extra.get("task_base_sha")
        if row.task in commits and sha and commits[row.task] and sha != commits[row.task]:
            conflicts.append(Conflict(f"task {row.task} sha", str(sha), str(commits[row.task]), drift=True))
            break
    return tuple(conflicts)
