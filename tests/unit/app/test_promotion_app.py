"""The re-gate use case and report.md, over rows in memory (no disk, no clock)."""

from __future__ import annotations

import datetime as dt

import attrs

from tests.unit.promotion.promotion_fixtures import record, review_runs, runs, same
from wfbench.app.gating import regate, resolve_model
from wfbench.app.report_md import ReportContext, render_report_md
from wfbench.domain.promotion.evidence import EvidenceBindings, RunStatus
from wfbench.domain.promotion.gates import DecisionKind
from wfbench.domain.promotion.policy import GateKind, PromotionPolicy

NOW = dt.datetime(2026, 2, 1, tzinfo=dt.UTC)


def _modelled(rows, model="m-1"):
    return [attrs.evolve(row, extra={**row.extra, "benchmark_model": model}) for row in rows]


def _impl_rows(cand_cost=0.5):
    return _modelled(
        runs("task-a", "workflow", same(3, cost_usd=1.0))
        + runs("task-a", "candidate_workflow", same(3, cost_usd=cand_cost))
    )


def test_regate_judges_every_candidate_arm_present_in_pairing_order() -> None:
    """Implementation and review candidates both get a decision, review by the review gate."""
    rows = _impl_rows() + _modelled(
        review_runs("case-1", "review") + review_runs("case-1", "candidate_review", weighted_f1=0.9)
    )

    result = regate(rows, now=NOW)

    assert [d.candidate_arm for d in result.decisions] == ["candidate_workflow", "candidate_review"]
    assert [d.gate for d in result.decisions] == [GateKind.IMPLEMENTATION, GateKind.REVIEW]
    assert all(d.kind is DecisionKind.PROMOTE for d in result.decisions)
    assert result.evidence is not None
    assert result.evidence.generated_at == NOW
    assert result.model == "m-1"


def test_regate_without_candidates_has_no_evidence() -> None:
    """Only baseline rows: aggregates, no decisions, no evidence."""
    result = regate(runs("task-a", "baseline", same(3)), now=NOW)

    assert result.decisions == ()
    assert result.evidence is None
    assert ("task-a", "baseline") in result.table


def test_regate_uses_the_policy_and_custom_pairs() -> None:
    """The policy's metric and a custom pairing reach the gate."""
    rows = _modelled(runs("t", "mine", same(3, num_turns=10)) + runs("t", "mine_v2", same(3, num_turns=8)))

    result = regate(rows, now=NOW, pairs={"mine_v2": "mine"}, policy=PromotionPolicy(metric="num_turns"))

    (decision,) = result.decisions
    assert (decision.metric, decision.kind, decision.median_improvement_pct) == (
        "num_turns",
        DecisionKind.PROMOTE,
        20.0,
    )


def test_rows_that_disagree_on_the_model_cannot_promote() -> None:
    """Two benchmark models in the paired rows: no model, and the reason says why."""
    rows = _modelled(runs("task-a", "workflow", same(3, cost_usd=1.0)), "m-1")
    rows += _modelled(runs("task-a", "candidate_workflow", same(3, cost_usd=0.5)), "m-2")

    (decision,) = regate(rows, now=NOW).decisions

    assert decision.kind is DecisionKind.INSUFFICIENT_EVIDENCE
    assert decision.reasons[0] == "rows disagree on the benchmark model (m-1, m-2)"
    assert resolve_model(rows) == (None, "rows disagree on the benchmark model (m-1, m-2)")


def test_the_model_falls_back_to_the_rows_model_field() -> None:
    """Rows with only ``model`` (no benchmark_model) still name the model."""
    rows = [attrs.evolve(row, extra={"model": "m-9"}) for row in runs("t", "a", same(2))]

    assert resolve_model(rows) == ("m-9", None)
    assert resolve_model(runs("t", "a", same(2))) == (None, None)


def test_a_cancelled_row_marks_the_run_aborted_and_nothing_promotes() -> None:
    """A cancelled cell means the sweep did not finish: aborted evidence, insufficient decisions."""
    rows = _impl_rows() + [record("task-z", "baseline", 0, error_kind="cancelled", resolved=False)]

    result = regate(rows, now=NOW)

    assert result.evidence is not None
    assert result.evidence.run_status is RunStatus.ABORTED
    assert result.decisions[0].kind is DecisionKind.INSUFFICIENT_EVIDENCE
    assert regate(rows, now=NOW, run_status=RunStatus.COMPLETE).decisions[0].kind is DecisionKind.PROMOTE


def test_bindings_are_derived_from_what_the_rows_attest() -> None:
    """Task digests the rows agree on are recorded; disagreeing ones are left out."""
    rows = [
        attrs.evolve(r, extra={**r.extra, "oracle_digest": "o" * 64, "effort": "high"}) for r in _impl_rows()
    ]
    rows[0] = attrs.evolve(rows[0], extra={**rows[0].extra, "task_base_sha": "x"})
    rows[1] = attrs.evolve(rows[1], extra={**rows[1].extra, "task_base_sha": "y"})

    evidence = regate(rows, now=NOW).evidence

    assert evidence is not None
    assert evidence.bindings.selected_tasks == ({"id": "task-a", "oracle_digest": "o" * 64},)
    assert evidence.bindings.effort == "high"
    assert evidence.bindings.benchmark_model == "m-1"


def test_explicit_bindings_win_and_supply_the_model() -> None:
    """Bindings passed in are used as they are, model included."""
    rows = runs("task-a", "workflow", same(3, cost_usd=1.0)) + runs(
        "task-a", "candidate_workflow", same(3, cost_usd=0.5)
    )

    result = regate(rows, now=NOW, bindings=EvidenceBindings(benchmark_model="pinned"))

    assert result.decisions[0].kind is DecisionKind.PROMOTE
    assert result.evidence is not None
    assert result.evidence.bindings.benchmark_model == "pinned"


# --- report.md -----------------------------------------------------------------------------


def _report_rows():
    rows = runs(
        "task-a",
        "baseline",
        same(3, cost_usd=1.0, input_tokens=100, diff_files=2, diff_insertions=5, diff_deletions=1),
    )
    rows += runs("task-a", "workflow", same(3, cost_usd=None))
    rows += runs(
        "task-a",
        "candidate_workflow",
        [{"cost_usd": 0.5}, {"cost_usd": 0.5}, {"error_kind": "session-error", "resolved": False}],
    )
    return rows


def _line(report: str, start: str) -> list[str]:
    return next(line for line in report.splitlines() if line.startswith(start)).split(" | ")


def test_the_report_has_the_reference_table_with_n_a_for_unknowns() -> None:
    """Usage and cost that were not measured print n/a; excluded runs show beside resolved."""
    report = render_report_md(_report_rows())

    assert report.startswith("# wfbench workflow benchmark\n")
    header = "| task | class | arm | resolved | input | cache_create | cache_read | output | cost $ "
    assert header + "| wall s | turns | churn | errors |" in report
    baseline = _line(report, "| task-a | bugfix | baseline |")
    workflow = _line(report, "| task-a | bugfix | workflow |")
    candidate = _line(report, "| task-a | bugfix | candidate_workflow |")
    assert (baseline[4], baseline[8], baseline[11]) == ("100", "1.0000", "2/+5/−1")
    assert (workflow[4], workflow[8], workflow[11]) == ("n/a", "n/a", "n/a")
    assert candidate[3] == "2/2 (1 excluded)"
    assert candidate[12] == "session-error×1 |"


def test_savings_rows_follow_each_task_against_the_baseline() -> None:
    """One savings row per non-baseline arm; an unknown cost saving is n/a."""
    report = render_report_md(_report_rows())

    workflow = _line(report, "| task-a | bugfix | **workflow savings %** |")
    candidate = _line(report, "| task-a | bugfix | **candidate_workflow savings %** |")
    assert workflow[8] == "n/a"
    assert candidate[8] == "50.0"
    assert "**baseline savings %**" not in report
    assert (
        "savings"
        not in render_report_md(_report_rows(), ReportContext(baseline_arm="none"))
        .split("|---|")[-1]
        .split("\n\n")[0]
    )


def test_the_review_quality_table_appears_only_with_review_arms() -> None:
    """Review arms get the quality table; implementation-only rows do not."""
    review = render_report_md(review_runs("case-1", "review", weighted_f1=0.6))

    assert "## Review quality" in review
    row = _line(review, "| case-1 | review |")
    assert (row[3], row[8]) == ("0.0", "0.600")
    assert "## Review quality" not in render_report_md(_report_rows())


def test_footers_name_exclusions_uninvoked_skills_and_missing_transcripts() -> None:
    """Each footer appears only when its condition holds; the session-id footer always does."""
    plain = render_report_md(runs("t", "a", same(2)))
    rows = _report_rows() + [
        record(
            "task-a", "workflow", 7, error_kind="skill-not-invoked", resolved=False, transcript_missing=True
        )
    ]
    noisy = render_report_md(rows)

    assert "Session ids for every run are in results.jsonl" in plain
    assert "excluded" not in plain
    assert "1 run(s) hit session/infra errors" in noisy
    assert "1 run(s) never invoked the skill under test" in noisy
    assert "1 run(s) had no locatable session transcript" in noisy


def test_health_decisions_and_provenance_are_reported() -> None:
    """Health per arm, the decisions with reasons, and the provenance block."""
    rows = _impl_rows()
    promotion = regate(rows, now=NOW).evidence
    assert promotion is not None
    context = ReportContext(
        effort="xhigh", skipped_tasks=("task-huge",), ce_plugin=("1.0", "abc"), health_arms=("workflow",)
    )

    report = render_report_md(
        rows, context, promotion=promotion.to_mapping(), status="Sweep cancelled: SIGINT"
    )

    assert "- `workflow`: OBSERVED_OK (fresh attempts 3" in report
    assert "- `candidate_workflow`: OBSERVED" not in report
    assert "- `candidate_workflow` vs `workflow` (cost_usd): **promote**" in report
    assert "  - median cost_usd improvement is 50.0% (required 5.0%)" in report
    assert "- Benchmark model: `m-1`" in report
    assert "- Proposer model: `None`" in report
    assert "- Reasoning effort: `xhigh`" in report
    assert "- Selected tasks (1): task-a" in report
    assert "- Skipped expensive tasks (1): task-huge" in report
    assert "- Compound Engineering plugin: `1.0` (`abc`)" in report
    assert report.endswith("- Sweep cancelled: SIGINT\n")


def test_the_report_is_a_pure_function_of_its_inputs() -> None:
    """Same rows, same text; table cells escape pipes."""
    rows = runs("a|b", "arm", same(2))

    assert render_report_md(rows) == render_report_md(list(rows))
    assert "| a\\|b |" in render_report_md(rows)


def test_selected_tasks_order_the_table() -> None:
    """The context's task order wins over row order."""
    rows = runs("t1", "a", same(1)) + runs("t2", "a", same(1))

    report = render_report_md(rows, ReportContext(selected_tasks=("t2", "t1")))

    assert report.index("| t2 |") < report.index("| t1 |")
    assert "- Selected tasks (2): t2, t1" in report


def test_an_aborted_promotion_is_flagged() -> None:
    """An aborted evidence run status is called out above the decisions."""
    promotion = regate(_impl_rows(), now=NOW, run_status=RunStatus.ABORTED).evidence
    assert promotion is not None

    report = render_report_md(_impl_rows(), promotion=promotion.to_mapping())

    assert "Run status: aborted — partial evidence cannot promote." in report
    assert "**insufficient_evidence**" in report


def test_the_report_shows_each_pairs_effects_the_other_policy_and_what_the_sweep_could_detect() -> None:
    from tests.unit.promotion.test_judging import ARM, sweep_rows

    rows = [attrs.evolve(row, extra={"model": "pinned-model"}) for row in sweep_rows()]
    result = regate(rows, now=NOW, policy=PromotionPolicy(decision_policy="statistical"))  # type: ignore[arg-type]
    assert result.evidence is not None

    report = render_report_md(rows, promotion=result.evidence.to_mapping())

    assert f"- `{ARM}` vs `workflow` (cost_usd): **promote**" in report
    assert "  - decided by the statistical policy (reference: keep_incumbent)" in report
    assert "  - resolution: +58.3 points, 90% interval [" in report
    assert "(12 tasks x 3 runs)" in report
    assert "  - cost_usd saving: 0.0%, 90% interval [0.0%, 0.0%]" in report
    assert "  - this sweep (12 tasks x 3 runs) can detect a cost_usd saving of >= 0.0%" in report


def test_unreadable_statistics_are_named_in_the_report_not_fatal() -> None:
    from tests.unit.promotion.test_judging import sweep_rows

    rows = sweep_rows()
    result = regate(rows, now=NOW)
    assert result.evidence is not None
    promotion = result.evidence.to_mapping()
    promotion["decisions"][0]["statistics"]["effect"] = 99.0

    report = render_report_md(rows, promotion=promotion)

    assert "  - statistics: unreadable (statistics: disagrees with the analysis of its own samples)" in report
