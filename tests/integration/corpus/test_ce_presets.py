"""The compound-engineering comparator presets (`ce_workflow`, `ce_workflow_direct`, `ce_review`).

A corpus built from the demo's repository with a `ce_plugin:` directory (a Claude Code plugin
holding `skills/ce-plan`, `ce-work` and `ce-code-review`) runs the three presets through
`wfbench run` (stand-in agent, bwrap). The scripted model invokes the plugin's skills by their
plugin-qualified names (`compound-engineering:ce-plan`), as Claude Code names plugin skills.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.demo_run import bwrap_or_skip, rows, wfbench
from wfbench.app.corpus.plugins import plugin_identity
from wfbench.domain.errors import InputError

PLUGIN_JSON = {"name": "compound-engineering", "version": "0.0.0-fixture"}
FIX = (
    "    middle = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[middle]\n"
    "    return (ordered[middle - 1] + ordered[middle]) / 2\n"
)
USAGE = {
    "input_tokens": 900,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 5000,
    "output_tokens": 300,
}
FINDING = (
    '{"schema_version": 1, "verdict": "request_changes", "findings": [{"id": "f1", "severity": "high",'
    ' "path": "calc/stats.py", "line": 24, "end_line": 25, "category": "correctness", "scenario": "p=100",'
    ' "evidence": "ordered[rank] indexes one past the end", "recommendation": "clamp the rank",'
    ' "blocking": true}]}'
)


def _plugin(root: Path) -> Path:
    plugin = root / "ce-plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps(PLUGIN_JSON))
    for skill in ("ce-plan", "ce-work", "ce-code-review"):
        (plugin / "skills" / skill).mkdir(parents=True)
        (plugin / "skills" / skill / "SKILL.md").write_text(
            f"---\nname: {skill}\ndescription: compound-engineering {skill}\n---\n# {skill}\n\nDo it well.\n"
        )
    return plugin


def _turns(skill: str | None, *tools: dict[str, Any]) -> list[dict[str, Any]]:
    first = [{"name": "Skill", "input": {"skill": f"compound-engineering:{skill}"}}] if skill else []
    return [
        {"say": "Starting.", "tools": first, "usage": USAGE}
        if first
        else {"say": "Starting.", "usage": USAGE},
        {"tools": list(tools), "usage": USAGE},
        {"say": "Done.", "usage": USAGE},
    ]


def _script(root: Path, plugin: Path) -> Path:
    base = yaml.safe_load(resources.files("wfbench.demo").joinpath("provider.yaml").read_text())
    write_plan = {
        "name": "Write",
        "input": {"file_path": "{workspace}/docs/plans/fix.md", "content": "# Plan\n"},
    }
    stats = "{workspace}/calc/stats.py"
    old = "    return ordered[len(ordered) // 2]\n"
    owned = str(plugin / "skills" / "ce-work" / "SKILL.md")
    edit = [
        {"name": "Read", "input": {"file_path": stats}},
        {"name": "Edit", "input": {"file_path": stats, "old_string": old, "new_string": FIX}},
        # the plugin is mounted read-only where the agent is told: it reads, but this write fails
        {"name": "Read", "input": {"file_path": owned}},
        {"name": "Write", "input": {"file_path": owned, "content": "owned\n"}},
    ]
    review = {"name": "Write", "input": {"file_path": "{review_output}", "content": FINDING}}
    approve = {
        "name": "Write",
        "input": {
            "file_path": "{review_output}",
            "content": '{"schema_version": 1, "verdict": "approve", "findings": []}',
        },
    }
    rules = [
        {
            "when": ["even number of values", "Use the ce-plan skill for"],
            "turns": _turns("ce-plan", write_plan),
        },
        {"when": ["even number of values", "Use the ce-work skill"], "turns": _turns("ce-work", *edit)},
        {"when": ["PR #41", "Use the ce-code-review skill"], "turns": _turns("ce-code-review", review)},
        # negative control: the session never invokes the plugin's skill
        {"when": ["PR #42", "Use the ce-code-review skill"], "turns": _turns(None, approve)},
    ]
    base["conversations"] = rules + base["conversations"]
    path = root / "provider-ce.yaml"
    path.write_text(yaml.safe_dump(base, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def ce_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo corpus with a ce_plugin, a provider script for the CE sessions, three presets."""
    from wfbench.demo import materialize

    root = tmp_path_factory.mktemp("ce")
    corpus = Path(materialize(str(root / "corpus")))
    plugin = _plugin(corpus.parent)
    raw = yaml.safe_load(corpus.read_text())
    raw["ce_plugin"] = "ce-plugin"
    raw["provider_script"] = str(_script(corpus.parent, plugin))
    raw["tasks"] = [t for t in raw["tasks"] if t["id"] in ("fix-median", "review-pr-41", "review-pr-42")]
    raw["defaults"] = {
        **raw["defaults"],
        "arms": ["ce_workflow", "ce_workflow_direct", "ce_review"],
        "runs": 1,
    }
    corpus.write_text(yaml.safe_dump(raw, sort_keys=False))
    return corpus


@pytest.fixture(scope="module")
def ce_sweep(ce_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    bwrap_or_skip()
    out = tmp_path_factory.mktemp("ce-sweep") / "out"
    done = wfbench("run", str(ce_corpus), "--out", str(out), "--workers", "3")
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return out


def _row(out: Path, task: str, arm: str) -> dict[str, Any]:
    return next(r for r in rows(out) if (r["task"], r["arm"]) == (task, arm))


def test_each_preset_invokes_its_plugin_skill_and_is_graded(ce_sweep: Path) -> None:
    """ce_workflow (ce-plan, ce-work), ce_workflow_direct (ce-work), ce_review (ce-code-review)."""
    for arm in ("ce_workflow", "ce_workflow_direct"):
        row = _row(ce_sweep, "fix-median", arm)
        assert row["skill_invoked"] is True, row
        assert row["resolved"] is True, row
    review = _row(ce_sweep, "review-pr-41", "ce_review")
    assert review["skill_invoked"] is True
    assert review["resolved"] is True
    assert review["review_weighted_f1"] == 1.0


def test_a_ce_session_that_never_invokes_its_skill_is_skill_not_invoked(ce_sweep: Path) -> None:
    """Negative control: the plugin's skill was never called → skill-not-invoked, never a pass."""
    row = _row(ce_sweep, "review-pr-42", "ce_review")

    assert row["skill_invoked"] is False
    assert row["error_kind"] == "skill-not-invoked"
    assert row["resolved"] is False


def test_ce_rows_carry_the_plugin_identity(ce_sweep: Path, ce_corpus: Path) -> None:
    """Every CE row records the plugin's version and manifest digest (reuse and evidence match on them)."""
    identity = plugin_identity([str(ce_corpus.parent / "ce-plugin")])
    ce_rows = [r for r in rows(ce_sweep) if r["arm"].startswith("ce_")]

    assert ce_rows
    assert {(r["ce_plugin_version"], r["ce_plugin_manifest_digest"]) for r in ce_rows} == {
        ("0.0.0-fixture", identity.manifest_digest)
    }


def test_the_plugin_is_mounted_read_only(ce_sweep: Path, ce_corpus: Path) -> None:
    """The scripted work session's Write into the plugin failed; the host's plugin file is unchanged."""
    skill = ce_corpus.parent / "ce-plugin" / "skills" / "ce-work" / "SKILL.md"

    row = _row(ce_sweep, "fix-median", "ce_workflow_direct")
    transcript = b"".join((ce_sweep / t["path"]).read_bytes() for t in row["transcript_artifacts"]).decode()

    assert "owned" not in skill.read_text()
    assert str(skill) in transcript  # positive control: the write was attempted
    assert "Do it well." in transcript  # the plugin's skill text was readable at that path
    assert "Read-only file system" in transcript
    assert row["resolved"] is True


def test_ce_rows_are_reused_until_the_plugin_changes(ce_sweep: Path, ce_corpus: Path, tmp_path: Path) -> None:
    """--reuse-results: CE rows reused (one paid canary per arm); after editing the plugin, none."""
    again = tmp_path / "again"
    done = wfbench(
        "run",
        str(ce_corpus),
        "--out",
        str(again),
        "--arms",
        "ce_review",
        "--runs",
        "1",
        "--reuse-results",
        str(ce_sweep),
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    reused = [r for r in rows(again) if r.get("reused")]
    # review-pr-42's skill-not-invoked row is never reusable, so review-pr-41's is (no canary needed)
    assert [(r["task"], r["arm"]) for r in reused] == [("review-pr-41", "ce_review")]

    copy = tmp_path / "corpus"
    shutil.copytree(ce_corpus.parent, copy)
    (copy / "ce-plugin" / "skills" / "ce-code-review" / "SKILL.md").write_text("# changed\n")
    changed = tmp_path / "changed"
    done = wfbench(
        "run",
        str(copy / "corpus.yaml"),
        "--out",
        str(changed),
        "--arms",
        "ce_review",
        "--runs",
        "1",
        "--reuse-results",
        str(ce_sweep),
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert not [r for r in rows(changed) if r.get("reused")]


def test_a_ce_arm_without_a_ce_plugin_is_refused_with_what_to_add(tmp_path: Path) -> None:
    """No `ce_plugin:` in the corpus: one line naming the key, exit 2."""
    done = wfbench("run", "--arms", "ce_review", "--out", str(tmp_path / "o"))

    assert done.returncode == 2
    assert "ce_plugin" in done.stderr


@pytest.mark.parametrize("damage", ["no-manifest", "no-skill", "symlink"])
def test_a_broken_ce_plugin_is_refused(tmp_path: Path, damage: str) -> None:
    """A plugin without plugin.json, without one of the three skills, or holding a symlink."""
    plugin = _plugin(tmp_path)
    if damage == "no-manifest":
        (plugin / ".claude-plugin" / "plugin.json").unlink()
    elif damage == "no-skill":
        shutil.rmtree(plugin / "skills" / "ce-plan")
    else:
        (plugin / "skills" / "ce-work" / "link.md").symlink_to("/etc/passwd")

    with pytest.raises(InputError):
        plugin_identity([str(plugin)], field="ce_plugin", skills=("ce-plan", "ce-work", "ce-code-review"))
