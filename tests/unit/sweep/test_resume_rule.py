"""Which rows a resumed sweep keeps (``wfbench.domain.sweep.resume``): cancellation residue is set aside."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import rows as any_rows
from wfbench.app.cell.cell import _cleanup_failure
from wfbench.domain import aggregate
from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.sweep.resume import (
    CANCELLED_CLEANUP_PREFIX,
    ResumeSplit,
    is_cancellation_residue,
    split_for_resume,
)
from wfbench.domain.sweep.scheduling import Cell, failed_cell_row


def _row(kind: ErrorKind | None, detail: object = None, *, task: str = "t", run: int = 0) -> Row:
    extra = {} if detail is None else {"error_detail": detail}
    return Row(
        task=task, arm="a", run=run, error_kind=kind, resolved=kind is None, ok=kind is None, extra=extra
    )


def test_a_cancelled_row_is_cancellation_residue() -> None:
    """The row of a cell the interruption stopped is not evidence of the cell."""
    assert is_cancellation_residue(_row(ErrorKind.CANCELLED, "the session was cancelled"))


@pytest.mark.parametrize("kind", [None, *(k for k in ErrorKind if k is not ErrorKind.CANCELLED)])
def test_a_row_of_any_other_kind_is_evidence_and_stays(kind: ErrorKind | None) -> None:
    """Resolved, failed, excluded, systemic: all are kept (an infra-error would recur uninterrupted)."""
    assert not is_cancellation_residue(_row(kind, "cancelled before start"))


@pytest.mark.parametrize(
    ("detail", "residue"),
    [
        (f"{CANCELLED_CLEANUP_PREFIX} the session was cancelled; cleanup: busy", True),
        ("primary=cancelled: ; cleanup: busy", True),
        ("primary=infra-error: boom; cleanup: busy", False),
        ("primary=none: ; cleanup: busy", False),
        ("cleanup: primary=cancelled: busy", False),
        (None, False),
        (["primary=cancelled:"], False),
    ],
)
def test_a_cleanup_failure_is_residue_only_when_its_cell_had_been_cancelled(
    detail: object, residue: bool
) -> None:
    """The workspace removal failed after a cancellation: its measurement was cancelled too."""
    assert is_cancellation_residue(_row(ErrorKind.CLEANUP_FAILURE, detail)) is residue


def test_the_prefix_is_what_the_cell_writes_when_a_cancelled_cell_fails_its_cleanup() -> None:
    """Contract with ``app.cell``: a cancelled cell's cleanup failure is residue; an infra-error's is not."""
    cancelled = _cleanup_failure(_row(ErrorKind.CANCELLED, "the session was cancelled"), "rm: busy")
    broken = _cleanup_failure(_row(ErrorKind.INFRA_ERROR, "git failed"), "rm: busy")

    assert cancelled.error_kind is ErrorKind.CLEANUP_FAILURE
    assert is_cancellation_residue(cancelled)
    assert not is_cancellation_residue(broken)


def test_a_cell_that_raised_is_residue_only_when_its_token_was_set() -> None:
    """Contract with the scheduler: ``failed_cell_row`` moves when cancelled, stays as infra-error else."""
    cell = Cell("t", "a", 0)

    assert is_cancellation_residue(failed_cell_row(cell, "KeyboardInterrupt", cancelled=True))
    assert not is_cancellation_residue(failed_cell_row(cell, "KeyboardInterrupt", cancelled=False))


def test_the_split_keeps_the_order_of_the_kept_rows() -> None:
    """Positions are returned ascending; the kept rows keep their relative order."""
    table = [_row(None), _row(ErrorKind.CANCELLED), _row(ErrorKind.ORACLE_FAILED), _row(ErrorKind.CANCELLED)]

    assert split_for_resume(table) == ResumeSplit(keep=(0, 2), set_aside=(1, 3))


def test_nothing_is_set_aside_from_an_uninterrupted_sweep_or_an_empty_file() -> None:
    """No residue, no move."""
    assert split_for_resume([]) == ResumeSplit(keep=(), set_aside=())
    assert split_for_resume([_row(None), _row(ErrorKind.INFRA_ERROR)]) == ResumeSplit(
        keep=(0, 1), set_aside=()
    )


_details = st.none() | st.sampled_from(["primary=cancelled: x", "primary=infra-error: x", "x"])


@st.composite
def _rows_with_details(draw: st.DrawFn) -> Row:
    row = draw(any_rows())
    detail = draw(_details)
    return attrs.evolve(row, extra={} if detail is None else {"error_detail": detail})


@given(st.lists(_rows_with_details(), max_size=12))
def test_the_split_is_a_partition_by_the_rule(table: list[Row]) -> None:
    """Every position lands in exactly one side, ascending; residue and only residue is set aside."""
    split = split_for_resume(table)

    assert sorted(split.keep + split.set_aside) == list(range(len(table)))
    assert list(split.keep) == sorted(split.keep)
    assert list(split.set_aside) == sorted(split.set_aside)
    assert all(not is_cancellation_residue(table[i]) for i in split.keep)
    assert all(is_cancellation_residue(table[i]) for i in split.set_aside)


def test_kept_rows_plus_the_rerun_cells_aggregate_like_an_uninterrupted_sweep() -> None:
    """The point of the rule; negative control: keeping the cancelled row changes the aggregates."""
    uninterrupted = [_row(None, run=0), _row(ErrorKind.ORACLE_FAILED, run=1), _row(None, run=2)]
    interrupted = [
        uninterrupted[0],
        uninterrupted[1],
        _row(ErrorKind.CANCELLED, "the session was cancelled", run=2),
    ]

    split = split_for_resume(interrupted)
    kept = [interrupted[i] for i in split.keep]
    rerun = [uninterrupted[2]]  # the resumed sweep runs the set-aside cell again

    assert aggregate([*kept, *rerun]) == aggregate(uninterrupted)
    assert aggregate([*interrupted, *rerun]) != aggregate(uninterrupted)
