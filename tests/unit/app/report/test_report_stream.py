"""The report model built in one pass equals the row-holding model it replaced, and keeps no row.

``wfbench report`` reads ``results.jsonl`` once (``read_for_report``): every row goes to the gate's
builders and to the report's ``ModelBuilder`` and is dropped. These properties compare the model it
builds with the old one (``tests/unit/app/report/report_model_oracle.py``: rows held per group, per-arm
totals recomputed from them) field by field, on rows of every value shape plus the fields only the
report reads (kind, cell wall time, recording dates, agents, diagnostics, wire metering).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import wide_rows
from tests.unit.app.report.report_model_oracle import naive_build_model
from wfbench.app.gating.gating import gate_input
from wfbench.app.report.model import ModelBuilder, ReportInputs, build_model
from wfbench.app.report.render import read_for_report, render_model, render_reports
from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.results.summary import summarize

relaxed = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_REPORT_EXTRA: dict[str, list[Any]] = {
    "kind": ["implementation", "review", 3],
    "cell_wall_s": [0.1, 2.5, 7, None, True, 1e300],
    "recorded_at": ["2026-01-02T00:00:00+00:00", "2026-01-09T10:00:00Z", "2025-12-31", 5],
    "reused_from_recorded_at": ["2025-11-30T00:00:00+00:00"],
    "agent": ["claude", "codex", ""],
    "agent_version": ["2.1.3", None],
    "usage_source": ["wire", "self"],
    "evidence_diagnostics": [[], ["a"], [f"d{i}" for i in range(13)]],
    "sandbox_backend": ["bwrap", ""],
    "runtime_digest": ["r1", "r2"],
}


@st.composite
def report_rows(draw: st.DrawFn) -> Row:
    """A row of any value shape, with the fields only the report reads."""
    row = draw(wide_rows())
    extra = dict(row.extra)
    for name, values in _REPORT_EXTRA.items():
        if draw(st.booleans()):
            extra[name] = draw(st.sampled_from(values))
    kind = draw(st.none() | st.sampled_from(list(ErrorKind)))
    return attrs.evolve(row, run=draw(st.integers(0, 4)), error_kind=kind, extra=extra)


def _same(left: object, right: object) -> bool:
    """Equality that also tells 0.0 from -0.0 and 1 from 1.0 (the one-pass model must not drift)."""
    return repr(left) == repr(right) and left == right


@relaxed
@given(st.lists(report_rows(), max_size=24))
def test_the_one_pass_model_equals_the_row_holding_model(rows: list[Row]) -> None:
    """Every field: table, orders, kinds, cells, per-arm totals (spend, medians, health), provenance."""
    inputs = ReportInputs(title="t")
    streamed, naive = build_model(iter(rows), inputs), naive_build_model(rows, inputs)

    for field in attrs.fields(type(naive)):
        assert _same(getattr(streamed, field.name), getattr(naive, field.name)), field.name


@relaxed
@given(st.lists(report_rows(), max_size=24))
def test_read_for_report_is_the_gate_input_and_the_model_of_the_same_rows(rows: list[Row]) -> None:
    """The report command's one pass gives the gate what gate_input gives it and the same model."""
    read, builder = read_for_report(iter(rows))

    assert read == gate_input(rows)
    assert builder.build(read.summary, ReportInputs()) == build_model(rows, ReportInputs())
    assert render_model(builder.build(read.summary, ReportInputs())) == render_reports(rows, ReportInputs())


def test_spend_is_summed_in_the_old_order_so_floats_do_not_drift() -> None:
    """Costs add up per (task, arm) group in first-seen order, as the row-holding model summed them."""
    costs = [0.1, 1e16, 0.3, -1e16, 0.7, 0.2]
    rows = [
        Row(task=f"t{i % 3}", arm="workflow", run=i, cost_usd=cost, ok=True, resolved=True)
        for i, cost in enumerate(costs)
    ]

    spend = build_model(rows).arm_totals["workflow"].spend

    assert spend == naive_build_model(rows).arm_totals["workflow"].spend
    assert spend != sum(costs)  # summed in row order it would differ


def test_the_model_builder_keeps_no_row_alive() -> None:
    """Memory is the model's: once a row is added, nothing of it but its CellRef's values survives."""
    refs: list[weakref.ref[Row]] = []

    def stream() -> Iterator[Row]:
        for run in range(200):
            row = Row(
                task=f"t{run % 7}",
                arm="review" if run % 2 else "workflow",
                run=run,
                resolved=run % 3 == 0,
                cost_usd=0.5 + run,
                review={"review_weighted_f1": run / 200},
                extra={
                    "benchmark_model": "m",
                    "cell_wall_s": 1.5,
                    "recorded_at": "2026-01-01T00:00:00Z",
                    "evidence_diagnostics": ["x"],
                },
            )
            refs.append(weakref.ref(row))
            yield row

    builder = ModelBuilder()
    rows = list(stream())
    summary = summarize(rows)
    for row in rows:
        builder.add(row)
    del row, rows
    model = builder.build(summary)
    gc.collect()

    assert model.rows == 200
    assert all(ref() is None for ref in refs)


def test_cells_share_their_groups_task_and_arm_strings() -> None:
    """Each cell reference holds its group's strings, not a copy per row (a million rows, two copies less)."""
    rows = [Row(task="".join(["t", "1"]), arm="".join(["w", "f"]), run=run) for run in range(3)]
    builder = ModelBuilder()
    for row in rows:
        builder.add(row)
    refs = builder.build(summarize(rows)).cells_of("t1", "wf")

    assert len({id(ref.task) for ref in refs}) == 1
    assert len({id(ref.arm) for ref in refs}) == 1


def test_detectability_of_fresh_decisions_equals_the_sentences_recomputed_from_promotion_json() -> None:
    """The report command's shortcut says what re-checking the stored statistics would say."""
    import datetime as dt

    from tests.unit.promotion.promotion_fixtures import runs, same
    from wfbench.app.gating.gating import regate
    from wfbench.app.report.verdicts import detectability_of, detectability_sentences

    rows = []
    for index, task in enumerate(("a", "b", "c", "d")):
        rows += runs(task, "workflow", same(3, cost_usd=1.0 + index / 10))
        rows += runs(task, "candidate_workflow", same(3, cost_usd=0.5 + index / 7))
        rows += runs(task, "review", same(3, cost_usd=1.0))
    result = regate(rows, now=dt.datetime(2026, 2, 1, tzinfo=dt.UTC))
    assert result.evidence is not None
    promotion = result.evidence.to_mapping()

    fresh = detectability_of(result.decisions, promotion)
    assert fresh
    assert fresh == detectability_sentences(promotion)
