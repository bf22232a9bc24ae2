"""What one ``wfbench evolve`` run owes: ``--generations N`` counted across a kill.

``--generations N`` asks for N generations after the last one ``OUT`` had recorded when the run
began (the baseline is not one of them). Running the command again on a finished ``OUT`` continues
with N more. But a run killed (SIGKILL, power loss) or cancelled before its end must be finished
by the same command, ending exactly where the uninterrupted run would have: had the rerun counted
N from the last record (or ignored a generation it finishes from its journal), it would run up to
N generations too many.

So a run first writes ``OUT/evolution-run.json`` (atomically, fsynced): the generation it counts
from. It removes the file once it has ended — all N made, or a stop rule (``--max-generations``,
``--max-cost``, no evidence twice in a row) ended it. A run that finds the file resumes that run:
its N counts from the generation the file names, and every generation already recorded, or
finished from its journal, is one of them. A rerun with another N ends where a first run with
that N would have.
"""

from __future__ import annotations

import datetime as dt
import json
import os

import attrs

from wfbench.app.evolve.state import fsync_dir
from wfbench.domain.errors import InputError
from wfbench.domain.ports import SweepDirectory

__all__ = ["RUN_FILE", "RunPlan", "begin_run", "end_run", "run_started_at"]

RUN_FILE = "evolution-run.json"
_SCHEMA = 1


@attrs.frozen
class RunPlan:
    """The generations this run makes: those after ``after``, up to ``last``."""

    #: The last generation recorded when the run began (0: none yet, or only the baseline).
    after: int
    generations: int
    #: An interrupted earlier run is being finished.
    resumed: bool = False

    @property
    def last(self) -> int:
        """The number of the last generation this run may make."""
        return self.after + self.generations


def _path(out_dir: str) -> str:
    return os.path.join(out_dir, RUN_FILE)


def _write(directory: SweepDirectory, plan: RunPlan, started_at: str) -> None:
    data = {
        "schema": _SCHEMA,
        "after_generation": plan.after,
        "generations": plan.generations,
        "started_at": started_at,
    }
    directory.write(RUN_FILE, (json.dumps(data, indent=1) + "\n").encode("utf-8"))


def _int_field(raw: dict[str, object], key: str, path: str, *, least: int) -> int:
    value = raw.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InputError(f"must be an integer ≥ {least}", field=key, source=path)
    return value


def _read(out_dir: str) -> tuple[int, str] | None:
    """The interrupted run's ``after_generation`` and ``started_at`` (None: no interrupted run)."""
    path = _path(out_dir)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    try:
        raw = json.loads(text)
    except ValueError:
        raise InputError("is not valid JSON (remove it to start a new run)", source=path) from None
    if not isinstance(raw, dict):
        raise InputError("must be a JSON object (remove it to start a new run)", source=path)
    if raw.get("schema") != _SCHEMA:
        raise InputError(f"must be {_SCHEMA}", field="schema", source=path)
    _int_field(raw, "generations", path, least=1)
    started = raw.get("started_at")
    return _int_field(raw, "after_generation", path, least=0), started if isinstance(started, str) else ""


def begin_run(
    out_dir: str, *, directory: SweepDirectory, last_recorded: int, generations: int, started_at: str
) -> RunPlan:
    """The generations this run makes; an interrupted run's when ``OUT`` holds one (see the module).

    ``last_recorded`` is the last generation ``evolution.jsonl`` holds once any journaled one is
    finished (0: none). A new run's plan is written (durably) before it makes anything; a resumed
    run's is written again with this ``generations`` (its start kept), through ``directory`` (``OUT``
    as a port).

    Raises:
        InputError: the run file is not one this module wrote, or names a generation after the
            last recorded one (``OUT`` was edited); nothing is run.
    """
    found = _read(out_dir)
    if found is None:
        plan = RunPlan(after=last_recorded, generations=generations)
        _write(directory, plan, started_at)
        return plan
    after, began = found
    if after > last_recorded:
        raise InputError(
            f"is a run that began after generation {after}, but evolution.jsonl ends at generation"
            f" {last_recorded} (remove it to start a new run)",
            field="after_generation",
            source=_path(out_dir),
        )
    plan = RunPlan(after=after, generations=generations, resumed=True)
    _write(directory, plan, began or started_at)
    return plan


def run_started_at(out_dir: str) -> dt.datetime | None:
    """When the run under way in ``OUT`` began (kept when a killed run is finished); None: unknown.

    ``evolve --apply``'s default branch is named after it, so the run finishing a killed one
    commits on the branch the killed one made, never on a second one.
    """
    try:
        found = _read(out_dir)
    except InputError:
        return None
    if found is None or not found[1]:
        return None
    try:
        began = dt.datetime.fromisoformat(found[1])
    except ValueError:
        return None
    return began if began.tzinfo is not None else None


def end_run(out_dir: str) -> None:
    """The run has ended: the next one counts its N from the last record (durably)."""
    try:
        os.remove(_path(out_dir))
    except FileNotFoundError:
        return
    fsync_dir(out_dir)
