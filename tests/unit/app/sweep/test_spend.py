"""Spend: every paid session counts (a cancelled cell's too), reused rows do not, unknown is never zero."""

from __future__ import annotations

from wfbench.app.cell.measure import measured_fields, session_measurements
from wfbench.app.sweep.spend import RowSpend, Spend, estimate, spend_of
from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.session.records import SessionRecord, Usage


def _row(run: int, **fields: object) -> Row:
    base = {"task": "t", "arm": "a", "run": run, "ok": True, "resolved": True, "cost_usd": 0.5}
    return Row.from_mapping({**base, **fields})


def _record(cost: float | None, *, ok: bool = True, session: str = "s1") -> SessionRecord:
    usage = Usage(
        input_tokens=100, output_tokens=10, cache_read_input_tokens=0, cache_creation_input_tokens=0
    )
    unknown = Usage(None, None, None, None)
    return SessionRecord(
        ok=ok,
        error_kind=None if ok else ErrorKind.CANCELLED,
        error_detail=None,
        usage=usage if cost is not None else unknown,
        cost_usd=cost,
        num_turns=2,
        duration_s=1.0,
        session_id=session,
        skill_invoked=None,
    )


def test_spend_sums_the_known_costs_and_counts_the_unknown() -> None:
    spend = spend_of([_row(0), _row(1, cost_usd=0.25), _row(2, cost_usd=None)])

    assert spend == Spend(usd=0.75, measured=2, unmeasured=1)
    assert spend.text() == "$0.7500 (1 cell(s) without a cost)"


def test_nothing_measured_is_n_a_not_zero() -> None:
    spend = spend_of([_row(0, cost_usd=None)])

    assert spend.usd is None
    assert spend.text() == "n/a (1 cell(s) without a cost)"


def test_reused_rows_cost_this_sweep_nothing() -> None:
    assert spend_of([_row(0), _row(1, reused=True)]) == Spend(usd=0.5, measured=1, unmeasured=0)


def test_a_cell_cut_short_still_counts_the_sessions_it_finished() -> None:
    """Phase 1 finished ($0.30), phase 2 was killed mid-stream: the sum is unknown, the spend is not."""
    sessions = session_measurements([("plan", _record(0.3)), ("work", _record(None, ok=False, session="s2"))])
    row = _row(
        0, cost_usd=None, error_kind="cancelled", ok=False, resolved=False, session_measurements=sessions
    )

    spend = spend_of([row, _row(1)])

    assert spend == Spend(usd=0.8, measured=1, unmeasured=0, partial=1)
    assert spend.text() == "$0.8000 (1 cell(s) measured in part)"


def test_measured_fields_keep_usage_cost_ids_and_transcripts_of_finished_sessions() -> None:
    transcripts = [{"path": "cells/t/a/run-0/transcripts/work-s1.jsonl", "sha256": "x", "bytes": 3}]

    fields = measured_fields([("work", _record(0.3))], transcripts)

    assert (fields["cost_usd"], fields["input_tokens"], fields["session_ids"]) == (0.3, 100, ["s1"])
    assert fields["transcript_artifacts"] == transcripts
    assert fields["session_measurements"][0]["phase"] == "work"
    assert measured_fields([], transcripts) == {}


def test_row_spend_adds_rows_as_they_are_folded() -> None:
    meter = RowSpend([_row(0)])
    meter.add(_row(1, cost_usd=0.1))

    assert meter.spent().usd == 0.6


def test_row_spend_keeps_sums_not_rows_and_agrees_with_spend_of() -> None:
    rows = [_row(0), _row(1, cost_usd=None), _row(2, reused=True), _row(3, cost_usd=0.25)]
    meter = RowSpend()
    for row in rows:
        meter.add(row)

    assert meter.spent() == spend_of(rows) == Spend(usd=0.75, measured=2, unmeasured=1, partial=0)
    assert not any(isinstance(value, list) for value in vars(meter).values())


def test_estimates_come_from_the_same_task_and_arm_then_the_arm_else_unknown() -> None:
    prior = [_row(0, cost_usd=1.0), _row(1, cost_usd=3.0), _row(0, task="u", arm="b", cost_usd=5.0)]

    assert estimate([("t", "a"), ("v", "b"), ("t", "c")], prior) == [2.0, 5.0, None]
