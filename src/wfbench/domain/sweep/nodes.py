"""Cells on other machines: which nodes may run them, the rows of cells a node lost or the driver cancelled.

A distributed executor (``docs/distributed.md``) runs cells on the nodes of a cluster while the
fold, the breaker and every row stay on the driver. This module holds its decisions, pure:

* :func:`judge_node` — a node's preflight probe against what the driver runs under: a node that
  differs in anything a row records (wfbench's version, the runtime identity, the agent and its
  version) or that cannot run a cell (no sandbox, no git, too little disk) is refused, with every
  reason named.
* :func:`node_loss_row` and :func:`retry_after_loss` — a cell whose node died is an
  ``infra-error`` row the breaker sees (a lost node is systemic), unless the operator allowed
  explicit resubmissions; the row records every attempt.
* :func:`cancelled_row` — a cell the driver cancelled is recorded ``cancelled`` whatever its task
  returned: after a forced cancellation a task may still return a normal-looking value (its
  sandbox died first), which is not evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.sweep.scheduling import DETAIL_LIMIT, Cell, failed_cell_row


@attrs.frozen
class NodeProbe:
    """What a node reported about itself before the first cell.

    ``problems`` are the checks that failed on the node itself (bwrap cannot start, git missing,
    an agent CLI missing...); ``agents`` maps each agent the sweep's arms run to the version the
    node's install reports (``None``: not installed or silent).
    """

    node_id: str
    name: str
    slots: int
    wfbench_version: str
    runtime_digest: str | None
    arm_digests: Mapping[str, str | None] = attrs.field(factory=dict)
    agents: Mapping[str, str | None] = attrs.field(factory=dict)
    free_disk_bytes: int | None = None
    problems: tuple[str, ...] = ()


@attrs.frozen
class NodeExpectation:
    """What every node must equal: the driver's wfbench, runtime identity and agents, and a disk floor."""

    wfbench_version: str
    runtime_digest: str | None
    arm_digests: Mapping[str, str | None] = attrs.field(factory=dict)
    agents: Mapping[str, str | None] = attrs.field(factory=dict)
    min_free_disk_bytes: int = 0


def judge_node(probe: NodeProbe, expected: NodeExpectation) -> tuple[str, ...]:
    """Why ``probe``'s node may not run cells of this sweep (empty: it may).

    Every difference is a reason, in a fixed order: the node's own failed checks, no slots, a
    different wfbench version, a different runtime identity (run-wide, then per arm), a different
    agent version, too little free disk.
    """
    reasons = list(probe.problems)
    if probe.slots < 1:
        reasons.append("it offers no wfbench_slot")
    if probe.wfbench_version != expected.wfbench_version:
        reasons.append(f"wfbench {probe.wfbench_version} (the driver runs {expected.wfbench_version})")
    if probe.runtime_digest != expected.runtime_digest:
        reasons.append(
            f"runtime identity {_short(probe.runtime_digest)}"
            f" (the driver's is {_short(expected.runtime_digest)})"
        )
    for arm, digest in sorted(expected.arm_digests.items()):
        theirs = probe.arm_digests.get(arm)
        if theirs != digest:
            reasons.append(f"arm {arm}: runtime identity {_short(theirs)} (the driver's is {_short(digest)})")
    for agent, version in sorted(expected.agents.items()):
        theirs = probe.agents.get(agent)
        if theirs != version:
            reasons.append(
                f"agent {agent}: {theirs or 'not installed'} (the driver runs {version or 'none'})"
            )
    if probe.free_disk_bytes is None:
        reasons.append("free disk unknown")
    elif probe.free_disk_bytes < expected.min_free_disk_bytes:
        reasons.append(
            f"{_mib(probe.free_disk_bytes)} free (a sweep needs {_mib(expected.min_free_disk_bytes)})"
        )
    return tuple(reasons)


def refusal_message(probe: NodeProbe, reasons: Sequence[str]) -> str:
    """One line naming the refused node and every reason."""
    return f"node {probe.name} ({probe.node_id[:12]}) refused: " + "; ".join(reasons)


def _short(digest: str | None) -> str:
    return "unknown" if digest is None else digest[:12]


def _mib(size: int) -> str:
    return f"{size / 1024**2:.0f} MiB"


# --- rows of cells that ran elsewhere ------------------------------------------------------


def retry_after_loss(attempts: int, limit: int) -> bool:
    """Whether a cell whose node died after ``attempts`` tries (1 = the first) is submitted again.

    ``limit`` is ``--node-loss-retries`` (0, the default, never resubmits: a session is paid once).
    """
    return attempts <= limit


def node_loss_row(cell: Cell, *, node: str, detail: str, attempts: Sequence[str]) -> Row:
    """The ``infra-error`` row of a cell whose node died; ``attempts`` names the node of every try."""
    row = failed_cell_row(cell, f"node {node} was lost while running the cell: {detail}", cancelled=False)
    return attrs.evolve(row, extra={**row.extra, "node": node, "node_attempts": list(attempts)})


def cancelled_row(cell: Cell, returned: Row | None, *, detail: str) -> Row:
    """The row of a cell the driver cancelled: ``cancelled`` whatever the task returned.

    A row the task returned keeps what it measured (usage, cost, artifacts), but its kind becomes
    ``cancelled`` (so it is kept out of medians and resumed), ``resolved`` false, and the kind it
    claimed is said in ``error_detail``. No row at all (the task was killed) gives the
    synthetic cancelled row.
    """
    if returned is None:
        return failed_cell_row(cell, detail, cancelled=True)
    if returned.error_kind is ErrorKind.CANCELLED:
        return returned
    claimed = returned.error_kind.value if returned.error_kind is not None else "none"
    note = f"{detail}; the task returned error_kind={claimed}"
    previous = returned.extra.get("error_detail")
    if isinstance(previous, str) and previous:
        note = f"{note}: {previous}"
    return attrs.evolve(
        returned,
        ok=False,
        resolved=False,
        error_kind=ErrorKind.CANCELLED,
        extra={**returned.extra, "error_detail": note[:DETAIL_LIMIT]},
    )
