"""The Ray executor's rules against a fake Ray (no cluster): placement, node loss, retries, cancellation.

The fake records every task the executor starts (its options and arguments) and lets each test
decide how each task ends: a value, a Ray error, nothing yet. The real cluster runs in
tests/integration/executors/test_ray_cluster.py.
"""

from __future__ import annotations

import types
from typing import Any

import pytest

from wfbench.adapters.executors.ray_executor import SLOT_RESOURCE, ClusterNode, RayExecutor
from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.sweep.scheduling import Cell, CellFinished


class _RayError(Exception):
    pass


def _error(name: str) -> type[Exception]:
    return type(name, (_RayError,), {})


EXCEPTIONS = types.SimpleNamespace(
    RayError=_RayError,
    TaskCancelledError=_error("TaskCancelledError"),
    NodeDiedError=_error("NodeDiedError"),
    WorkerCrashedError=_error("WorkerCrashedError"),
    LocalRayletDiedError=_error("LocalRayletDiedError"),
    TaskUnschedulableError=_error("TaskUnschedulableError"),
    ObjectLostError=_error("ObjectLostError"),
    RaySystemError=_error("RaySystemError"),
)


class FakeRef:
    def __init__(self, args: tuple[Any, ...], options: dict[str, Any]) -> None:
        self.args = args
        self.options = options
        self.outcome: tuple[str, Any] | None = None
        self.cancels: list[bool] = []

    @property
    def cell(self) -> Cell:
        return self.args[0]

    @property
    def node(self) -> str:
        return self.options["scheduling_strategy"]


class FakeRay:
    """The slice of the ``ray`` module the executor uses."""

    exceptions = EXCEPTIONS

    def __init__(self) -> None:
        self.refs: list[FakeRef] = []
        self.on_cancel: dict[bool, Any] = {}

    def remote(self, fn: Any) -> Any:
        fake = self

        class _Options:
            def __init__(self, options: dict[str, Any]) -> None:
                self._options = options

            def remote(self, *args: Any) -> FakeRef:
                ref = FakeRef(args, self._options)
                fake.refs.append(ref)
                return ref

        class _Remote:
            def options(self, **options: Any) -> _Options:
                return _Options(options)

        del fn
        return _Remote()

    def wait(
        self, refs: list[FakeRef], *, num_returns: int, timeout: float
    ) -> tuple[list[FakeRef], list[FakeRef]]:
        ready = [ref for ref in refs if ref.outcome is not None]
        return ready[: max(num_returns, 1)], [ref for ref in refs if ref.outcome is None]

    def get(self, ref: FakeRef) -> Any:
        assert ref.outcome is not None
        kind, value = ref.outcome
        if kind == "raise":
            raise value
        return value

    def cancel(self, ref: FakeRef, *, force: bool = False) -> None:
        ref.cancels.append(force)
        react = self.on_cancel.get(force)
        if react is not None and ref.outcome is None:
            ref.outcome = react(ref)

    # test helpers
    def running(self) -> list[FakeRef]:
        return [ref for ref in self.refs if ref.outcome is None]

    def finish(self, ref: FakeRef, value: Any = None) -> None:
        ref.outcome = ("value", value if value is not None else _row(ref.cell))

    def fail(self, ref: FakeRef, error: Exception) -> None:
        ref.outcome = ("raise", error)


def _row(cell: Cell, **fields: Any) -> Row:
    return Row(task=cell.task, arm=cell.arm, run=cell.run, ok=True, resolved=True, input_tokens=10, **fields)


NODES = (ClusterNode("node-a", "host-a/node-a", 2), ClusterNode("node-b", "host-b/node-b", 1))


def _executor(
    fake: FakeRay,
    *,
    retries: int = 0,
    nodes: tuple[ClusterNode, ...] = NODES,
    may_start: Any = None,
) -> tuple[RayExecutor, list[str], list[Cell]]:
    notes: list[str] = []
    started: list[Cell] = []
    executor = RayExecutor(
        nodes,
        task=lambda *args: None,
        order_for=lambda cell: (cell, "order"),
        deliver=lambda cell, value: value,
        node_loss_retries=retries,
        on_start=started.append,
        may_start=may_start,
        note=notes.append,
        ray_api=fake,
        affinity=lambda node_id: node_id,
    )
    return executor, notes, started


def _cells(n: int) -> list[Cell]:
    return [Cell("t", "baseline", run) for run in range(n)]


def _collect(executor: RayExecutor) -> dict[int, Row | None]:
    return {item.index: item.row for item in executor.wait(0.0)}


def test_cells_are_pinned_to_nodes_and_never_exceed_their_slots() -> None:
    fake = FakeRay()
    executor, _, started = _executor(fake)
    assert executor.slots == 3
    for index, cell in enumerate(_cells(5)):
        executor.submit(index, cell)
    assert [ref.node for ref in fake.refs] == ["node-a", "node-a", "node-b"]  # most free slots, then order
    for ref in fake.refs:
        assert ref.options["resources"] == {SLOT_RESOURCE: 1}
        assert ref.options["num_cpus"] == 0
        assert ref.options["max_retries"] == 0  # Ray never re-runs a paid session on its own
    assert started == _cells(3)
    fake.finish(fake.refs[2])
    assert set(_collect(executor)) == {2}
    assert [ref.node for ref in fake.refs[3:]] == ["node-b"]  # the freed slot gets the next cell


def test_a_finished_cell_is_reported_once_with_its_row_and_node() -> None:
    fake = FakeRay()
    executor, _, _ = _executor(fake)
    executor.submit(0, _cells(1)[0])
    assert executor.wait(0.0) == ()
    fake.finish(fake.refs[0])
    (finished,) = executor.wait(0.0)
    assert finished.index == 0
    assert finished.row is not None
    assert finished.row.resolved
    assert finished.row.extra["node"] == "host-a/node-a"
    assert "node_attempts" not in finished.row.extra
    assert executor.wait(0.0) == ()


@pytest.mark.parametrize(
    "error", ["NodeDiedError", "WorkerCrashedError", "LocalRayletDiedError", "TaskUnschedulableError"]
)
def test_a_lost_node_makes_an_infra_error_row_and_gets_no_further_cells(error: str) -> None:
    fake = FakeRay()
    executor, notes, _ = _executor(fake)
    for index, cell in enumerate(_cells(4)):
        executor.submit(index, cell)
    lost = fake.refs[0]
    assert lost.node == "node-a"
    fake.fail(lost, getattr(EXCEPTIONS, error)("the raylet died"))
    rows = _collect(executor)
    row = rows[0]
    assert row is not None
    assert row.error_kind is ErrorKind.INFRA_ERROR
    assert row.extra["node"] == "host-a/node-a"
    assert row.extra["node_attempts"] == ["host-a/node-a"]
    assert error in row.extra["error_detail"]
    assert any("[node-lost] host-a/node-a" in note for note in notes)
    assert executor.slots == 1
    fake.finish(fake.refs[1])  # node-a's second cell finished before the loss was seen
    fake.finish(fake.refs[2])  # node-b's cell
    _collect(executor)
    assert [ref.node for ref in fake.refs[3:]] == ["node-b"]  # the queued cell went to the live node


def test_with_node_loss_retries_a_lost_cell_runs_again_and_records_every_attempt() -> None:
    fake = FakeRay()
    executor, _, _ = _executor(fake, retries=1)
    executor.submit(0, _cells(1)[0])
    fake.fail(fake.refs[0], EXCEPTIONS.NodeDiedError("gone"))
    assert executor.wait(0.0) == ()  # resubmitted, not reported
    assert [ref.node for ref in fake.refs] == ["node-a", "node-b"]
    fake.finish(fake.refs[1])
    (finished,) = executor.wait(0.0)
    assert finished.row is not None
    assert finished.row.resolved
    assert finished.row.extra["node_attempts"] == ["host-a/node-a", "host-b/node-b"]


def test_retries_are_bounded_then_the_cell_is_an_infra_error() -> None:
    fake = FakeRay()
    three = (*NODES, ClusterNode("node-c", "host-c/node-c", 1))
    executor, _, _ = _executor(fake, retries=1, nodes=three)
    executor.submit(0, _cells(1)[0])
    fake.fail(fake.refs[0], EXCEPTIONS.NodeDiedError("gone"))
    executor.wait(0.0)
    fake.fail(fake.refs[1], EXCEPTIONS.NodeDiedError("gone too"))
    (finished,) = executor.wait(0.0)
    assert finished.row is not None
    assert finished.row.error_kind is ErrorKind.INFRA_ERROR
    assert finished.row.extra["node_attempts"] == ["host-a/node-a", "host-b/node-b"]
    assert len(fake.refs) == 2


def test_when_every_node_is_lost_queued_cells_become_infra_errors_instead_of_waiting_forever() -> None:
    fake = FakeRay()
    executor, _, _ = _executor(fake, nodes=(NODES[1],))
    executor.submit(0, _cells(2)[0])
    executor.submit(1, _cells(2)[1])
    fake.fail(fake.refs[0], EXCEPTIONS.NodeDiedError("gone"))
    rows = _collect(executor)
    assert {index: row.error_kind for index, row in rows.items() if row} == {
        0: ErrorKind.INFRA_ERROR,
        1: ErrorKind.INFRA_ERROR,
    }
    assert "no node of the cluster is left" in rows[1].extra["error_detail"]


def test_a_task_that_raised_is_an_infra_error_row_naming_the_node() -> None:
    fake = FakeRay()
    executor, _, _ = _executor(fake)
    executor.submit(0, _cells(1)[0])
    fake.fail(fake.refs[0], EXCEPTIONS.RaySystemError("object store full"))
    (finished,) = executor.wait(0.0)
    assert finished.row is not None
    assert finished.row.error_kind is ErrorKind.INFRA_ERROR
    assert "on node host-a/node-a: RaySystemError: object store full" in finished.row.extra["error_detail"]


def test_cancel_drops_queued_cells_without_a_row_and_cancels_running_ones_cooperatively() -> None:
    fake = FakeRay()
    executor, _, _ = _executor(fake)
    for index, cell in enumerate(_cells(5)):
        executor.submit(index, cell)
    executor.cancel(30.0)
    assert [ref.cancels for ref in fake.refs] == [[False], [False], [False]]
    rows = _collect(executor)
    assert rows == {3: None, 4: None}  # never started: no row
    fake.finish(fake.refs[0])  # returned a resolved row anyway
    fake.fail(fake.refs[1], EXCEPTIONS.TaskCancelledError("cancelled"))
    rows = _collect(executor)
    assert rows[0] is not None
    assert rows[0].error_kind is ErrorKind.CANCELLED
    assert rows[0].input_tokens == 10  # what it measured is kept
    assert rows[1] is not None
    assert rows[1].error_kind is ErrorKind.CANCELLED
    executor.submit(5, Cell("t", "baseline", 5))
    assert _collect(executor) == {5: None}  # nothing starts after a cancel


def test_a_cell_still_running_after_the_grace_period_is_cancelled_by_force() -> None:
    fake = FakeRay()
    executor, _, _ = _executor(fake)
    executor.submit(0, _cells(1)[0])
    fake.on_cancel[True] = lambda ref: ("value", _row(ref.cell))  # the sandbox died first: a normal value
    executor.cancel(0.0)
    (finished,) = executor.wait(0.0)
    assert fake.refs[0].cancels == [False, True]
    assert finished.row is not None
    assert finished.row.error_kind is ErrorKind.CANCELLED


def test_close_cancels_and_waits_for_what_still_runs() -> None:
    fake = FakeRay()
    executor, _, _ = _executor(fake)
    executor.submit(0, _cells(1)[0])
    fake.on_cancel[False] = lambda ref: ("raise", EXCEPTIONS.TaskCancelledError("x"))
    executor.close()
    assert fake.refs[0].cancels[0] is False  # cooperative first
    assert fake.running() == []


def test_negative_retries_and_no_nodes_are_refused() -> None:
    with pytest.raises(ValueError, match="node_loss_retries"):
        _executor(FakeRay(), retries=-1)
    with pytest.raises(ValueError, match="at least one node"):
        _executor(FakeRay(), nodes=())


def test_finished_events_are_cell_finished_values() -> None:
    fake = FakeRay()
    executor, _, _ = _executor(fake)
    executor.submit(7, _cells(1)[0])
    fake.finish(fake.refs[0])
    assert all(isinstance(item, CellFinished) for item in executor.wait(0.0))


def test_a_throttled_retry_waits_on_the_driver_until_its_back_off_has_passed() -> None:
    fake = FakeRay()
    executor, _, started = _executor(fake)
    retried, fresh = _cells(2)
    executor.submit(0, retried, 0.3)
    executor.submit(1, fresh)
    assert [ref.cell for ref in fake.refs] == [fresh], "a later cell does not wait behind a back-off"
    fake.finish(fake.refs[0])
    executor.wait(0.0)
    assert len(fake.refs) == 1
    executor.wait(1.0)  # nothing runs: the wait sleeps until the retry is due, then dispatches it
    assert [ref.cell for ref in fake.refs] == [fresh, retried]
    assert started == [fresh, retried]


def test_a_cell_the_budget_refuses_at_dispatch_never_starts_and_has_no_row() -> None:
    fake = FakeRay()
    answers = iter([True, False])
    executor, _, started = _executor(fake, may_start=lambda: next(answers))
    first, second = _cells(2)
    executor.submit(0, first)
    executor.submit(1, second)
    assert [ref.cell for ref in fake.refs] == [first]
    assert started == [first]
    assert _collect(executor) == {1: None}
