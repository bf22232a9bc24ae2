"""Load and validate a corpus: a YAML file of tasks (plus the files it names) and optional arms.

Everything is validated up front, before any session: a bad corpus fails with one
:class:`InputError` naming the file, the task id and the field. Paths in the corpus are
relative to the corpus file's directory. See ``docs/corpus.md`` for the format.

Binding (resolving refs, capturing hidden oracle files) needs git and the filesystem and goes
through the :class:`~wfbench.domain.ports.Workspaces` port: see :func:`wfbench.app.corpus.binding.bind_tasks`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from typing import Any

import attrs
import yaml

from wfbench.app.corpus.arms import (
    AGENT_NAMES,
    AgentChoice,
    Arm,
    Phase,
    PhaseRole,
    SkillNames,
    TaskKind,
    WorkspaceMode,
    ce_preset_arms,
    preset_arms,
)
from wfbench.app.corpus.environment_spec import parse_environment, parse_task_env
from wfbench.app.corpus.plugins import CE_SKILLS, PluginIdentity, plugin_identity
from wfbench.app.corpus.task_limits import LIMIT_KEYS, TaskLimits, parse_limits
from wfbench.domain.environment.spec import EnvironmentSpec
from wfbench.domain.errors import InputError
from wfbench.domain.promotion.migration import DIMENSIONS as MIGRATIONS
from wfbench.domain.promotion.policy import DecisionPolicy
from wfbench.domain.review.labels import parse_labels
from wfbench.domain.sweep.limits import MAX_WORKERS
from wfbench.domain.workspace.oracle import OracleFileSpec, OracleLimits

TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
ARM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
TOP_KEYS = frozenset(
    {
        "name",
        "tasks",
        "arms",
        "skills",
        "skill_mirrors",
        "ce_plugin",
        "provider_script",
        "defaults",
        "environment",
    }
)
TASK_KEYS = frozenset(
    {
        "id",
        "class",
        "kind",
        "repo",
        "ref",
        "prompt",
        "setup",
        "verify",
        "oracle",
        "labels",
        "expensive",
        "dependencies",
        "environment",
        "env",
        "gold_patch",
        "gold_script",
        "limits",
        "network",
    }
)
DEFAULT_KEYS = frozenset({"arms", "runs", "candidate_overlay", "workers", "model", "policy"})
PHASE_KEYS = frozenset(
    {"name", "role", "prompt", "skill", "tools", "disallowed_tools", "workspace", "mcp_config", "plugin_dirs"}
)
ARM_KEYS = frozenset({"kind", "phases", "incumbent", "agent", "model", "like", "network", "migrates"})
ORACLE_KEYS = frozenset({"command", "files", "report", "expect", "mount", "reward_above"})
#: ``oracle.report``: a JUnit report, or a reward file (Harbor's ``reward.txt``/``reward.json``).
REPORT_KINDS = ("junit", "reward")
#: ``network:`` of a task or an arm: the model endpoint only (the default), or the host's network.
NETWORK_MODES = ("model-only", "host")
REVIEW_LABELS_TARGET = "review-labels.json"


@attrs.frozen
class OracleSpec:
    """The hidden oracle: a command run after the agent exits, over files it never saw."""

    command: str
    files: tuple[OracleFileSpec, ...]
    #: ``junit``: the verdict needs the JUnit report the command writes to ``$WFBENCH_ORACLE_REPORT``.
    report: str | None = None
    #: Test ids (``<classname>::<name>``, or a bare name) the report must show passed.
    expect: tuple[str, ...] = ()
    #: Where the hidden files appear (None: the harness's own path; ``/tests`` for Harbor tasks).
    mount: str | None = None
    #: ``report: reward``: the oracle passes when the reward is above this (and it exited 0).
    reward_above: float = 0.0


@attrs.frozen
class Dependency:
    """A read-only path of the repository (``source``) mounted at ``target`` in the workspace."""

    source: str
    target: str


@attrs.frozen
class TaskSpec:
    """One task of a corpus, validated; ``repo`` is an absolute path."""

    id: str
    task_class: str
    kind: TaskKind
    repo: str
    ref: str
    prompt: str
    verify: str
    oracle: OracleSpec
    setup: str | None = None
    expensive: bool = False
    dependencies: tuple[Dependency, ...] = ()
    #: Built once per (snapshot, spec), mounted read-only at /env in every cell (None: no environment).
    environment: EnvironmentSpec | None = None
    #: Task variables (sorted name, value pairs) for setup, sessions, verify and the oracle.
    env: tuple[tuple[str, str], ...] = ()
    #: A patch (absolute path, in the corpus) that resolves the task: ``wfbench tasks validate`` applies it.
    gold_patch: str | None = None
    #: A script that resolves the task (Harbor's ``solve.sh``): ``tasks validate`` runs it instead.
    gold_script: str | None = None
    #: ``host`` keeps the host network for the task's agent sessions (contaminating; docs/security.md).
    network: str = "model-only"
    #: The task's own time limits (Harbor's ``timeout_sec``), else the sweep's.
    limits: TaskLimits = attrs.field(factory=TaskLimits)


@attrs.frozen
class CorpusDefaults:
    """Sweep defaults a corpus may carry (command-line options win)."""

    arms: tuple[str, ...] = ()
    runs: int | None = None
    candidate_overlay: str | None = None
    model: str | None = None
    #: ``reference`` or ``statistical``: which rule decides promotion (``None``: the reference).
    policy: DecisionPolicy | None = None
    workers: int | None = None


@attrs.frozen
class Corpus:
    """A loaded corpus: its file, the directory paths are relative to, tasks, arms and defaults."""

    path: str
    root: str
    name: str
    tasks: tuple[TaskSpec, ...]
    arms: Mapping[str, Arm]
    skills: SkillNames
    provider_script: str | None
    defaults: CorpusDefaults
    #: Directories of the repository that ship copies of the skills (``<mirror>/<skill>/``):
    #: ``wfbench promote apply`` writes a promoted overlay there too.
    skill_mirrors: tuple[str, ...] = ()


def load_corpus(path: str) -> Corpus:
    """Read, parse and validate a corpus file.

    Raises:
        InputError: naming the file, the task id (or arm) and the field.
    """
    source = os.path.abspath(path)
    try:
        with open(source, encoding="utf-8") as handle:
            raw = yaml.safe_load(handle)
    except FileNotFoundError:
        raise InputError("corpus file does not exist", source=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"corpus file is unreadable: {exc}", source=path) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = "" if mark is None else f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"not valid YAML{where}: {problem}", source=path) from None
    except RecursionError:
        raise InputError("not valid YAML: nested too deeply", source=path) from None
    try:
        return _corpus(raw, source)
    except InputError as exc:
        raise exc.located(source=path) from None


def _corpus(raw: Any, source: str) -> Corpus:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("tasks"), list) or not raw["tasks"]:
        raise InputError("a corpus must be a mapping with a non-empty `tasks` list")
    _no_unknown(raw, TOP_KEYS, locator="")
    root = os.path.dirname(source)
    skills = _skills(raw.get("skills"))
    arms = dict(preset_arms(skills))
    if raw.get("ce_plugin") is not None:
        plugin_dir = os.path.normpath(os.path.join(root, _text(raw["ce_plugin"], "ce_plugin", locator="")))
        arms.update(ce_preset_arms(plugin_identity([plugin_dir], field="ce_plugin", skills=CE_SKILLS)))
    for name, spec in _mapping(raw.get("arms", {}), "arms", locator="").items():
        arms[name] = _arm(name, spec, root, arms)
    for arm in arms.values():
        if arm.incumbent is not None and arm.incumbent not in arms:
            raise InputError(
                f"unknown incumbent arm {arm.incumbent!r}", locator=f"arm {arm.name}", field="incumbent"
            )
        _check_migration(arm, arms)
    environment = None
    if raw.get("environment") is not None:
        environment = parse_environment(raw["environment"], locator="", root=root)
    tasks = tuple(_task(item, index, root, environment) for index, item in enumerate(raw["tasks"]))
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise InputError("duplicate task id", locator=task.id, field="id")
        seen.add(task.id)
    defaults = _defaults(raw.get("defaults"), arms, root)
    script = raw.get("provider_script")
    if script is not None:
        script = _existing_file(
            _text(script, "provider_script", locator=""), root, "provider_script", locator=""
        )
    name = raw.get("name", os.path.basename(root))
    mirrors = tuple(
        _relative(m, "skill_mirrors", "") for m in _strings(raw.get("skill_mirrors", []), "skill_mirrors", "")
    )
    return Corpus(source, root, str(name), tasks, arms, skills, script, defaults, skill_mirrors=mirrors)


def _task(raw: Any, index: int, root: str, environment: EnvironmentSpec | None = None) -> TaskSpec:
    locator = f"task #{index + 1}"
    if not isinstance(raw, Mapping):
        raise InputError("must be a mapping", locator=locator)
    task_id = raw.get("id")
    if not isinstance(task_id, str) or not TASK_ID.match(task_id):
        raise InputError("must match [A-Za-z0-9][A-Za-z0-9._-]{0,127}", locator=locator, field="id")
    locator = task_id
    _no_unknown(raw, TASK_KEYS, locator=locator)
    kind_raw = raw.get("kind", "implementation")
    try:
        kind = TaskKind(kind_raw)
    except ValueError:
        raise InputError(
            f"must be implementation or review, not {kind_raw!r}", locator=locator, field="kind"
        ) from None
    repo = _text(raw.get("repo"), "repo", locator=locator)
    repo = os.path.normpath(os.path.join(root, os.path.expanduser(repo)))
    if not os.path.isdir(repo):
        raise InputError(f"repository does not exist: {repo}", locator=locator, field="repo")
    if "environment" in raw:
        environment = parse_environment(raw["environment"], locator=locator, root=root)
    gold = raw.get("gold_patch")
    if gold is not None:
        gold = _existing_file(_text(gold, "gold_patch", locator=locator), root, "gold_patch", locator=locator)
    script = raw.get("gold_script")
    if script is not None:
        if gold is not None:
            raise InputError("give gold_patch or gold_script, not both", locator=locator, field="gold_script")
        script = _existing_file(
            _text(script, "gold_script", locator=locator), root, "gold_script", locator=locator
        )
    expensive = raw.get("expensive", False)
    if not isinstance(expensive, bool):
        raise InputError("must be true or false", locator=locator, field="expensive")
    return TaskSpec(
        id=task_id,
        task_class=_text(raw.get("class"), "class", locator=locator),
        kind=kind,
        repo=repo,
        ref=_text(raw.get("ref", "HEAD"), "ref", locator=locator),
        prompt=_text(raw.get("prompt"), "prompt", locator=locator),
        verify=_text(raw.get("verify"), "verify", locator=locator),
        oracle=_oracle(raw, kind, locator, root),
        setup=_opt_text(raw.get("setup"), "setup", locator=locator),
        expensive=expensive,
        dependencies=_dependencies(raw.get("dependencies", []), locator),
        environment=environment,
        env=parse_task_env(raw.get("env"), locator=locator),
        gold_patch=gold,
        gold_script=script,
        network=network_mode(raw, locator),
        limits=_limits(raw.get("limits"), locator),
    )


def _oracle(raw: Mapping[str, Any], kind: TaskKind, locator: str, root: str) -> OracleSpec:
    """Implementation tasks need ``oracle``; review tasks need ``labels`` (the oracle is optional)."""
    labels = raw.get("labels")
    spec = raw.get("oracle")
    if kind is TaskKind.IMPLEMENTATION:
        if labels is not None:
            raise InputError("only review tasks have labels", locator=locator, field="labels")
        if spec is None:
            raise InputError("is required for implementation tasks", locator=locator, field="oracle")
    elif labels is None:
        raise InputError("is required for review tasks", locator=locator, field="labels")
    files: list[OracleFileSpec] = []
    command = 'test -s "$WFBENCH_REVIEW_OUTPUT"'
    report: str | None = None
    expect: tuple[str, ...] = ()
    if spec is not None:
        spec = _mapping(spec, "oracle", locator=locator)
        if not {"command", "files"} <= set(spec) <= ORACLE_KEYS:
            raise InputError(
                "must have `command` and `files` (and optionally `report`, `expect`, `mount`, "
                "`reward_above`)",
                locator=locator,
                field="oracle",
            )
        command = _text(spec["command"], "oracle.command", locator=locator)
        report = _opt_text(spec.get("report"), "oracle.report", locator=locator)
        if report not in (None, *REPORT_KINDS):
            raise InputError("must be `junit` or `reward` when given", locator=locator, field="oracle.report")
        expect = _strings(spec.get("expect", []), "oracle.expect", locator)
        if expect and report != "junit":
            raise InputError("needs `report: junit`", locator=locator, field="oracle.expect")
        if not isinstance(spec["files"], list):
            raise InputError("must be a list", locator=locator, field="oracle.files")
        for number, raw_item in enumerate(spec["files"]):
            field = f"oracle.files[{number}]"
            item = _mapping(raw_item, field, locator=locator)
            if set(item) != {"source", "target"}:
                raise InputError("must have exactly `source` and `target`", locator=locator, field=field)
            files.append(
                OracleFileSpec(
                    source=_text(item["source"], f"{field}.source", locator=locator),
                    target=_text(item["target"], f"{field}.target", locator=locator),
                )
            )
    if labels is not None:
        source = _checked_labels(labels, root, locator)
        files.append(OracleFileSpec(source=source, target=REVIEW_LABELS_TARGET))
    if not files:
        raise InputError("must name at least one file", locator=locator, field="oracle.files")
    mount, above = _oracle_placement(spec or {}, report, locator)
    return OracleSpec(
        command=command, files=tuple(files), report=report, expect=expect, mount=mount, reward_above=above
    )


def _limits(raw: Any, locator: str) -> TaskLimits:
    """``limits: {agent_timeout, verifier_timeout, cpus, memory, storage}`` (:mod:`.task_limits`)."""
    if raw is None:
        return TaskLimits()
    spec = _mapping(raw, "limits", locator=locator)
    _no_unknown(spec, LIMIT_KEYS, locator=locator, prefix="limits.")
    return parse_limits(spec, locator=locator)


def _oracle_placement(spec: Mapping[str, Any], report: str | None, locator: str) -> tuple[str | None, float]:
    """``oracle.mount`` (an absolute path for the hidden files) and ``oracle.reward_above``."""
    mount = spec.get("mount")
    if mount is not None and (
        not isinstance(mount, str)
        or not mount.startswith("/")
        or os.path.normpath(mount) != mount
        or mount in ("/", "/workspace", "/logs", "/logs/verifier")
        or mount.startswith(("/proc", "/dev", "/sys", "/usr", "/etc", "/workspace/"))
    ):
        raise InputError(
            "must be an absolute path outside the workspace and the system's directories (e.g. /tests)",
            locator=locator,
            field="oracle.mount",
        )
    above = spec.get("reward_above", 0.0)
    if "reward_above" in spec and report != "reward":
        raise InputError("needs `report: reward`", locator=locator, field="oracle.reward_above")
    if isinstance(above, bool) or not isinstance(above, int | float) or not math.isfinite(above):
        raise InputError("must be a number", locator=locator, field="oracle.reward_above")
    return mount, float(above)


def _checked_labels(raw: Any, root: str, locator: str) -> str:
    """The labels path, after parsing the file with the scorer's parser.

    Malformed labels would make every review cell of the task ``review-evidence-invalid`` at run
    time, blaming the agent; they are the corpus's error. A file that is missing, a symlink,
    outside the corpus directory or too large is left to binding, which refuses it by name.
    """
    source = _text(raw, "labels", locator=locator)
    base = os.path.realpath(root)
    path = os.path.join(base, os.path.normpath(source))
    if os.path.isabs(source) or os.path.realpath(path) != path or not os.path.isfile(path):
        return source
    try:
        with open(path, "rb") as handle:
            data = handle.read(OracleLimits().max_file_bytes + 1)
    except OSError:
        return source
    if len(data) > OracleLimits().max_file_bytes:
        return source
    try:
        parse_labels(data)
    except InputError as exc:
        detail = f"{exc.field}: {exc.reason}" if exc.field else exc.reason
        raise InputError(f"{source}: {detail}", locator=locator, field="labels") from None
    return source


def _dependencies(raw: Any, locator: str) -> tuple[Dependency, ...]:
    if not isinstance(raw, list):
        raise InputError("must be a list", locator=locator, field="dependencies")
    deps: list[Dependency] = []
    for number, raw_item in enumerate(raw):
        field = f"dependencies[{number}]"
        if isinstance(raw_item, str):
            raw_item = {"source": raw_item, "target": raw_item}  # noqa: PLW2901 - shorthand
        item = _mapping(raw_item, field, locator=locator)
        if set(item) != {"source", "target"}:
            raise InputError("must have exactly `source` and `target`", locator=locator, field=field)
        source = _relative(item["source"], f"{field}.source", locator)
        deps.append(Dependency(source=source, target=_relative(item["target"], f"{field}.target", locator)))
    return tuple(deps)


def _arm(name: Any, raw: Any, root: str, known: Mapping[str, Arm]) -> Arm:
    """One corpus arm; ``like: <arm>`` takes kind and phases from a preset or an arm defined above."""
    if not isinstance(name, str) or not ARM_NAME.match(name):
        raise InputError("arm names must match [A-Za-z0-9][A-Za-z0-9_-]{0,63}", field="arms")
    locator = f"arm {name}"
    raw = _mapping(raw, "arms", locator=locator)
    _no_unknown(raw, ARM_KEYS, locator=locator)
    like = _opt_text(raw.get("like"), "like", locator=locator)
    base = None if like is None else known.get(like)
    if like is not None and base is None:
        raise InputError(
            f"unknown arm {like!r} (a preset or an arm defined above)", locator=locator, field="like"
        )
    try:
        kind = TaskKind(raw.get("kind", base.kind.value if base is not None else "implementation"))
    except ValueError:
        raise InputError("must be implementation or review", locator=locator, field="kind") from None
    phases_raw = raw.get("phases")
    if base is not None and phases_raw is None:
        phases = base.phases
    else:
        if not isinstance(phases_raw, list) or not phases_raw:
            raise InputError("must be a non-empty list", locator=locator, field="phases")
        phases = tuple(_phase(item, number, locator, root) for number, item in enumerate(phases_raw))
    incumbent = _opt_text(raw.get("incumbent"), "incumbent", locator=locator)
    model = _opt_text(raw.get("model"), "model", locator=locator)
    agent = _agent(raw.get("agent"), locator, root)
    plugin = base.plugin if base is not None and phases is base.phases else _arm_plugin(phases, locator)
    return Arm(
        name=name,
        kind=kind,
        phases=phases,
        incumbent=incumbent,
        agent=agent,
        model=model,
        network=network_mode(raw, locator),
        plugin=plugin,
        migrates=_migrates(raw.get("migrates"), locator),
    )


def _migrates(raw: Any, locator: str) -> tuple[str, ...]:
    """``migrates: [agent, model]`` (or one of them as a string): the candidate's declared differences."""
    if raw is None:
        return ()
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not items or any(item not in MIGRATIONS for item in items):
        raise InputError(f"must be a list of {' and '.join(MIGRATIONS)}", locator=locator, field="migrates")
    return tuple(dimension for dimension in MIGRATIONS if dimension in items)


def _check_migration(arm: Arm, arms: Mapping[str, Arm]) -> None:
    """A declared migration needs an incumbent and a real difference from it in each declared dimension."""
    if not arm.migrates:
        return
    locator = f"arm {arm.name}"
    incumbent = arms.get(arm.incumbent or "")
    if incumbent is None:
        raise InputError(
            "only a candidate (an arm with an incumbent) migrates", locator=locator, field="migrates"
        )
    same = {"agent": arm.agent == incumbent.agent, "model": arm.model == incumbent.model}
    for dimension in arm.migrates:
        if same[dimension]:
            raise InputError(
                f"declares a {dimension} migration but runs the {dimension} of its incumbent"
                f" {incumbent.name}",
                locator=locator,
                field="migrates",
            )


def _arm_plugin(phases: tuple[Phase, ...], locator: str) -> PluginIdentity | None:
    """The identity of the plugins an arm loads, when each directory is a plugin (has plugin.json)."""
    dirs = sorted({d for phase in phases for d in phase.plugin_dirs})
    if not dirs or not all(os.path.isfile(os.path.join(d, ".claude-plugin", "plugin.json")) for d in dirs):
        return None
    try:
        return plugin_identity(dirs)
    except InputError as exc:
        raise InputError(exc.reason, locator=locator, field="phases.plugin_dirs") from None


def _agent(raw: Any, locator: str, root: str) -> AgentChoice | None:
    """``agent: codex`` or ``agent: {name: codex, binary: PATH}`` (a path relative to the corpus)."""
    if raw is None:
        return None
    spec = {"name": raw} if isinstance(raw, str) else _mapping(raw, "agent", locator=locator)
    _no_unknown(spec, frozenset({"name", "binary"}), locator=locator, prefix="agent.")
    name = spec.get("name")
    if name not in AGENT_NAMES:
        raise InputError(f"must be one of {', '.join(AGENT_NAMES)}", locator=locator, field="agent")
    binary = _opt_text(spec.get("binary"), "agent.binary", locator=locator)
    if binary is not None and name == "standin":
        raise InputError("the stand-in agent has no binary to pin", locator=locator, field="agent.binary")
    pinned = None if binary is None else os.path.normpath(os.path.join(root, os.path.expanduser(binary)))
    return AgentChoice(name=str(name), binary=pinned)


def network_mode(raw: Mapping[str, Any], locator: str) -> str:
    """The ``network:`` of a task or an arm (``model-only`` when absent)."""
    mode = raw.get("network", "model-only")
    if mode not in NETWORK_MODES:
        raise InputError(f"must be model-only or host, not {mode!r}", locator=locator, field="network")
    return str(mode)


def _phase(raw: Any, number: int, locator: str, root: str) -> Phase:
    field = f"phases[{number}]"
    raw = _mapping(raw, field, locator=locator)
    _no_unknown(raw, PHASE_KEYS, locator=locator, prefix=f"{field}.")
    try:
        role = PhaseRole(raw.get("role", "work"))
        workspace = WorkspaceMode(
            raw.get("workspace", "read-only" if role is PhaseRole.REVIEW else "writable")
        )
    except ValueError as exc:
        raise InputError(str(exc), locator=locator, field=field) from None
    mcp = raw.get("mcp_config")
    if mcp is not None and not isinstance(mcp, Mapping):
        raise InputError("must be a mapping", locator=locator, field=f"{field}.mcp_config")
    plugins = tuple(
        os.path.join(root, p) for p in _strings(raw.get("plugin_dirs", []), f"{field}.plugin_dirs", locator)
    )
    for plugin in plugins:
        if not os.path.isdir(plugin):
            raise InputError(f"{plugin} is not a directory", locator=locator, field=f"{field}.plugin_dirs")
    phase = Phase(
        name=_text(raw.get("name", role.value), f"{field}.name", locator=locator),
        role=role,
        prompt=_text(raw.get("prompt"), f"{field}.prompt", locator=locator),
        skill=_opt_text(raw.get("skill"), f"{field}.skill", locator=locator),
        workspace=workspace,
        mcp_config_json=None if mcp is None else yaml.safe_dump(dict(mcp), default_flow_style=True).strip(),
        plugin_dirs=plugins,
    )
    if "tools" in raw:
        phase = attrs.evolve(phase, tools=_strings(raw["tools"], f"{field}.tools", locator))
    if "disallowed_tools" in raw:
        phase = attrs.evolve(
            phase, disallowed_tools=_strings(raw["disallowed_tools"], f"{field}.disallowed_tools", locator)
        )
    if "{task}" not in phase.prompt:
        raise InputError("must contain {task}", locator=locator, field=f"{field}.prompt")
    return phase


def _skills(raw: Any) -> SkillNames:
    if raw is None:
        return SkillNames()
    raw = _mapping(raw, "skills", locator="")
    _no_unknown(raw, frozenset({"plan", "work", "review"}), locator="", prefix="skills.")
    return SkillNames(**{key: _text(value, f"skills.{key}", locator="") for key, value in raw.items()})


def _defaults(raw: Any, arms: Mapping[str, Arm], root: str) -> CorpusDefaults:
    if raw is None:
        return CorpusDefaults()
    raw = _mapping(raw, "defaults", locator="")
    _no_unknown(raw, DEFAULT_KEYS, locator="", prefix="defaults.")
    names = _strings(raw.get("arms", []), "defaults.arms", "")
    for name in names:
        if name not in arms:
            raise InputError(f"unknown arm {name!r}", field="defaults.arms")
    runs = raw.get("runs")
    if runs is not None and (isinstance(runs, bool) or not isinstance(runs, int) or runs < 1):
        raise InputError("must be a positive integer", field="defaults.runs")
    overlay = raw.get("candidate_overlay")
    if overlay is not None:
        overlay = os.path.normpath(
            os.path.join(root, _text(overlay, "defaults.candidate_overlay", locator=""))
        )
    model = _opt_text(raw.get("model"), "defaults.model", locator="")
    workers = raw.get("workers")
    bad_workers = isinstance(workers, bool) or not isinstance(workers, int) or not 0 < workers <= MAX_WORKERS
    if workers is not None and bad_workers:
        raise InputError(f"must be an integer from 1 to {MAX_WORKERS}", field="defaults.workers")
    policy = raw.get("policy")
    if policy is not None and (not isinstance(policy, str) or policy not in set(DecisionPolicy)):
        allowed = ", ".join(member.value for member in DecisionPolicy)
        raise InputError(f"must be one of {allowed}", field="defaults.policy")
    return CorpusDefaults(
        arms=names,
        runs=runs,
        candidate_overlay=overlay,
        model=model,
        workers=workers,
        policy=None if policy is None else DecisionPolicy(policy),
    )


# --- small validators ------------------------------------------------------------------------


def _no_unknown(raw: Mapping[str, Any], allowed: frozenset[str], *, locator: str, prefix: str = "") -> None:
    unknown = sorted(str(key) for key in raw if key not in allowed)
    if unknown:
        raise InputError(
            f"unknown key (allowed: {', '.join(sorted(allowed))})", locator=locator, field=prefix + unknown[0]
        )


def _mapping(raw: Any, field: str, *, locator: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise InputError("must be a mapping", locator=locator, field=field)
    return raw


def _text(raw: Any, field: str, *, locator: str) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise InputError("is required and must be a non-blank string", locator=locator, field=field)
    return raw


def _opt_text(raw: Any, field: str, *, locator: str) -> str | None:
    return None if raw is None else _text(raw, field, locator=locator)


def _strings(raw: Any, field: str, locator: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(item, str) and item for item in raw):
        raise InputError("must be a list of non-empty strings", locator=locator, field=field)
    return tuple(raw)


def _relative(raw: Any, field: str, locator: str) -> str:
    text = _text(raw, field, locator=locator)
    norm = os.path.normpath(text)
    if os.path.isabs(text) or norm == "." or norm.startswith("..") or "\x00" in text:
        raise InputError("must be a relative path inside the repository", locator=locator, field=field)
    return norm


def _existing_file(raw: str, root: str, field: str, *, locator: str) -> str:
    path = os.path.normpath(os.path.join(root, raw))
    if not os.path.isfile(path):
        raise InputError(f"file does not exist: {path}", locator=locator, field=field)
    return path
