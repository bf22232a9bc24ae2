"""report.md names each arm's agent, version and model, from the rows alone."""

from __future__ import annotations

from wfbench.app.report.markdown import render_markdown
from wfbench.app.report.model import build_model
from wfbench.domain.results.rows import Row


def row(arm: str, **extra: object) -> Row:
    return Row(task="t", arm=arm, run=0, ok=True, resolved=True, extra=dict(extra))


def report(rows: list[Row]) -> str:
    return render_markdown(build_model(rows))


def test_the_report_lists_every_arms_agent_version_and_model_in_arm_order() -> None:
    rows = [
        row("workflow", agent="claude", agent_version="2.1.328 (Claude Code)", model="claude-sonnet-4-5"),
        row("codex_direct", agent="codex", agent_version="codex-cli 0.171.0", model="gpt-5.5"),
    ]
    (line,) = [text for text in report(rows).splitlines() if text.startswith("- agents by arm:")]
    assert line == (
        "- agents by arm: `workflow`: claude `2.1.328 (Claude Code)` (model `claude-sonnet-4-5`);"
        " `codex_direct`: codex `codex-cli 0.171.0` (model `gpt-5.5`)"
    )


def test_rows_without_an_agent_say_n_a_and_a_missing_version_is_said() -> None:
    assert "- agents by arm: n/a" in report([row("baseline")])
    assert "`baseline`: codex `version n/a` (model `gpt-5.5`)" in report(
        [row("baseline", agent="codex", model="gpt-5.5")]
    )
