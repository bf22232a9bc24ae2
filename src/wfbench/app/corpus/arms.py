"""Arms are data: a named list of phases, plus (for a candidate) the incumbent it pairs with.

An :class:`Arm` says what sessions a cell runs and how each is contained: the prompt template
(``{task}``, ``{plan}``, ``{review_output}`` are filled in per cell), the skill the session
must invoke, the tools it may use, whether the workspace is writable, and any MCP/plugin
configuration. The reference harness's arms ship as presets built by :func:`preset_arms` with
configurable skill names; a corpus may define its own arms (see :mod:`wfbench.app.corpus.corpus`).

Candidate overlays (``--candidate-overlay DIR``) are validated here, before any session:
only Markdown files under the skill directories that the chosen candidate arms evaluate.
"""

from __future__ import annotations

import enum
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

from wfbench.app.corpus.plugins import CE_SKILLS, PluginIdentity
from wfbench.domain.errors import InputError


class TaskKind(enum.StrEnum):
    """What a task asks for: a code change graded by an oracle, or a review graded by labels."""

    IMPLEMENTATION = "implementation"
    REVIEW = "review"


class WorkspaceMode(enum.StrEnum):
    """Whether a phase may change the workspace."""

    WRITABLE = "writable"
    READ_ONLY = "read-only"


class PhaseRole(enum.StrEnum):
    """What a phase must leave behind (checked at the phase boundary)."""

    #: Exactly one new plan document under ``docs/plans``; nothing else changes.
    PLAN = "plan"
    #: Code changes; evaluated skills must not change.
    WORK = "work"
    #: A review artifact outside the workspace; the workspace must not change at all.
    REVIEW = "review"


#: Built-in tools every implementation session may use (the reference's BUILTIN_AGENT_TOOLS).
BUILTIN_TOOLS = ("Read", "Grep", "Glob", "Edit", "Write", "Bash", "Skill")
#: Review sessions lose Edit (Write stays: it writes the artifact outside the workspace).
REVIEW_TOOLS = ("Read", "Grep", "Glob", "Write", "Bash", "Skill")
#: Baselines without skills.
NO_SKILL_TOOLS = ("Read", "Grep", "Glob", "Edit", "Write", "Bash")

VERIFY_CLAUSE = (
    " Run the project's tests in the foreground and report their real output; never background"
    " them or wait on scheduled wake-ups."
)


@attrs.frozen
class Phase:
    """One agent session of an arm."""

    name: str
    prompt: str
    role: PhaseRole
    skill: str | None = None
    tools: tuple[str, ...] = BUILTIN_TOOLS
    disallowed_tools: tuple[str, ...] = ()
    workspace: WorkspaceMode = WorkspaceMode.WRITABLE
    mcp_config_json: str | None = None
    plugin_dirs: tuple[str, ...] = ()

    def render(self, *, task: str, plan: str = "", review_output: str = "") -> str:
        """The prompt for one cell (``{task}``, ``{plan}`` and ``{review_output}`` substituted)."""
        return (
            self.prompt.replace("{task}", task)
            .replace("{plan}", plan)
            .replace("{review_output}", review_output)
        )


#: The agents an arm may name (``agent:`` in a corpus).
AGENT_NAMES = ("claude", "codex", "gemini", "opencode", "standin")


@attrs.frozen
class AgentChoice:
    """The agent an arm runs (``claude``, ``codex``, ``gemini``, ``opencode``, ``standin``), maybe pinned.

    ``binary`` pins an install other than the default one (e.g. an older Codex, to gate an
    upgrade); the runtime identity of every row records the agent and its version either way.
    """

    name: str
    binary: str | None = None

    @property
    def key(self) -> str:
        """Identifies the adapter to build: the name, plus the binary when one is pinned."""
        return self.name if self.binary is None else f"{self.name}@{self.binary}"


@attrs.frozen
class Arm:
    """A named list of phases; a candidate pairs with ``incumbent`` and receives the overlay.

    ``agent`` and ``model`` are the arm's own agent and model (``None``: the run's ``--agent``
    and ``--model``), so one sweep can compare Claude Code and Codex on the same tasks.
    """

    name: str
    kind: TaskKind
    phases: tuple[Phase, ...]
    incumbent: str | None = None
    agent: AgentChoice | None = None
    model: str | None = None
    #: ``host`` keeps the host network for the arm's sessions (contaminating; docs/security.md).
    network: str = "model-only"
    #: The plugin the arm's phases load (``plugin_dirs``): the arm's identity instead of skill bytes.
    plugin: PluginIdentity | None = None
    #: What a candidate changes on purpose against its incumbent (``agent``, ``model``): the gate
    #: decides across a declared difference and refuses an undeclared one (``docs/arms.md``).
    migrates: tuple[str, ...] = ()

    @property
    def is_candidate(self) -> bool:
        """True when the arm evaluates a candidate overlay against its incumbent."""
        return self.incumbent is not None

    @property
    def evaluated_skills(self) -> tuple[str, ...]:
        """The skills this arm's sessions must invoke, in phase order, without repeats."""
        seen: list[str] = []
        for phase in self.phases:
            if phase.skill and phase.skill not in seen:
                seen.append(phase.skill)
        return tuple(seen)


@attrs.frozen
class SkillNames:
    """The skill names the preset arms evaluate (configurable per corpus)."""

    plan: str = "plan"
    work: str = "work"
    review: str = "review"


#: The skill-driven phase shapes of the preset arms: shape → (phase name, role, which skill,
#: prompt). ``{skill}`` in the prompt is the skill's name; ``{task}``, ``{plan}`` and
#: ``{review_output}`` are filled per cell.
_SKILL_PHASES: dict[str, tuple[str, PhaseRole, str, str]] = {
    "plan": (
        "plan",
        PhaseRole.PLAN,
        "plan",
        "Use the {skill} skill for: {task}\n\nYou are running headless: make choices"
        " without asking. Write exactly one plan document under docs/plans/ and change nothing"
        " else; the plan document is the deliverable.",
    ),
    "work": (
        "work",
        PhaseRole.WORK,
        "work",
        "Use the {skill} skill to execute the plan at {plan} for: {task}\n\nYou are"
        " running headless; report the Definition of Done." + VERIFY_CLAUSE,
    ),
    "direct": (
        "work",
        PhaseRole.WORK,
        "work",
        "Use the {skill} skill for: {task}\n\nDo not run a separate planning pass;"
        " implement directly." + VERIFY_CLAUSE,
    ),
    "review": (
        "review",
        PhaseRole.REVIEW,
        "review",
        "{task}\n\nUse the {skill} skill to review the local uncommitted changes."
        " You are running headless: do not post anything anywhere.\n\nReview output file:"
        " {review_output}\n\nWrite that file (and nothing else) as UTF-8 JSON of exactly this"
        ' shape: {"schema_version": 1, "verdict":'
        ' "approve|comment|request_changes", "findings": [{"id", "severity":'
        ' "critical|high|medium|low", "path", "line", "end_line", "category", "scenario",'
        ' "evidence", "recommendation", "blocking"}]}. Use an empty findings list with verdict'
        " approve when there are no actionable defects. Emit no Markdown and edit no other file.",
    ),
}
#: The preset arms' phase shapes, by workflow: ``workflow`` plans then works, ``direct`` works.
_WORKFLOWS: dict[str, tuple[str, ...]] = {
    "workflow": ("plan", "work"),
    "direct": ("direct",),
    "review": ("review",),
}


def _skill_phases(workflow: str, skills: SkillNames) -> tuple[Phase, ...]:
    """The phases of ``workflow`` (a :data:`_WORKFLOWS` key) with the skill names given."""
    phases: list[Phase] = []
    for shape in _WORKFLOWS[workflow]:
        name, role, which, prompt = _SKILL_PHASES[shape]
        skill: str = getattr(skills, which)
        phase = Phase(name=name, role=role, skill=skill, prompt=prompt.replace("{skill}", skill))
        if role is PhaseRole.REVIEW:  # a review reads the workspace and writes only its output file
            phase = attrs.evolve(phase, tools=REVIEW_TOOLS, workspace=WorkspaceMode.READ_ONLY)
        phases.append(phase)
    return tuple(phases)


_BASELINE_PROMPT = "{task}\n\nImplement the change and verify it by running the relevant tests yourself."
_NOMCP_NOTE = "\n\nNo skills, MCP servers or slash commands are available in this session."


def preset_arms(skills: SkillNames | None = None) -> dict[str, Arm]:
    """The reference harness's arms, with the skill names given (defaults: plan, work, review)."""
    s = skills or SkillNames()
    impl, review = TaskKind.IMPLEMENTATION, TaskKind.REVIEW
    workflow, direct, review_phases = (_skill_phases(w, s) for w in ("workflow", "direct", "review"))
    base = Phase(
        name="work", role=PhaseRole.WORK, prompt=_BASELINE_PROMPT + VERIFY_CLAUSE, disallowed_tools=("Skill",)
    )
    nomcp = attrs.evolve(
        base,
        prompt=_BASELINE_PROMPT + VERIFY_CLAUSE + _NOMCP_NOTE,
        tools=NO_SKILL_TOOLS,
        mcp_config_json='{"mcpServers":{}}',
    )
    arms = [
        Arm("workflow", impl, workflow),
        Arm("workflow_direct", impl, direct),
        Arm("review", review, review_phases),
        Arm("baseline", impl, (base,)),
        Arm("baseline_nomcp", impl, (nomcp,)),
        Arm("candidate_workflow", impl, workflow, incumbent="workflow"),
        Arm("candidate_workflow_direct", impl, direct, incumbent="workflow_direct"),
        Arm("candidate_review", review, review_phases, incumbent="review"),
    ]
    return {arm.name: arm for arm in arms}


#: The compound-engineering comparator presets (the corpus's ``ce_plugin`` makes them available).
CE_ARMS = ("ce_workflow", "ce_workflow_direct", "ce_review")


def ce_preset_arms(plugin: PluginIdentity) -> dict[str, Arm]:
    """``ce_workflow`` (ce-plan, then ce-work), ``ce_workflow_direct`` (ce-work) and ``ce_review``
    (ce-code-review, read-only workspace): the workflow shapes with the plugin mounted read-only."""
    s = SkillNames(*CE_SKILLS)
    impl, review = TaskKind.IMPLEMENTATION, TaskKind.REVIEW

    def loading(*phases: Phase) -> tuple[Phase, ...]:
        return tuple(attrs.evolve(phase, plugin_dirs=plugin.dirs) for phase in phases)

    arms = [
        Arm("ce_workflow", impl, loading(*_skill_phases("workflow", s)), plugin=plugin),
        Arm("ce_workflow_direct", impl, loading(*_skill_phases("direct", s)), plugin=plugin),
        Arm("ce_review", review, loading(*_skill_phases("review", s)), plugin=plugin),
    ]
    return {arm.name: arm for arm in arms}


def resolve_arms(
    names: Sequence[str], available: Mapping[str, Arm], *, source: str = "--arms"
) -> tuple[Arm, ...]:
    """The arms named, in order; unknown, duplicate or unpaired candidate arms are an InputError."""
    if not names:
        raise InputError("at least one arm is required", source=source)
    if len(set(names)) != len(names):
        raise InputError(f"arms must not repeat: {', '.join(names)}", source=source)
    chosen: list[Arm] = []
    for name in names:
        if name in CE_ARMS and name not in available:
            raise InputError(
                f"arm {name!r} compares against the compound-engineering plugin: give the corpus a"
                " `ce_plugin: <dir>` (a plugin with skills/ce-plan, ce-work and ce-code-review)",
                source=source,
            )
        if name not in available:
            known = ", ".join(sorted(available))
            raise InputError(f"unknown arm {name!r} (known: {known})", source=source)
        chosen.append(available[name])
    for arm in chosen:
        if arm.incumbent is not None and arm.incumbent not in names:
            raise InputError(
                f"candidate arm {arm.name} requires its incumbent arm {arm.incumbent}", source=source
            )
    return tuple(chosen)


# --- candidate overlays ------------------------------------------------------------------------

MAX_OVERLAY_ENTRIES = 256
MAX_OVERLAY_FILES = 64
MAX_OVERLAY_PATH_BYTES = 512
MAX_OVERLAY_BYTES = 4 * 1024 * 1024
SKILLS_DIR = ".claude/skills"
#: Instruction files an overlay may replace at the repository root (Codex reads AGENTS.md,
#: Claude Code CLAUDE.md): a candidate can be "my AGENTS.md" as well as "my skill".
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")


@attrs.frozen
class Overlay:
    """A validated candidate overlay: its files (sorted relative paths → bytes) and what it touches."""

    root: str
    files: tuple[tuple[str, bytes], ...]
    skills: tuple[str, ...]
    #: The root instruction files it holds (a subset of :data:`INSTRUCTION_FILES`).
    instructions: tuple[str, ...] = ()


def load_overlay(root: str, candidate_arms: Iterable[Arm]) -> Overlay:
    """Read and validate an overlay directory against the skills the candidate arms evaluate.

    Raises:
        InputError: anything but Markdown under ``.claude/skills/<evaluated skill>/`` or a root
            ``AGENTS.md`` / ``CLAUDE.md``, symlinks, special files, an empty overlay, or one over the
            entry/file/size limits.
    """
    allowed = {skill for arm in candidate_arms for skill in arm.evaluated_skills}
    real = os.path.realpath(root)
    if os.path.abspath(root) != real or not os.path.isdir(real):
        raise InputError(
            "must be a real directory (no symlinks in its path)", source=root, field="--candidate-overlay"
        )
    files = _walk_overlay(real)
    if not files:
        raise InputError("contains no files", source=root, field="--candidate-overlay")
    touched: set[str] = set()
    instructions: list[str] = []
    payload: list[tuple[str, bytes]] = []
    total = 0
    for rel in files:
        parts = rel.split("/")
        skill = parts[2] if len(parts) >= 4 and "/".join(parts[:2]) == SKILLS_DIR else None
        if rel in INSTRUCTION_FILES:
            instructions.append(rel)
        elif skill is None or skill not in allowed or not rel.lower().endswith(".md"):
            names = ",".join(sorted(allowed)) or "(no evaluated skill)"
            raise InputError(
                f"candidate overlays may only contain Markdown files under {SKILLS_DIR}/{{{names}}}"
                f" and a root {' or '.join(INSTRUCTION_FILES)}: {rel}",
                source=root,
            )
        with open(os.path.join(real, rel), "rb") as handle:
            data = handle.read(MAX_OVERLAY_BYTES + 1)
        total += len(data)
        if total > MAX_OVERLAY_BYTES:
            raise InputError(f"overlay exceeds {MAX_OVERLAY_BYTES} bytes", source=root)
        if skill is not None and rel not in INSTRUCTION_FILES:
            touched.add(skill)
        payload.append((rel, data))
    return Overlay(
        root=real, files=tuple(payload), skills=tuple(sorted(touched)), instructions=tuple(instructions)
    )


def _walk_overlay(root: str) -> list[str]:
    entries = 0
    files: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames) + sorted(filenames):
            entries += 1
            if entries > MAX_OVERLAY_ENTRIES:
                raise InputError(f"overlay exceeds the {MAX_OVERLAY_ENTRIES}-entry limit", source=root)
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if len(rel.encode()) > MAX_OVERLAY_PATH_BYTES:
                raise InputError(
                    f"overlay path exceeds {MAX_OVERLAY_PATH_BYTES} bytes: {rel[:80]}…", source=root
                )
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise InputError(f"overlay cannot contain symlinks: {rel}", source=root)
            if stat.S_ISREG(mode):
                files.append(rel)
            elif not stat.S_ISDIR(mode):
                raise InputError(f"overlay entry is neither a file nor a directory: {rel}", source=root)
    if len(files) > MAX_OVERLAY_FILES:
        raise InputError(f"overlay exceeds the {MAX_OVERLAY_FILES}-file limit", source=root)
    return sorted(files)


#: The preset candidate arms: what the rule asks for when the author chose no candidate of their own.
PRESET_CANDIDATES = frozenset({"candidate_workflow", "candidate_workflow_direct", "candidate_review"})


def required_candidate_arms(
    overlay_skills: Iterable[str],
    arms: Mapping[str, Arm],
    *,
    chosen: Sequence[str] = (),
    has_skill: Callable[[str], bool] | None = None,
) -> tuple[str, ...]:
    """The candidate arms an overlay must be evaluated in.

    With the presets: every preset candidate whose skills the overlay touches and the repository
    can run (``has_skill`` of each skill it evaluates; None: every skill is present) — a plan
    change needs ``candidate_workflow``; a work change needs ``candidate_workflow`` and
    ``candidate_workflow_direct``, or only the latter in a repository without a plan skill; a
    review change needs ``candidate_review`` (reference promotion.md §1.3). When ``chosen``
    holds a candidate arm of the author's own (not a preset), the author's pairs are the
    evaluation: the chosen candidates that touch the overlay's skills, and no preset.
    """
    touched = set(overlay_skills)

    def touches(arm: Arm) -> bool:
        return arm.is_candidate and bool(touched & set(arm.evaluated_skills))

    own = [n for n in chosen if n in arms and arms[n].is_candidate and n not in PRESET_CANDIDATES]
    if own:
        return tuple(n for n in chosen if n in arms and touches(arms[n]))
    return tuple(
        name
        for name, arm in arms.items()
        if name in PRESET_CANDIDATES
        and touches(arm)
        and (has_skill is None or arm.plugin is not None or all(map(has_skill, arm.evaluated_skills)))
    )


def runtime_candidate(arm: Arm, available: Mapping[str, Arm]) -> bool:
    """True for a candidate that differs from its incumbent in agent or model (a runtime change).

    Such a candidate is evaluated without an overlay: the runtime itself is what it proposes.
    """
    incumbent = available.get(arm.incumbent or "")
    return incumbent is not None and (arm.agent, arm.model) != (incumbent.agent, incumbent.model)


def check_overlay_arms(
    overlay: Overlay | None,
    chosen: Sequence[Arm],
    available: Mapping[str, Arm],
    *,
    has_skill: Callable[[str], bool] | None = None,
) -> None:
    """Refuse a sweep whose candidate arms do not match what the overlay touches.

    A candidate that only changes the runtime (:func:`runtime_candidate`) needs no overlay.
    ``has_skill`` says which skills the repository has (:mod:`wfbench.app.corpus.arm_fit`).
    """
    candidates = [arm for arm in chosen if arm.is_candidate]
    if overlay is None:
        needy = [arm for arm in candidates if not runtime_candidate(arm, available)]
        if needy:
            listed = ", ".join(arm.name for arm in needy)
            raise InputError(f"candidate arms ({listed}) need --candidate-overlay DIR", source="--arms")
        return
    if not candidates:
        raise InputError("an overlay needs at least one candidate arm", source="--candidate-overlay")
    names = [arm.name for arm in chosen]
    required = required_candidate_arms(overlay.skills, available, chosen=names, has_skill=has_skill)
    missing = [name for name in required if name not in names]
    if missing:
        incumbents = [i for n in missing if (i := available[n].incumbent) is not None and i not in names]
        wanted = ",".join([*names, *incumbents, *missing])
        raise InputError(
            f"the overlay touches {', '.join(overlay.skills)}; "
            f"it must be evaluated in {', '.join(missing)} too: add {' and '.join(missing)} to --arms"
            f" (--arms {wanted}), or pair a candidate arm of your own with its incumbent and run those"
            " (docs/arms.md, 'A repository with one skill')",
            source="--arms",
        )
    unexercised = set(overlay.skills) - {skill for arm in candidates for skill in arm.evaluated_skills}
    if unexercised:
        raise InputError(
            f"no chosen candidate arm exercises {', '.join(sorted(unexercised))}", source="--arms"
        )


def overlay_digest(overlay: Overlay) -> str:
    """sha256 over the overlay's files in path order, each path and content length-prefixed."""
    import hashlib

    digest = hashlib.sha256()
    for rel, data in overlay.files:
        for part in (rel.encode("utf-8"), data):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
    return digest.hexdigest()
