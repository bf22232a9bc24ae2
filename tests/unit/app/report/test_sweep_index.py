"""The index of a directory of sweeps: one summary per sweep, each read only as far as it grew."""

from __future__ import annotations

import json
from typing import Any

from wfbench.app.report.library import SweepLibrary
from wfbench.app.report.sweep_index import SweepIndex
from wfbench.domain.errors import InputError
from wfbench.domain.sweep.live import SweepState


class FakeLiveSweep:
    """The LiveSweep port over a list of lines; records where each follow() started."""

    def __init__(self, rows: list[dict[str, Any]], *, running: bool, promotion: Any = None) -> None:
        self.lines = [json.dumps(r).encode() + b"\n" for r in rows]
        self.running, self.promotion, self.starts = running, promotion, []
        self.manifest = {"started_at": "2026-01-01T00:00:00", "corpus_path": "/x/demo/corpus.yaml"}

    def state(self) -> SweepState:
        size = sum(len(line) for line in self.lines)
        return SweepState(size=size, running=self.running, judged=self.promotion is not None, planned=6)

    def follow(self, start):
        self.starts.append(start)
        offset = 0
        for line in self.lines:
            offset += len(line)
            if offset > start:
                yield offset, json.loads(line)

    def json_file(self, name):
        value = {"manifest.json": self.manifest, "promotion.json": self.promotion}.get(name)
        return (value, "ok") if value is not None else (None, "missing")


class FakeCatalog:
    def __init__(self, sweeps: dict[str, FakeLiveSweep]) -> None:
        self.sweeps = sweeps

    def names(self):
        return tuple(sorted(self.sweeps))

    def open(self, name):
        if name not in self.sweeps:
            raise InputError("is not a sweep of this directory", source=name)
        return self.sweeps[name]


def _row(arm: str, cost: float | None) -> dict[str, Any]:
    return {"task": "t", "arm": arm, "run": 0, "cost_usd": cost}


def test_a_running_sweep_is_pending_and_counts_only_the_rows_written_since():
    live = FakeLiveSweep([_row("a", 1.0), _row("b", None)], running=True)
    index = SweepIndex(FakeCatalog({"live": live}))

    first = index.summary("live")
    live.lines.append(json.dumps(_row("a", 0.5)).encode() + b"\n")
    second = index.summary("live")

    assert first is not None
    assert second is not None
    assert (first.cells, first.spend, first.spend_unknown, first.status) == (
        2,
        1.0,
        1,
        "running, 2 of 6 cells",
    )
    assert first.pending
    assert (second.cells, second.spend) == (3, 1.5)
    assert live.starts[1] == sum(len(line) for line in live.lines[:2])  # read from where it stopped


def test_an_unchanged_sweep_is_not_read_again():
    done = FakeLiveSweep([_row("a", 1.0)], running=False, promotion={"run_status": "complete"})
    index = SweepIndex(FakeCatalog({"done": done}))
    index.summary("done")
    index.summary("done")
    assert len(done.starts) == 1


def test_a_finished_sweep_shows_its_decisions_corpus_and_status():
    promotion = {
        "run_status": "complete",
        "decisions": [{"candidate_arm": "cand", "decision": "promote"}],
    }
    done = FakeLiveSweep([_row("a", 1.0)], running=False, promotion=promotion)
    summary = SweepIndex(FakeCatalog({"done": done})).summary("done")
    assert summary is not None
    assert summary.decisions == (("cand", "promote"),)
    assert summary.corpus == "demo/corpus.yaml"
    assert summary.status == "complete"
    assert not summary.pending


def test_the_library_index_lists_every_sweep_and_refuses_an_unknown_comparison():
    catalog = FakeCatalog(
        {
            "a": FakeLiveSweep([_row("x", 1.0)], running=False, promotion={"run_status": "complete"}),
            "b": FakeLiveSweep([_row("x", 2.0)], running=True),
        }
    )
    library = SweepLibrary(catalog, root="/results")  # type: ignore[arg-type]
    page = library.render("/").body.decode()
    assert '"s/a/index.html"' in page
    assert '"s/b/index.html"' in page
    assert "running, 1 of 6 cells" in page
    assert library.render("/compare.html?a=a&b=nope").status == 404
    assert library.render("/s/nope/index.html").status == 404
    token = library.render("/live.txt").body
    catalog.sweeps["b"].lines.append(json.dumps(_row("x", 1.0)).encode() + b"\n")
    assert library.render("/live.txt").body != token
