"""Distributed cells: which nodes may run them, node-loss rows, retries, and rows of cancelled cells."""

from __future__ import annotations

import attrs
import pytest

from wfbench.domain.results.rows import SYSTEMIC_KINDS, ErrorKind, Row
from wfbench.domain.sweep.nodes import (
    NodeExpectation,
    NodeProbe,
    cancelled_row,
    judge_node,
    node_loss_row,
    refusal_message,
    retry_after_loss,
)
from wfbench.domain.sweep.scheduling import DETAIL_LIMIT, Breaker, Cell, step

GIB = 1024**3
EXPECTED = NodeExpectation(
    wfbench_version="0.1.0",
    runtime_digest="a" * 64,
    arm_digests={"baseline": "a" * 64, "codex_direct": "c" * 64},
    agents={"standin": "standin 123", "codex": "codex-cli 0.171.0"},
    min_free_disk_bytes=2 * GIB,
)
GOOD = NodeProbe(
    node_id="f" * 56,
    name="node-1/ffffffff",
    slots=2,
    wfbench_version="0.1.0",
    runtime_digest="a" * 64,
    arm_digests={"baseline": "a" * 64, "codex_direct": "c" * 64},
    agents={"standin": "standin 123", "codex": "codex-cli 0.171.0"},
    free_disk_bytes=10 * GIB,
)
CELL = Cell("t1", "baseline", 0)


def test_a_node_equal_to_the_driver_is_accepted() -> None:
    assert judge_node(GOOD, EXPECTED) == ()


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"problems": ("bubblewrap cannot run here",)}, "bubblewrap cannot run here"),
        ({"slots": 0}, "it offers no wfbench_slot"),
        ({"wfbench_version": "0.2.0"}, "wfbench 0.2.0 (the driver runs 0.1.0)"),
        ({"runtime_digest": "b" * 64}, "runtime identity bbbbbbbbbbbb (the driver's is aaaaaaaaaaaa)"),
        ({"runtime_digest": None}, "runtime identity unknown (the driver's is aaaaaaaaaaaa)"),
        ({"arm_digests": {"baseline": "a" * 64}}, "arm codex_direct: runtime identity unknown"),
        (
            {"agents": {"standin": "standin 123", "codex": "codex-cli 0.170.0"}},
            "agent codex: codex-cli 0.170.0",
        ),
        ({"agents": {"standin": "standin 123"}}, "agent codex: not installed"),
        ({"free_disk_bytes": GIB}, "1024 MiB free (a sweep needs 2048 MiB)"),
        ({"free_disk_bytes": None}, "free disk unknown"),
    ],
)
def test_every_difference_from_the_driver_refuses_the_node_with_its_reason(change: dict, reason: str) -> None:
    reasons = judge_node(attrs.evolve(GOOD, **change), EXPECTED)
    assert len(reasons) == 1
    assert reasons[0].startswith(reason)


def test_a_node_with_exactly_the_disk_floor_is_accepted() -> None:
    assert judge_node(attrs.evolve(GOOD, free_disk_bytes=2 * GIB), EXPECTED) == ()


def test_every_reason_is_named_in_the_refusal_with_the_node() -> None:
    bad = attrs.evolve(GOOD, wfbench_version="9", slots=0, problems=("git is not installed",))
    reasons = judge_node(bad, EXPECTED)
    assert reasons == (
        "git is not installed",
        "it offers no wfbench_slot",
        "wfbench 9 (the driver runs 0.1.0)",
    )
    message = refusal_message(bad, reasons)
    assert message.startswith("node node-1/ffffffff (ffffffffffff) refused: git is not installed; ")
    assert "wfbench 9" in message


def test_no_retry_by_default_and_exactly_n_with_n_allowed() -> None:
    assert not retry_after_loss(1, 0)
    assert retry_after_loss(1, 2)
    assert retry_after_loss(2, 2)
    assert not retry_after_loss(3, 2)


def test_a_lost_node_gives_an_infra_error_row_the_breaker_counts() -> None:
    row = node_loss_row(
        CELL, node="node-2/abcd", detail="NodeDiedError: gone", attempts=("node-1/x", "node-2/abcd")
    )
    assert row.cell == CELL.key
    assert row.error_kind is ErrorKind.INFRA_ERROR
    assert row.error_kind in SYSTEMIC_KINDS
    assert step(Breaker(limit=1), row).tripped
    assert row.extra["node"] == "node-2/abcd"
    assert row.extra["node_attempts"] == ["node-1/x", "node-2/abcd"]
    assert "node node-2/abcd was lost" in row.extra["error_detail"]
    assert row.input_tokens is None
    assert row.cost_usd is None


def test_a_cancelled_cell_with_no_returned_row_gets_the_synthetic_cancelled_row() -> None:
    row = cancelled_row(CELL, None, detail="cancelled by the driver")
    assert row.error_kind is ErrorKind.CANCELLED
    assert row.extra["error_detail"] == "cancelled by the driver"


def test_a_cancelled_cell_is_cancelled_whatever_its_task_returned() -> None:
    returned = Row(task="t1", arm="baseline", run=0, ok=True, resolved=True, input_tokens=7, cost_usd=0.5)
    row = cancelled_row(CELL, returned, detail="cancelled by the driver")
    assert row.error_kind is ErrorKind.CANCELLED
    assert not row.ok
    assert not row.resolved
    assert (row.input_tokens, row.cost_usd) == (7, 0.5)  # what it measured is kept
    assert row.extra["error_detail"] == "cancelled by the driver; the task returned error_kind=none"


def test_a_cancelled_cell_that_claimed_a_kind_says_it_and_its_detail() -> None:
    returned = Row(
        task="t1",
        arm="baseline",
        run=0,
        error_kind=ErrorKind.ORACLE_FAILED,
        extra={"error_detail": "x" * 3000},
    )
    row = cancelled_row(CELL, returned, detail="cancelled by the driver")
    assert row.error_kind is ErrorKind.CANCELLED
    assert row.extra["error_detail"].startswith(
        "cancelled by the driver; the task returned error_kind=oracle-failed: x"
    )
    assert len(row.extra["error_detail"]) == DETAIL_LIMIT


def test_a_row_already_cancelled_is_kept_as_it_is() -> None:
    returned = Row(
        task="t1", arm="baseline", run=0, error_kind=ErrorKind.CANCELLED, extra={"error_detail": "stopped"}
    )
    assert cancelled_row(CELL, returned, detail="cancelled by the driver") is returned
