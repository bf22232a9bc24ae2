"""The decision-first report: model, report.md, the overview page and its plots (pure, no disk)."""

from __future__ import annotations

import datetime as dt
import html
import math
import re
import xml.etree.ElementTree as ET

import attrs
import pytest

from tests.unit.promotion.promotion_fixtures import review_runs, runs, same
from wfbench.app.gating.gating import regate
from wfbench.app.report import plots
from wfbench.app.report.links import Links
from wfbench.app.report.markdown import render_markdown
from wfbench.app.report.model import ReportInputs, build_model
from wfbench.app.report.overview import render_overview
from wfbench.app.report.page import csp, data_table, script, style
from wfbench.app.report.svg import nice_ticks, place_labels
from wfbench.domain.promotion.evidence import RunStatus

NOW = dt.datetime(2026, 2, 1, tzinfo=dt.UTC)
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _modelled(rows, model="m-1"):
    return [attrs.evolve(r, extra={**r.extra, "benchmark_model": model, "cell_wall_s": 2.5}) for r in rows]


def _sweep(cand_cost=0.5, *, tasks=("task-a", "task-b")):
    rows = []
    for task in tasks:
        rows += runs(task, "baseline", same(3, cost_usd=0.2, resolved=False, error_kind="oracle-failed"))
        rows += runs(task, "workflow", same(3, cost_usd=1.0))
        rows += runs(task, "candidate_workflow", same(3, cost_usd=cand_cost))
    return _modelled(rows)


def _model(rows, *, statistics=True, **inputs):
    evidence = regate(rows, now=NOW).evidence
    promotion = None if evidence is None else evidence.to_mapping()
    if promotion is not None and not statistics:
        for decision in promotion["decisions"]:
            decision.pop("statistics", None)
            decision.pop("by_policy", None)
    return build_model(rows, ReportInputs(promotion=promotion, **inputs))


def _line(report: str, start: str) -> list[str]:
    return next(line for line in report.splitlines() if line.startswith(start)).split(" | ")


def test_the_report_opens_with_the_verdict_before_any_table():
    """Decision, reasons, spend and run status come first; tables follow."""
    report = render_markdown(_model(_sweep()))

    verdict = report.index("## Verdict")
    assert verdict < report.index("| ")
    assert "### `candidate_workflow` vs `workflow`: **PROMOTE**" in report
    assert "- median cost_usd improvement is 50.0% (required 5.0%)" in report
    assert "- Total spend: $10.2000 over 18 cell(s), from the rows' self-reported cost_usd" in report
    assert "- Run status: complete" in report
    assert report.index("## Per task: `candidate_workflow` vs its incumbent `workflow`") > verdict


def test_paired_results_compare_each_candidate_with_its_own_incumbent_not_the_baseline():
    """The candidate's saving is against workflow (+50%), never against baseline (−150%)."""
    report = render_markdown(_model(_sweep()))

    row = _line(report, "| task-a | bugfix | 3/3 | 3/3 |")
    assert row[4:8] == ["$1.0000", "$0.5000", "−$0.5000", "+50.0%"]
    assert "−150" not in report
    assert "savings %" not in report


def test_a_task_that_regresses_is_flagged_in_the_table_and_the_verdict():
    """A resolution drop and a spend regression beyond the policy's limit are both named."""
    rows = _sweep()
    rows = [
        attrs.evolve(r, resolved=False, error_kind=None, cost_usd=2.0)
        if (r.task, r.arm, r.run) == ("task-b", "candidate_workflow", 0)
        else attrs.evolve(r, cost_usd=2.0)
        if (r.task, r.arm) == ("task-b", "candidate_workflow")
        else r
        for r in rows
    ]
    model = _model(rows)
    report = render_markdown(model)

    flags = _line(report, "| task-b | bugfix |")[-1]
    assert "resolution dropped" in flags
    assert "regressed more than 20%" in flags
    assert (
        "- **Regressions flagged (1)**: task-b"
        " (resolution dropped; quality floor not met; regressed more than 20%)" in report
    )
    assert _line(report, "| task-a | bugfix |")[-1] == "— |"


def test_unknowns_print_n_a_and_never_none():
    """No statistics, no manifest, unknown costs: n/a everywhere, the word None nowhere."""
    rows = _modelled(runs("t", "workflow", same(2, cost_usd=None)) + runs("t", "candidate_workflow", same(2)))
    report = render_markdown(_model(rows, statistics=False))
    page = render_overview(_model(rows, statistics=False), Links())

    assert "None" not in report
    assert ">None<" not in page
    assert "- Effect on `cost_usd`: n/a" in report
    assert "- agent: n/a" in report
    assert "- What this sweep could detect: n/a (no statistics in promotion.json)" in report


def test_implementation_and_review_arms_are_reported_apart_with_health_for_every_arm():
    """Baseline and candidates get a health line too; review arms have their own quality table."""
    rows = _sweep() + _modelled(review_runs("case-1", "review", weighted_f1=0.6))
    report = render_markdown(_model(rows))

    impl = report.index("### Implementation arms")
    review = report.index("### Review arms")
    assert impl < review
    assert "| review | 1 | 3 | 0.600 |" in report
    for arm in ("baseline", "workflow", "candidate_workflow", "review"):
        assert f"- `{arm}`: OBSERVED_OK (fresh attempts" in report
    assert "| baseline | 2 | 0/6 | 0% [0–31%] |" in report


def test_the_real_cell_wall_time_is_reported_not_the_agents_duration():
    """cell_wall_s (2.5 s) is in the arm and task tables; the self-reported 60 s duration is not."""
    report = render_markdown(_model(_sweep()))

    assert "median cell wall s" in report
    assert _line(report, "| workflow | 2 | 6/6 |")[6] == "2.5"
    assert "| 60.0 |" not in report


def test_statistics_are_rendered_when_promotion_json_carries_them():
    """Effect and interval, sign test and the detectability sentence come from the statistics object."""
    rows = _sweep()
    promotion = regate(rows, now=NOW).evidence.to_mapping()
    promotion["decisions"][0]["statistics"] = {
        "metric": "cost_usd",
        "unit": "savings_pct",
        "effect": 49.9,
        "ci_low": 41.2,
        "ci_high": 55.0,
        "confidence": 0.9,
        "wins": 2,
        "losses": 0,
        "ties": 0,
        "sign_test_p": 0.5,
        "mde": 30.0,
        "resolution": {
            "metric": "resolved",
            "unit": "points",
            "effect": 0.0,
            "ci_low": -10.0,
            "ci_high": 10.0,
            "confidence": 0.9,
        },
        "tasks": [{"task": "task-a", "effect": 50.0, "effect_interval": [40.0, 60.0], "resolution_pts": 0.0}],
    }
    model = build_model(
        rows, ReportInputs(promotion=promotion, detectability={"candidate_workflow": "it can."})
    )
    report = render_markdown(model)

    assert "- Effect on `cost_usd`: +49.9% saved [90% CI +41.2% saved, +55.0% saved]" in report
    assert "- Effect on resolution: +0.0 pts [90% CI −10.0 pts, +10.0 pts]" in report
    assert "- Per task: 2 better / 0 worse / 0 tied (sign test p = 0.5)" in report
    assert "- What this sweep could detect: it can." in report
    assert "+50 [+40, +60]" in report
    svg = plots.forest(model.verdicts[0])
    assert svg.startswith("<svg")
    ET.fromstring(svg)


def test_the_gates_own_statistics_are_recomputed_and_their_detectability_said():
    """promotion.json from the gate carries statistics: the effect and the detectability sentence show."""
    report = render_markdown(_model(_sweep()))

    assert "- Effect on `cost_usd`: +50.0% saved [90% CI" in report
    # Every run alike: no noise to plan on, so the sweep cannot say (never "a saving of >= 0.0%").
    assert (
        "- What this sweep could detect: this sweep (2 tasks x 3 runs) cannot say what it could detect: "
        "nothing varied between its runs or tasks" in report
    )
    assert "The statistical policy says **" in report


def test_a_tampered_statistics_object_is_said_not_shown_as_evidence():
    """Statistics that disagree with their own samples give an explicit n/a sentence."""
    rows = _sweep()
    promotion = regate(rows, now=NOW).evidence.to_mapping()
    promotion["decisions"][0]["statistics"]["effect"] = 99.0
    report = render_markdown(build_model(rows, ReportInputs(promotion=promotion)))

    assert "- What this sweep could detect: n/a (the statistics object does not hold up:" in report


def test_the_verdict_shows_each_pairs_effects_the_other_policy_and_what_the_sweep_could_detect():
    """A statistical-policy sweep: its decision, the reference's beside it, intervals, the sentence."""
    from tests.unit.promotion.test_judging import ARM, sweep_rows
    from wfbench.domain.promotion.policy import PromotionPolicy

    rows = [attrs.evolve(row, extra={"model": "pinned-model"}) for row in sweep_rows()]
    result = regate(rows, now=NOW, policy=PromotionPolicy(decision_policy="statistical"))  # type: ignore[arg-type]
    report = render_markdown(build_model(rows, ReportInputs(promotion=result.evidence.to_mapping())))

    assert f"### `{ARM}` vs `workflow`: **PROMOTE**" in report
    assert "- The reference policy says **keep_incumbent**: " in report
    assert "- Effect on resolution: +58.3 pts [90% CI " in report
    # Every run costs the same: the cost MDE is unknown, the resolution one is not.
    assert (
        "- What this sweep could detect: this sweep (12 tasks x 3 runs) can detect a resolution change of >= "
        in report
    )
    assert "it cannot say whether it could detect the 5.0% asked for" in report


def test_an_aborted_sweep_says_so_in_the_verdict():
    """The run status of promotion.json and the status note are both shown."""
    rows = _sweep()
    evidence = regate(rows, now=NOW, run_status=RunStatus.ABORTED).evidence
    model = build_model(rows, ReportInputs(promotion=evidence.to_mapping(), status="Sweep aborted: outage"))
    report = render_markdown(model)

    assert "**INSUFFICIENT_EVIDENCE**" in report
    assert "- Run status: aborted — Sweep aborted: outage" in report


def test_markdown_cells_escape_pipes_and_the_report_ignores_row_order():
    """A task id with a pipe cannot break the table; shuffled rows give the same text."""
    rows = _modelled(runs("a|b", "workflow", same(2)))

    assert "| a\\|b |" in render_markdown(build_model(rows))
    assert render_markdown(build_model(rows)) == render_markdown(build_model(list(reversed(rows))))


def test_every_hostile_string_renders_as_text_in_the_overview():
    """A task id and an error detail full of markup are escaped everywhere on the page."""
    rows = _modelled(runs(HOSTILE, "workflow", same(2)) + runs(HOSTILE, "candidate_workflow", same(2)))
    page = render_overview(_model(rows), Links())

    assert "<script>alert" not in page
    assert "<img src=x" not in page
    assert html.escape(HOSTILE).replace("&quot;", '"')[:20] in page or "\\u003cscript" in page


def test_the_page_allows_only_its_own_style_and_script():
    """The CSP names the inline style and script by hash; nothing else may load or run."""
    page = render_overview(_model(_sweep()), Links())

    assert f'content="{csp()}"' in page
    assert "default-src 'none'" in csp()
    assert page.count("<script>") == 1
    assert f"<style>{style()}</style>" in page
    assert f"<script>{script()}</script>" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page


def test_table_data_cannot_close_its_script_block():
    """</script> in a value is escaped inside the JSON block."""
    block = data_table("t", [{"label": "x"}], [["</script><script>alert(1)</script>"]])

    assert "</script><script>alert" not in block
    assert "\\u003c/script\\u003e" in block


def test_every_plot_is_well_formed_svg_with_a_title():
    """The four plots parse as XML and every data mark has a hover title."""
    model = _model(_sweep() + _modelled(review_runs("case-1", "review")))
    for svg in (
        plots.paired_deltas(model.verdicts[0], Links()),
        plots.resolve_heatmap(model, "implementation", Links()),
        plots.resolve_heatmap(model, "review", Links()),
        plots.cost_vs_resolution(model),
    ):
        root = ET.fromstring(svg)
        assert root.find("{http://www.w3.org/2000/svg}title") is not None


def _texts(svg: str) -> list[tuple[float, float, str]]:
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    return [(float(t.get("x")), float(t.get("y")), "".join(t.itertext())) for t in root.iter(f"{ns}text")]


def test_paired_delta_labels_never_collide_at_a_thousand_tasks():
    """1,000 tasks draw as bars with only flagged and extreme tasks labelled, ≥ 14 px apart."""
    tasks = [f"task-{i:04d}" for i in range(1000)]
    rows = []
    for i, task in enumerate(tasks):
        rows += runs(task, "workflow", same(1, cost_usd=1.0))
        rows += runs(task, "candidate_workflow", same(1, cost_usd=0.5 + (i % 17) / 10))
    model = _model(_modelled(rows))
    svg = plots.paired_deltas(model.verdicts[0], Links())

    labels = sorted(y for x, y, text in _texts(svg) if x == 200 and text.startswith("task-"))
    assert 5 <= len(labels) < 80
    assert all(b - a >= 14 for a, b in zip(labels, labels[1:], strict=False))
    assert svg.count("<rect") == 1000
    root = ET.fromstring(svg)
    assert int(root.get("viewBox").split()[3]) < 900


def test_paired_deltas_draw_the_policys_thresholds_and_mark_regressions():
    """The promote threshold and the per-task regression limit are drawn; a regressed task gets a marker."""
    rows = _sweep()
    rows = [
        attrs.evolve(r, cost_usd=3.0) if (r.task, r.arm) == ("task-b", "candidate_workflow") else r
        for r in rows
    ]
    svg = plots.paired_deltas(_model(rows).verdicts[0], Links())

    assert "promote at median ≥ 5%" in svg
    assert "max task regression −20%" in svg
    assert svg.count('class="flag"') == 1


def test_ticks_cover_the_data_and_labels_are_spaced():
    """Axis ticks always reach past the largest value; placed labels keep their gap."""
    assert nice_ticks(0, 24.9)[-1] >= 24.9
    assert nice_ticks(-20, 3)[0] <= -20
    assert place_labels([(0, 0.0), (1, 5.0), (2, 14.0), (3, 30.0)], 14) == [0, 2, 3]


@pytest.mark.parametrize(
    ("low", "high"), [(0.0, 5e-324), (0.0, 1e-15), (1e-300, 2e-300), (0.0, 3e-9), (-1e-12, 0.0)]
)
def test_ticks_of_a_tiny_range_are_distinct_and_cover_it(low, high):
    """A cost of 5e-324 (a subnormal) once made the step 0 and ``log10`` raise."""
    ticks = nice_ticks(low, high)
    assert len(ticks) >= 2
    assert len(set(ticks)) == len(ticks)
    assert ticks[0] <= low
    assert ticks[-1] >= high
    assert all(math.isfinite(tick) for tick in ticks)


def test_overview_links_resolve_to_cells_tasks_and_arms():
    """Each (task, arm) row carries its run dots' base link; report mode links into cells/."""
    model = _model(_sweep())
    view = render_overview(model, Links())
    report = render_overview(model, Links(mode="report", sweep=""))

    assert '"cells/task-a/workflow/"' in view
    assert '"suffix":".html"' in view
    assert '"suffix":"/"' in report
    assert 'href="arms/workflow.html"' in view
    assert 'href="#arm-workflow"' in report
    assert re.search(r'href="tasks/task-b.html"', view)


def test_the_spend_says_it_was_metered_at_the_wire_when_every_row_was():
    """Rows with usage_source wire (issue 10): the total spend names the wire as its source."""
    wired = [attrs.evolve(r, extra={**r.extra, "usage_source": "wire"}) for r in _sweep()]
    report = render_markdown(_model(wired))
    assert "from usage metered at the wire by the key proxy, at the pinned model's prices" in report
    mixed = render_markdown(_model(wired[:6] + _sweep()[6:]))
    assert "from usage metered at the wire for 6 of 18 row(s), else self-reported" in mixed


def test_the_markdown_report_counts_the_oracle_outcome_classes_per_arm() -> None:
    """Issue 25 §5: the author sees why oracles failed (the ids stay in each cell's oracle.json)."""
    rows = _sweep()
    assert "## Hidden oracle outcomes" not in render_markdown(_model(rows))  # control: no outcome, no section
    classes = ["tests-failed", "canary-tripped", "tests-failed", "expected-ids-missing", "tests-failed"]
    outcomes = iter(classes * 9)
    marked = [
        attrs.evolve(r, extra={**r.extra, "oracle_outcome": next(outcomes)}) if r.arm == "baseline" else r
        for r in rows
    ]
    report = render_markdown(_model(marked))
    assert "## Hidden oracle outcomes" in report
    assert "- `baseline`: canary-tripped 1, expected-ids-missing 1, tests-failed 4" in report
