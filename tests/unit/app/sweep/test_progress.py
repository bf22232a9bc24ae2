"""Sweep progress: the plain per-cell lines and the rich bar on a (fake) terminal."""

from __future__ import annotations

import io
import json
import re
import time

from wfbench.app.cell.events import (
    CellFinished,
    CellStarted,
    CellTimings,
    Note,
    PhaseFinished,
    PhaseStarted,
    SweepFinished,
    SweepStarted,
)
from wfbench.app.sweep.progress import (
    JsonProgress,
    LiveProgress,
    LogObserver,
    PlainProgress,
    Tally,
    cell_line,
    detail_line,
)
from wfbench.domain.metering.evidence import Spend as MeteredSpend
from wfbench.domain.results.rows import Row


def _row(run: int, **fields: object) -> Row:
    base = {
        "task": "t",
        "arm": "a",
        "run": run,
        "ok": True,
        "resolved": True,
        "input_tokens": 10,
        "output_tokens": 5,
        "cost_usd": 0.01,
        "duration_s": 1.5,
    }
    return Row.from_mapping({**base, **fields})


def test_a_finished_cell_line_shows_every_measure_and_n_a_where_unmeasured():
    """Resolved, quality, tokens, cost, duration and kind; unknown values print n/a, never 0."""
    assert cell_line(_row(0)) == (
        "[t][a][run 0] resolved=True quality=n/a in=10 out=5 cost=$0.0100 took=1.5s error_kind=none"
    )
    unknown = _row(
        1, input_tokens=None, cost_usd=None, duration_s=None, resolved=False, error_kind="session-error"
    )
    assert "in=n/a out=5 cost=n/a took=n/a error_kind=session-error" in cell_line(unknown)
    infra = _row(2, error_kind="infra-error", cost_usd=0.0, duration_s=0.0)
    assert "cost=n/a took=n/a" in cell_line(infra)


def test_the_failure_detail_is_redacted_single_line_and_bounded():
    """Secrets are masked, newlines become ⏎, and long details are cut with the count."""
    row = _row(0, error_kind="verify-failed", error_detail="key sk-secret-123\nboom " + "x" * 2000)
    line = detail_line(row, ["sk-secret-123"])
    assert line is not None
    assert "sk-secret-123" not in line
    assert " ⏎ boom" in line
    assert re.search(r"…\[truncated \d+ chars\]$", line)
    assert detail_line(_row(1)) is None


def _started(to_run: int, workers: int = 2, **fields: object) -> SweepStarted:
    base = {
        "planned": to_run,
        "to_run": to_run,
        "already": 0,
        "reused": 0,
        "workers": workers,
        "arms": ("a",),
        "out_dir": "/out",
    }
    return SweepStarted(**{**base, **fields})  # type: ignore[arg-type]


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_plain_progress_prints_one_line_per_finished_cell():
    """Not a TTY: a start line, then one line per cell (plus its detail when it failed)."""
    stream = io.StringIO()
    progress = PlainProgress(stream, heartbeat_s=0)
    progress.notify(_started(2))
    progress.notify(CellStarted(("t", "a", 0)))
    progress.notify(CellFinished(_row(0)))
    failed = _row(1, error_kind="oracle-failed", resolved=False, error_detail="hidden oracle failed")
    progress.notify(CellFinished(failed))
    progress.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "running 2 cell(s)"
    assert [line.split(" ")[0] for line in lines[1:]] == ["[t][a][run", "[t][a][run", "[t][a][run"]
    assert lines[-1].endswith("detail: hidden oracle failed")


def test_the_tally_counts_done_running_left_eta_spend_and_per_arm_results():
    """ETA = cells still to finish × mean wall time of finished cells ÷ workers; spend adds earlier rows."""
    clock = FakeClock()
    tally = Tally(now=clock)
    tally.fold(_started(5, workers=2, spent_before_usd=1.0))
    for run in range(3):
        tally.fold(CellStarted(("t", "a", run)))
    tally.fold(PhaseStarted(("t", "a", 1), "work"))
    clock.now += 30
    tally.fold(CellFinished(_row(0, cell_wall_s=20.0)))
    tally.fold(CellFinished(_row(2, resolved=False, error_kind="oracle-failed", cell_wall_s=40.0)))

    assert (tally.done, len(tally.running), tally.left) == (2, 1, 2)
    assert tally.eta_s() == 3 * 30.0 / 2
    assert tally.spent_usd() == 1.02
    assert tally.arms_text() == "a 1✓ 1✗"
    assert tally.running_cells() == [("t/a/1", "work", 30.0)]
    assert tally.status() == "done 2/5, running 1, left 2, ETA 0m45s, spent $1.0200, elapsed 0m30s"


def test_with_a_wire_meter_the_spend_is_the_meters_in_flight_sessions_included():
    """The meter's figure (sessions still running included) replaces the rows' and names the budget."""
    reading = [MeteredSpend(0.25, budget_usd=2.0)]
    tally = Tally(now=FakeClock(), metered=lambda: reading[0])
    tally.fold(_started(3, spent_before_usd=1.0))
    tally.fold(CellFinished(_row(0)))  # its 0.01 is inside the meter's 0.25

    assert tally.spent_usd() == 1.25
    assert (tally.spend_source(), tally.budget_usd()) == ("wire", 2.0)
    assert "spent $1.2500 of $2.0000" in tally.status()
    reading[0] = MeteredSpend(0.5, budget_usd=2.0)
    assert tally.spent_usd() == 1.5  # read live, not when a cell ends


def test_an_unpriced_or_failing_meter_falls_back_to_the_rows_cost():
    def broken() -> MeteredSpend:
        raise RuntimeError("proxy gone")

    for meter in (lambda: MeteredSpend(None), lambda: None, broken):
        tally = Tally(now=FakeClock(), metered=meter)
        tally.fold(_started(1))
        tally.fold(CellFinished(_row(0)))
        assert (tally.spent_usd(), tally.spend_source()) == (0.01, "rows")


def test_json_heartbeat_and_sweep_finished_carry_the_metered_spend_and_its_source():
    stream = io.StringIO()
    progress = JsonProgress(stream, heartbeat_s=0, metered=lambda: MeteredSpend(0.3, budget_usd=1.0))
    progress.notify(_started(1))
    progress.notify(CellFinished(_row(0)))
    progress.notify(SweepFinished(0, False, False, (), 1, 1))
    finished = json.loads(stream.getvalue().splitlines()[-1])

    assert (finished["spent_usd"], finished["spend_source"], finished["max_cost_usd"]) == (0.3, "wire", 1.0)


def test_before_any_cell_finishes_the_eta_comes_from_prior_rows_or_is_unknown():
    tally = Tally(now=FakeClock())
    tally.fold(_started(4, workers=1))
    assert tally.eta_s() is None
    tally.fold(_started(4, workers=1, expected_cell_s=10.0))
    assert tally.eta_s() == 40.0


def test_after_a_session_ends_its_cell_shows_as_checking_until_the_next_one():
    tally = Tally(now=FakeClock())
    tally.fold(_started(1))
    tally.fold(CellStarted(("t", "a", 0)))
    tally.fold(PhaseStarted(("t", "a", 0), "plan"))
    tally.fold(PhaseFinished(("t", "a", 0), "plan", 1.0, True, None, 0.1))
    assert tally.running_cells()[0][1] == "checking"
    tally.fold(PhaseStarted(("t", "a", 0), "work"))
    assert tally.running_cells()[0][1] == "work"


def test_off_a_tty_a_heartbeat_names_the_running_cells_and_their_phase():
    stream = io.StringIO()
    progress = PlainProgress(stream, heartbeat_s=0.05)
    progress.notify(_started(2))
    progress.notify(CellStarted(("t", "a", 0)))
    progress.notify(PhaseStarted(("t", "a", 0), "plan"))
    # A beat may fall between the notifications above (the timer runs from the first): read the
    # first beat that came after them, the one that names the running cell.
    deadline = time.monotonic() + 10
    while "running: t/a/0" not in stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.02)
    progress.close()

    beats = [line for line in stream.getvalue().splitlines() if line.startswith("heartbeat:")]
    beat = next(line for line in beats if "running: " in line)
    assert "done 0/2, running 1, left 1" in beat
    assert "running: t/a/0 plan 0m0" in beat


def test_json_events_are_one_object_per_line_with_the_documented_names():
    stream = io.StringIO()
    progress = JsonProgress(stream, ["sk-secret"], heartbeat_s=0)
    progress.notify(_started(1))
    progress.notify(CellStarted(("t", "a", 0)))
    progress.notify(PhaseStarted(("t", "a", 0), "work"))
    progress.notify(PhaseFinished(("t", "a", 0), "work", 1.5, True, None, 0.01))
    progress.notify(CellFinished(_row(0)))
    progress.notify(Note("key sk-secret leaked?", "warning"))
    progress.notify(SweepFinished(0, False, False, (("cand", "promote"),), 1, 1))
    events = [json.loads(line) for line in stream.getvalue().splitlines()]

    assert [e["event"] for e in events] == [
        "sweep_started",
        "cell_started",
        "phase_started",
        "phase_finished",
        "cell_finished",
        "note",
        "sweep_finished",
    ]
    assert events[4]["cost_usd"] == 0.01
    assert "sk-secret" not in events[5]["text"]
    assert events[6]["decisions"] == [{"candidate_arm": "cand", "decision": "promote"}]
    assert events[6]["spent_usd"] == 0.01


def test_on_a_terminal_the_live_view_shows_counts_eta_spend_arms_and_running_cells():
    """A forced-terminal console draws the counts, ETA, spend, per-arm tallies and each running cell."""
    stream = io.StringIO()
    progress = LiveProgress(stream, force_terminal=True)
    progress.notify(_started(5))
    for run in range(3):
        progress.notify(CellStarted(("t", "a", run)))
    progress.notify(PhaseStarted(("t", "a", 1), "work"))
    progress.notify(CellFinished(_row(0, cell_wall_s=2.0)))
    progress.close()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.getvalue())
    assert "done 1/5, running 2, left 2" in text
    assert "ETA " in text
    assert "spent $0.0100" in text
    assert "a 1✓ 0✗" in text
    assert "▶ t/a/1  work" in text
    assert "✓ [t][a][run 0] resolved=True" in text
    assert "\x1b[" in stream.getvalue()  # coloured


def test_the_log_observer_records_phase_timings_notes_and_a_cancellation_with_levels():
    logged: list[tuple[str, dict[str, object]]] = []
    observer = LogObserver(lambda event, **fields: logged.append((event, fields)))
    observer.notify(PhaseFinished(("t", "a", 0), "work", 1.5, False, "session-error", None))
    observer.notify(Note("careful", "warning"))
    observer.notify(SweepFinished(130, True, False, (), 4, 1))

    assert [(e, f["level"]) for e, f in logged] == [
        ("phase_finished", "warning"),
        ("note", "warning"),
        ("sweep_cancelled", "warning"),
    ]
    assert logged[0][1]["wall_s"] == 1.5


def test_the_log_observer_records_where_a_cells_time_went_and_the_json_stream_does_not():
    logged: list[tuple[str, dict[str, object]]] = []
    stream = io.StringIO()
    timings = CellTimings(("t", "a", 0), 1.25, (("copy", 0.05), ("sessions", 0.9), ("remove", 0.1)))
    LogObserver(lambda event, **fields: logged.append((event, fields))).notify(timings)
    JsonProgress(stream).notify(timings)

    assert logged == [
        (
            "cell_timings",
            {
                "level": "info",
                "task": "t",
                "arm": "a",
                "run": 0,
                "wall_s": 1.25,
                "steps": {"copy": 0.05, "sessions": 0.9, "remove": 0.1},
            },
        )
    ]
    assert stream.getvalue() == ""
