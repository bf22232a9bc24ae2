"""``--resume`` sets cancellation rows aside in ``results.cancelled.jsonl``: real files, killed at any step.

A kill is simulated by running the move's steps (:mod:`wfbench.adapters.store.cancelled_rows`) only up
to a point, or by making a rename raise; the next resume is the real one
(:func:`wfbench.adapters.store.claim.claim_out_dir`). After every kill the directory must hold the old
or the new state (as the module docstring defines it), and after the resume the new state: no row
lost, none duplicated, every byte of every row unchanged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from wfbench.adapters.store import cancelled_rows
from wfbench.adapters.store import claim as stale
from wfbench.adapters.store.cancelled_rows import CANCELLED_NAME, PENDING_NAME, RESULTS_NAME
from wfbench.adapters.store.jsonl_store import encode_row, read_rows
from wfbench.domain.errors import InputError
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep.resume import is_cancellation_residue
from wfbench.domain.sweep.scheduling import Cell, failed_cell_row


def _line(task: str, run: int, kind: str | None = None, **extra: object) -> bytes:
    fields = {"task": task, "arm": "workflow", "run": run, "resolved": kind is None, "error_kind": kind}
    return encode_row(Row.from_mapping({**fields, **extra}))


#: A cancelled row of a cell whose run raised: no timestamp, so a later attempt can be byte-identical.
RAISED = encode_row(failed_cell_row(Cell("t-b", "workflow", 0), "KeyboardInterrupt: ", cancelled=True))
KEPT_A = _line("t-a", 0, None, cost_usd=0.5, future_field={"kept": ["verbatim", "é"]})
KEPT_C = _line("t-c", 0, "infra-error", error_detail="git failed")
CANCELLED_D = _line("t-d", 0, "cancelled", error_detail="the session was cancelled")
CLEANUP_E = _line("t-e", 0, "cleanup-failure", error_detail="primary=cancelled: x; cleanup: busy")
OLD_SIDE = RAISED + _line("t-z", 3, "cancelled")  # an earlier move already set aside RAISED's bytes once

OLD_RESULTS = KEPT_A + RAISED + KEPT_C + CANCELLED_D + CLEANUP_E
NEW_RESULTS = KEPT_A + KEPT_C
NEW_SIDE = OLD_SIDE + RAISED + CANCELLED_D + CLEANUP_E


def _out(tmp_path: Path, *, results: bytes = OLD_RESULTS, side: bytes | None = OLD_SIDE) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    (out / RESULTS_NAME).write_bytes(results)
    if side is not None:
        (out / CANCELLED_NAME).write_bytes(side)
    return out


def _logical(out: Path) -> tuple[bytes, bytes]:
    """(results, side file) as a reader must take them: the pending file counts once the results committed."""
    results = (out / RESULTS_NAME).read_bytes()
    side_path = out / CANCELLED_NAME
    side = side_path.read_bytes() if side_path.exists() else b""
    pending = out / PENDING_NAME
    if pending.exists() and not any(is_cancellation_residue(r) for r in read_rows(out / RESULTS_NAME)):
        side = pending.read_bytes()
    return results, side


def _resume(out: Path, tmp_path: Path) -> list[str]:
    """The real resume's start (lock, repairs, the move), released at once; its notes."""
    notes: list[str] = []
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    stale.claim_out_dir(str(out), resume=True, note=notes.append, scratch_parent=str(scratch)).release()
    return notes


def _assert_new_state(out: Path) -> None:
    assert (out / RESULTS_NAME).read_bytes() == NEW_RESULTS
    assert (out / CANCELLED_NAME).read_bytes() == NEW_SIDE
    assert not (out / PENDING_NAME).exists()
    assert not list(out.glob("*.tmp")) + list(out.glob(".*.tmp"))
    every_line = Counter((out / RESULTS_NAME).read_bytes().splitlines() + NEW_SIDE.splitlines())
    assert every_line == Counter(OLD_RESULTS.splitlines() + OLD_SIDE.splitlines())


def _steps(out: Path) -> list[Callable[[], None]]:
    move = cancelled_rows.plan_move(str(out))
    assert move is not None
    return [
        lambda: cancelled_rows.stage(str(out), move),
        lambda: cancelled_rows.commit(str(out), move),
        lambda: cancelled_rows.publish(str(out)),
    ]


def test_a_resume_moves_cancellation_rows_byte_for_byte_and_keeps_every_other_row_in_order(tmp_path):
    """Cancelled rows and a cancelled cell's cleanup failure move; the infra-error and resolved rows stay."""
    out = _out(tmp_path)

    notes = _resume(out, tmp_path)

    _assert_new_state(out)
    assert any("3 row(s)" in n and str(out / CANCELLED_NAME) in n for n in notes), notes
    assert [r.cell for r in read_rows(out / RESULTS_NAME)] == [("t-a", "workflow", 0), ("t-c", "workflow", 0)]


@pytest.mark.parametrize(("done", "state"), [(0, "old"), (1, "old"), (2, "new"), (3, "new")])
def test_a_kill_between_any_two_steps_leaves_the_old_or_the_new_state_and_the_resume_ends_new(
    tmp_path, done, state
):
    """Run ``done`` of the steps (1 pending side file, 2 results = commit point, 3 publish), then resume."""
    out = _out(tmp_path)
    for step in _steps(out)[:done]:
        step()

    expected = (OLD_RESULTS, OLD_SIDE) if state == "old" else (NEW_RESULTS, NEW_SIDE)
    assert _logical(out) == expected

    _resume(out, tmp_path)

    _assert_new_state(out)


@pytest.mark.parametrize("kill_at", [1, 2, 3])
def test_a_kill_right_before_any_rename_leaves_a_partial_file_the_resume_removes(
    tmp_path, monkeypatch, kill_at
):
    """A rename that never happens (the process died) plus its torn temp file: the resume still ends new."""
    out = _out(tmp_path)
    real_replace = cancelled_rows.os.replace
    calls = []

    class Killed(BaseException):
        pass

    def dying_replace(src, dst):
        calls.append(dst)
        if len(calls) == kill_at:
            (out / f".{Path(dst).name}.x1y2.tmp").write_bytes(b'{"task": "torn')
            raise Killed
        real_replace(src, dst)

    monkeypatch.setattr(cancelled_rows.os, "replace", dying_replace)
    with pytest.raises(Killed):
        cancelled_rows.move_cancelled_rows(str(out))
    monkeypatch.setattr(cancelled_rows.os, "replace", real_replace)

    assert _logical(out) == ((OLD_RESULTS, OLD_SIDE) if kill_at <= 2 else (NEW_RESULTS, NEW_SIDE))
    _resume(out, tmp_path)
    _assert_new_state(out)


def test_an_uncommitted_pending_file_is_discarded_without_touching_the_side_file(tmp_path):
    """Negative control for the recovery: residue still in results means step 2 never happened."""
    out = _out(tmp_path)
    _steps(out)[0]()

    note = cancelled_rows.recover(str(out))

    assert note is not None
    assert "discarded" in note
    assert not (out / PENDING_NAME).exists()
    assert (out / CANCELLED_NAME).read_bytes() == OLD_SIDE
    assert (out / RESULTS_NAME).read_bytes() == OLD_RESULTS


def test_a_committed_pending_file_is_published(tmp_path):
    """Results without residue mean step 2 happened: the pending side file becomes the side file."""
    out = _out(tmp_path)
    stage, commit, _publish = _steps(out)
    stage()
    commit()

    note = cancelled_rows.recover(str(out))

    assert note is not None
    assert "finished" in note
    assert (out / CANCELLED_NAME).read_bytes() == NEW_SIDE


def test_the_same_cancelled_bytes_set_aside_twice_are_kept_twice(tmp_path):
    """Two cancelled attempts of one cell may be byte-identical: both are kept, none merged away."""
    out = _out(tmp_path, results=KEPT_A + RAISED, side=None)
    _resume(out, tmp_path)
    with open(out / RESULTS_NAME, "ab") as handle:  # the resumed cell is cancelled again, identically
        handle.write(RAISED)

    _resume(out, tmp_path)

    assert (out / RESULTS_NAME).read_bytes() == KEPT_A
    assert (out / CANCELLED_NAME).read_bytes() == RAISED + RAISED


def test_a_resume_without_cancellation_rows_changes_nothing(tmp_path):
    """No residue: results.jsonl is untouched and no side file appears."""
    out = _out(tmp_path, results=NEW_RESULTS, side=None)
    before = (out / RESULTS_NAME).stat()

    _resume(out, tmp_path)

    assert (out / RESULTS_NAME).read_bytes() == NEW_RESULTS
    assert (out / RESULTS_NAME).stat().st_ino == before.st_ino
    assert not (out / CANCELLED_NAME).exists()


@pytest.mark.parametrize("name", [CANCELLED_NAME, PENDING_NAME])
def test_a_fresh_run_into_a_directory_holding_set_aside_rows_is_refused(tmp_path, name):
    """Even with every row moved out of results.jsonl, the directory belongs to that sweep: use --resume."""
    out = _out(tmp_path, results=b"", side=None)
    (out / name).write_bytes(RAISED)

    with pytest.raises(InputError, match="--resume") as refused:
        stale.claim_out_dir(str(out), resume=False, note=print, scratch_parent=str(tmp_path))

    assert refused.value.source == str(out / name)


def test_an_invalid_line_refuses_the_resume_before_anything_moves(tmp_path):
    """A bad line is an input error naming it; the files stay as they were."""
    out = _out(tmp_path, results=OLD_RESULTS + b'{"task": 1}\n')

    with pytest.raises(InputError, match="line 6"):
        cancelled_rows.move_cancelled_rows(str(out))

    assert (out / RESULTS_NAME).read_bytes() == OLD_RESULTS + b'{"task": 1}\n'
    assert (out / CANCELLED_NAME).read_bytes() == OLD_SIDE
    assert not (out / PENDING_NAME).exists()
