# ruff: noqa: E501 - one validation case per line reads best
"""The corpus loader (every validation rule, on real files), arm presets, overlay validation and
the candidate arms an overlay requires."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from wfbench.app.corpus.arms import (
    AgentChoice,
    PhaseRole,
    SkillNames,
    TaskKind,
    WorkspaceMode,
    check_overlay_arms,
    load_overlay,
    overlay_digest,
    preset_arms,
    required_candidate_arms,
    resolve_arms,
    runtime_candidate,
)
from wfbench.app.corpus.corpus import load_corpus
from wfbench.domain.errors import InputError

ORACLE = {"command": "true", "files": [{"source": "oracle.py", "target": "test_o.py"}]}


def _base() -> dict[str, Any]:
    return {
        "name": "c",
        "tasks": [
            {"id": "t1", "class": "bug", "repo": "repo", "prompt": "p", "verify": "true", "oracle": ORACLE},
            {
                "id": "r1",
                "class": "review",
                "kind": "review",
                "repo": "repo",
                "prompt": "p",
                "verify": "true",
                "labels": "labels.json",
            },
        ],
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "repo").mkdir()
    (tmp_path / "oracle.py").write_text("def test_o():\n    pass\n")
    (tmp_path / "labels.json").write_text('{"schema_version": 1, "findings": []}')
    (tmp_path / "script.yaml").write_text("default: {say: hi}\n")
    return tmp_path


def _load(root: Path, data: Any) -> Any:
    path = root / "corpus.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return load_corpus(str(path))


def _refused(root: Path, data: Any) -> str:
    with pytest.raises(InputError) as info:
        _load(root, data)
    message = str(info.value)
    assert message.startswith(str(root / "corpus.yaml")), message
    return message


def test_a_valid_corpus_loads_with_defaults_filled_in(root):
    """Kinds, refs, repo paths (made absolute), presets and labels-as-oracle-files come out as declared."""
    corpus = _load(root, _base())
    impl, review = corpus.tasks
    assert (impl.kind, impl.ref, impl.repo) == (TaskKind.IMPLEMENTATION, "HEAD", str(root / "repo"))
    assert review.kind is TaskKind.REVIEW
    assert [f.target for f in review.oracle.files] == ["review-labels.json"]
    assert review.oracle.command == 'test -s "$WFBENCH_REVIEW_OUTPUT"'
    assert set(preset_arms()) <= set(corpus.arms)
    assert corpus.provider_script is None


def _with(path: str, value: Any) -> dict[str, Any]:
    """The base corpus with the dotted ``path`` set to ``value`` (``DELETE`` removes it)."""
    data = _base()
    *parents, last = path.split(".")
    node: Any = data
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    if value == "DELETE":
        del node[last]
    else:
        node[int(last) if last.isdigit() else last] = value
    return data


ARM = {"phases": [{"prompt": "do {task}"}]}
TASK_CASES = [
    ("tasks.0.id", "bad id!", "task #1: id: must match"),
    ("tasks.0.colour", "red", "t1: colour: unknown key"),
    ("tasks.0.kind", "essay", "t1: kind: must be implementation or review, not 'essay'"),
    ("tasks.0.repo", "missing", "t1: repo: repository does not exist"),
    ("tasks.0.repo", "DELETE", "t1: repo: is required"),
    ("tasks.0.class", "  ", "t1: class: is required and must be a non-blank string"),
    ("tasks.0.prompt", "DELETE", "t1: prompt: is required"),
    ("tasks.0.verify", 3, "t1: verify: is required"),
    ("tasks.0.expensive", "yes", "t1: expensive: must be true or false"),
    ("tasks.0.labels", "labels.json", "t1: labels: only review tasks have labels"),
    ("tasks.0.oracle", "DELETE", "t1: oracle: is required for implementation tasks"),
    (
        "tasks.0.oracle",
        {"command": "true"},
        "t1: oracle: must have `command` and `files` (and optionally `report`, `expect`, `mount`, `reward_above`)",
    ),
    ("tasks.0.oracle", {"command": "true", "files": "x"}, "t1: oracle.files: must be a list"),
    ("tasks.0.oracle", {"command": "true", "files": []}, "t1: oracle.files: must name at least one file"),
    ("tasks.0.oracle", {"command": "true", "files": [{"source": "a"}]}, "oracle.files[0]: must have exactly"),
    ("tasks.0.dependencies", "lib", "t1: dependencies: must be a list"),
    (
        "tasks.0.dependencies",
        ["/etc"],
        "dependencies[0].source: must be a relative path inside the repository",
    ),
    ("tasks.0.dependencies", ["../x"], "dependencies[0].source: must be a relative path"),
    ("tasks.0.dependencies", [{"source": "a"}], "dependencies[0]: must have exactly `source` and `target`"),
    ("tasks.1.labels", "DELETE", "r1: labels: is required for review tasks"),
    ("tasks.0", "just text", "task #1: must be a mapping"),
]
TOP_CASES = [
    ("colour", "red", "colour: unknown key"),
    ("tasks", [], "a corpus must be a mapping with a non-empty `tasks` list"),
    ("provider_script", "nope.yaml", "provider_script: file does not exist"),
    ("skills", {"plan": "p", "deploy": "d"}, "skills.deploy: unknown key"),
    ("skills", "plan", "skills: must be a mapping"),
    ("defaults", {"arms": ["nope"]}, "defaults.arms: unknown arm 'nope'"),
    ("defaults", {"runs": 0}, "defaults.runs: must be a positive integer"),
    ("defaults", {"runs": True}, "defaults.runs: must be a positive integer"),
    ("defaults", {"workers": 2, "retries": 1}, "defaults.retries: unknown key"),
    ("defaults", {"model": ""}, "defaults.model: is required"),
    ("defaults", {"policy": "bayesian"}, "defaults.policy: must be one of reference, statistical"),
    ("defaults", {"policy": ["statistical"]}, "defaults.policy: must be one of reference, statistical"),
    ("arms", {"bad name": ARM}, "arms: arm names must match"),
    ("arms", {"a": {**ARM, "colour": 1}}, "arm a: colour: unknown key"),
    ("arms", {"a": {**ARM, "kind": "essay"}}, "arm a: kind: must be implementation or review"),
    ("arms", {"a": {"phases": []}}, "arm a: phases: must be a non-empty list"),
    (
        "arms",
        {"a": {"phases": [{"prompt": "no placeholder"}]}},
        "arm a: phases[0].prompt: must contain {task}",
    ),
    ("arms", {"a": {"phases": [{"prompt": "{task}", "role": "deploy"}]}}, "arm a: phases[0]:"),
    ("arms", {"a": {"phases": [{"prompt": "{task}", "workspace": "rw"}]}}, "arm a: phases[0]:"),
    (
        "arms",
        {"a": {"phases": [{"prompt": "{task}", "mcp_config": "x"}]}},
        "phases[0].mcp_config: must be a mapping",
    ),
    ("arms", {"a": {"phases": [{"prompt": "{task}", "tools": "Read"}]}}, "phases[0].tools: must be a list"),
    ("arms", {"a": {"phases": [{"prompt": "{task}", "shell": 1}]}}, "arm a: phases[0].shell: unknown key"),
    ("arms", {"a": {**ARM, "incumbent": "ghost"}}, "arm a: incumbent: unknown incumbent arm 'ghost'"),
    (
        "arms",
        {"a": {**ARM, "agent": "aider"}},
        "arm a: agent: must be one of claude, codex, gemini, opencode, standin",
    ),
    ("arms", {"a": {**ARM, "agent": {"name": "codex", "path": "x"}}}, "arm a: agent.path: unknown key"),
    (
        "arms",
        {"a": {**ARM, "agent": {"name": "standin", "binary": "x"}}},
        "arm a: agent.binary: the stand-in",
    ),
    ("arms", {"a": {**ARM, "agent": ["codex"]}}, "arm a: agent: must be a mapping"),
    ("arms", {"a": {**ARM, "model": ""}}, "arm a: model:"),
    ("arms", {"a": {"like": "ghost"}}, "arm a: like: unknown arm 'ghost'"),
]


@pytest.mark.parametrize(("path", "value", "expected"), TASK_CASES + TOP_CASES)
def test_each_invalid_field_is_refused_naming_the_file_the_task_or_arm_and_the_field(
    root, path, value, expected
):
    """One InputError per rule: the message starts with the corpus file and names the id and field."""
    assert expected in _refused(root, _with(path, value))


def test_a_duplicate_task_id_is_refused(root):
    """Two tasks with one id: the second is named."""
    data = _base()
    data["tasks"].append(copy.deepcopy(data["tasks"][0]))
    assert "t1: id: duplicate task id" in _refused(root, data)


def test_unreadable_or_non_yaml_corpora_are_refused_with_the_file_named(root):
    """Missing file, invalid YAML and a YAML list each give one message naming the file."""
    with pytest.raises(InputError, match="corpus file does not exist"):
        load_corpus(str(root / "absent.yaml"))
    assert "not valid YAML" in _refused(root, "tasks: [unclosed\n")
    assert "must be a mapping" in _refused(root, "- a\n- b\n")


def test_corpus_arms_and_defaults_are_read_relative_to_the_corpus(root):
    """A corpus-defined arm, provider script and overlay resolve against the corpus directory."""
    data = _with(
        "arms",
        {"mine": {"kind": "review", "phases": [{"prompt": "{task} {review_output}", "role": "review"}]}},
    )
    data["provider_script"] = "script.yaml"
    data["defaults"] = {"arms": ["mine"], "runs": 2, "candidate_overlay": "ov", "model": "m-1"}
    corpus = _load(root, data)
    mine = corpus.arms["mine"]
    assert (mine.kind, mine.phases[0].role, mine.phases[0].workspace) == (
        TaskKind.REVIEW,
        PhaseRole.REVIEW,
        WorkspaceMode.READ_ONLY,
    )
    assert corpus.provider_script == str(root / "script.yaml")
    assert corpus.defaults.candidate_overlay == str(root / "ov")
    assert (corpus.defaults.arms, corpus.defaults.runs, corpus.defaults.model) == (("mine",), 2, "m-1")
    assert corpus.defaults.policy is None


def test_the_corpus_may_choose_the_statistical_policy(root):
    data = _base()
    data["defaults"] = {"policy": "statistical"}

    assert _load(root, data).defaults.policy == "statistical"


def test_an_arm_names_its_agent_and_model_and_may_be_like_another(root):
    """`agent: codex` (or a mapping with a pinned binary), `model:`, and `like:` copying kind and phases."""
    data = _with(
        "arms",
        {
            "codex_review": {"like": "review", "agent": "codex", "model": "gpt-5.5"},
            "old_codex": {
                "like": "workflow_direct",
                "agent": {"name": "codex", "binary": "tools/codex-0.170"},
            },
            "new_codex": {"like": "old_codex", "agent": "codex", "incumbent": "old_codex"},
        },
    )
    corpus = _load(root, data)
    review = corpus.arms["codex_review"]
    assert (review.kind, review.phases, review.model) == (
        TaskKind.REVIEW,
        corpus.arms["review"].phases,
        "gpt-5.5",
    )
    assert review.agent == AgentChoice("codex")
    assert review.incumbent is None
    old = corpus.arms["old_codex"]
    assert old.agent == AgentChoice("codex", binary=str(root / "tools" / "codex-0.170"))
    assert old.agent.key == f"codex@{root / 'tools' / 'codex-0.170'}"
    assert corpus.arms["review"].agent is None  # presets run the run's --agent
    # A candidate that changes only the runtime needs no overlay; one that changes nothing does.
    new = corpus.arms["new_codex"]
    assert runtime_candidate(new, corpus.arms)
    check_overlay_arms(None, [old, new], corpus.arms)
    same = _load(root, _with("arms", {"twin": {"like": "workflow_direct", "incumbent": "workflow_direct"}}))
    with pytest.raises(InputError, match=r"candidate arms \(twin\) need --candidate-overlay"):
        check_overlay_arms(None, [same.arms["workflow_direct"], same.arms["twin"]], same.arms)


def test_a_candidate_declares_the_agent_and_model_it_migrates_and_each_must_differ(root):
    """`migrates: [agent, model]` on a candidate; a declaration without a difference or an incumbent is refused."""
    migrating = {
        "like": "workflow_direct",
        "incumbent": "workflow_direct",
        "agent": "codex",
        "model": "gpt-5.5",
    }
    corpus = _load(root, _with("arms", {"codex_direct": {**migrating, "migrates": ["model", "agent"]}}))
    assert corpus.arms["codex_direct"].migrates == ("agent", "model")
    assert corpus.arms["workflow_direct"].migrates == ()
    one = _load(root, _with("arms", {"codex_direct": {**migrating, "migrates": "agent"}}))
    assert one.arms["codex_direct"].migrates == ("agent",)
    for arm, fragment in [
        (
            {**migrating, "model": None, "migrates": ["model"]},
            "declares a model migration but runs the model",
        ),
        ({"like": "workflow_direct", "migrates": ["agent"]}, "only a candidate"),
        ({**migrating, "migrates": ["prompt"]}, "must be a list of agent and model"),
        ({**migrating, "migrates": []}, "must be a list of agent and model"),
    ]:
        message = _refused(root, _with("arms", {"codex_direct": arm}))
        assert "arm codex_direct" in message
        assert "migrates" in message
        assert fragment in message


# --- presets ------------------------------------------------------------------------------


def test_presets_reproduce_the_reference_arms_with_configurable_skill_names():
    """Eight arms; workflow = plan + work, direct = work, review read-only, baselines without Skill."""
    arms = preset_arms(SkillNames(plan="p", work="w", review="r"))
    assert set(arms) == {
        "workflow",
        "workflow_direct",
        "review",
        "baseline",
        "baseline_nomcp",
        "candidate_workflow",
        "candidate_workflow_direct",
        "candidate_review",
    }
    assert arms["workflow"].evaluated_skills == ("p", "w")
    assert [p.role for p in arms["workflow"].phases] == [PhaseRole.PLAN, PhaseRole.WORK]
    assert arms["workflow_direct"].evaluated_skills == ("w",)
    assert arms["review"].phases[0].workspace is WorkspaceMode.READ_ONLY
    assert "Edit" not in arms["review"].phases[0].tools
    assert arms["baseline"].evaluated_skills == ()
    assert "Skill" in arms["baseline"].phases[0].disallowed_tools
    assert "Skill" not in arms["baseline_nomcp"].phases[0].tools
    assert arms["baseline_nomcp"].phases[0].mcp_config_json == '{"mcpServers":{}}'
    assert {n: a.incumbent for n, a in arms.items() if a.is_candidate} == {
        "candidate_workflow": "workflow",
        "candidate_workflow_direct": "workflow_direct",
        "candidate_review": "review",
    }
    assert arms["candidate_workflow"].phases == arms["workflow"].phases


def test_a_review_prompt_states_the_review_output_file_it_was_given():
    """The review phase tells the agent where to write (the provider's {review_output} reads it)."""
    prompt = preset_arms()["review"].phases[0].render(task="T", review_output="/x/out.json")
    assert "Review output file: /x/out.json" in prompt
    assert prompt.startswith("T\n")


def test_resolve_arms_refuses_unknown_repeated_and_unpaired_arms():
    """Unknown names, repeats and a candidate without its incumbent are usage errors."""
    arms = preset_arms()
    assert [a.name for a in resolve_arms(["workflow", "candidate_workflow"], arms)] == [
        "workflow",
        "candidate_workflow",
    ]
    for names, fragment in (
        (["nope"], "unknown arm 'nope'"),
        (["workflow", "workflow"], "must not repeat"),
        (["candidate_workflow"], "requires its incumbent arm workflow"),
        ([], "at least one arm"),
    ):
        with pytest.raises(InputError, match=fragment):
            resolve_arms(names, arms)


# --- overlays -----------------------------------------------------------------------------


def _overlay(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "overlay"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    root.mkdir(exist_ok=True)
    return root


def test_an_overlay_of_skill_markdown_loads_and_its_digest_covers_paths_and_bytes(tmp_path):
    """Markdown under an evaluated skill is accepted; the digest changes with a path or a byte."""
    cand = [preset_arms()["candidate_workflow"]]
    root = _overlay(tmp_path, {".claude/skills/plan/SKILL.md": "a", ".claude/skills/plan/ref/x.MD": "b"})
    overlay = load_overlay(str(root), cand)
    assert overlay.skills == ("plan",)
    assert [rel for rel, _ in overlay.files] == [
        ".claude/skills/plan/SKILL.md",
        ".claude/skills/plan/ref/x.MD",
    ]
    first = overlay_digest(overlay)
    (root / ".claude/skills/plan/SKILL.md").write_text("A")
    assert overlay_digest(load_overlay(str(root), cand)) != first


def test_an_overlay_may_replace_the_root_agents_md_or_claude_md(tmp_path):
    """Instruction files at the root are a candidate of their own: listed apart, no skill touched."""
    cand = [preset_arms()["candidate_workflow"]]
    root = _overlay(tmp_path, {"AGENTS.md": "be terse", "CLAUDE.md": "be terse too"})
    overlay = load_overlay(str(root), cand)
    assert (overlay.instructions, overlay.skills) == (("AGENTS.md", "CLAUDE.md"), ())
    check_overlay_arms(overlay, [preset_arms()["workflow"], *cand], preset_arms())
    other = tmp_path / "mixed"
    other.mkdir()
    mixed = load_overlay(str(_overlay(other, {"AGENTS.md": "x", ".claude/skills/plan/SKILL.md": "y"})), cand)
    assert (mixed.instructions, mixed.skills) == (("AGENTS.md",), ("plan",))


@pytest.mark.parametrize(
    ("files", "fragment"),
    [
        (
            {".claude/skills/plan/run.sh": "x"},
            "may only contain Markdown files under .claude/skills/{plan,work}",
        ),
        ({".claude/skills/review/SKILL.md": "x"}, "may only contain Markdown"),
        ({".claude/SKILL.md": "x"}, "may only contain Markdown"),
        ({"README.md": "x"}, "may only contain Markdown"),
        ({"docs/AGENTS.md": "x"}, "and a root AGENTS.md or CLAUDE.md: docs/AGENTS.md"),
        ({}, "contains no files"),
    ],
)
def test_an_overlay_with_anything_but_evaluated_skill_markdown_is_refused(tmp_path, files, fragment):
    """Scripts, other skills, files outside a skill directory and empty overlays are refused."""
    with pytest.raises(InputError, match=fragment.replace("{", r"\{").replace("}", r"\}")):
        load_overlay(str(_overlay(tmp_path, files)), [preset_arms()["candidate_workflow"]])


def test_an_overlay_with_a_symlink_or_too_many_files_is_refused(tmp_path):
    """A symlink inside, a symlinked root, and more than 64 files are refused before any session."""
    cand = [preset_arms()["candidate_workflow"]]
    root = _overlay(tmp_path, {".claude/skills/plan/SKILL.md": "a"})
    os.symlink("/etc/passwd", root / ".claude/skills/plan/leak.md")
    with pytest.raises(InputError, match="symlinks"):
        load_overlay(str(root), cand)
    os.unlink(root / ".claude/skills/plan/leak.md")
    os.symlink(root, tmp_path / "alias")
    with pytest.raises(InputError, match="real directory"):
        load_overlay(str(tmp_path / "alias"), cand)
    for index in range(65):
        (root / f".claude/skills/plan/f{index}.md").write_text("x")
    with pytest.raises(InputError, match="64-file limit"):
        load_overlay(str(root), cand)


def test_the_arms_an_overlay_requires_follow_from_the_skills_it_touches(tmp_path):
    """plan → candidate_workflow; work → both workflow candidates; review → candidate_review."""
    arms = preset_arms()
    assert required_candidate_arms(["plan"], arms) == ("candidate_workflow",)
    assert required_candidate_arms(["work"], arms) == ("candidate_workflow", "candidate_workflow_direct")
    assert required_candidate_arms(["review"], arms) == ("candidate_review",)
    assert required_candidate_arms([], arms) == ()
    both = [arms["candidate_workflow"], arms["candidate_workflow_direct"]]
    work = load_overlay(str(_overlay(tmp_path, {".claude/skills/work/SKILL.md": "w"})), both)
    chosen = [arms["workflow"], arms["candidate_workflow"]]
    with pytest.raises(InputError, match="must be evaluated in candidate_workflow_direct too"):
        check_overlay_arms(work, chosen, arms)
    check_overlay_arms(work, [*chosen, arms["workflow_direct"], arms["candidate_workflow_direct"]], arms)
    with pytest.raises(InputError, match="need --candidate-overlay"):
        check_overlay_arms(None, chosen, arms)
    with pytest.raises(InputError, match="needs at least one candidate arm"):
        check_overlay_arms(work, [arms["workflow"]], arms)


def test_a_repository_without_a_plan_skill_is_asked_only_for_the_arms_it_can_run(tmp_path):
    """A work change in a repository with only a work skill: candidate_workflow_direct, not candidate_workflow."""
    arms = preset_arms()
    only_work = {"work"}.__contains__
    assert required_candidate_arms(["work"], arms, has_skill=only_work) == ("candidate_workflow_direct",)
    work = load_overlay(
        str(_overlay(tmp_path, {".claude/skills/work/SKILL.md": "w"})), [arms["candidate_workflow_direct"]]
    )
    check_overlay_arms(
        work, [arms["workflow_direct"], arms["candidate_workflow_direct"]], arms, has_skill=only_work
    )
    wanted = r"add candidate_workflow_direct to --arms \(--arms baseline,candidate_workflow,workflow_direct,"
    with pytest.raises(InputError, match=wanted):
        check_overlay_arms(work, [arms["baseline"], arms["candidate_workflow"]], arms, has_skill=only_work)


def test_an_authors_own_candidate_pair_needs_no_preset_arm(tmp_path):
    """candidate_fix (like workflow_direct, incumbent fix) is the evaluation; no preset is asked for."""
    base = preset_arms()
    fix = attrs.evolve(base["workflow_direct"], name="fix")
    arms = {**base, "fix": fix, "candidate_fix": attrs.evolve(fix, name="candidate_fix", incumbent="fix")}
    assert required_candidate_arms(["work"], arms, chosen=["fix", "candidate_fix"]) == ("candidate_fix",)
    assert required_candidate_arms(["work"], arms) == ("candidate_workflow", "candidate_workflow_direct")
    work = load_overlay(
        str(_overlay(tmp_path, {".claude/skills/work/SKILL.md": "w"})), [arms["candidate_fix"]]
    )
    check_overlay_arms(work, [arms["fix"], arms["candidate_fix"]], arms)


@pytest.mark.parametrize("workers", [0, 65, True, "4"])
def test_the_corpus_workers_default_has_the_command_lines_bounds(root, workers):
    """``defaults.workers`` is bounded like ``--workers`` (1..MAX_WORKERS): outside, one line naming it."""
    data = _base()
    data["defaults"] = {"workers": workers}

    assert "defaults.workers" in _refused(root, data)


def test_the_corpus_may_ask_for_as_many_workers_as_the_command_line(root):
    from wfbench.domain.sweep.limits import MAX_WORKERS

    data = _base()
    data["defaults"] = {"workers": MAX_WORKERS}

    assert _load(root, data).defaults.workers == MAX_WORKERS == 64
