"""A candidate whose cells edited test infrastructure is never promoted (issue 25, docs/security.md).

The oracle does not load an agent's ``conftest.py``, ini file, ``.pth`` or plugin metadata (it
restores or ignores them), and its canaries catch a blanket forgery; still, a row whose
``evidence_diagnostics`` name such a file (``shadowing file: <path> …``,
:mod:`wfbench.domain.workspace.shadowing`) cannot count as a resolved run for a promotion: the
decision on its arm becomes ``keep_incumbent`` under every policy, with a reason naming each
file and cell. The row itself keeps its verdict (the oracle ran on restored infrastructure), so
an honest fix that also added a fixture to ``conftest.py`` is still measured, and the author sees
why the gate refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from wfbench.domain.promotion.decision import Decision, DecisionKind
from wfbench.domain.workspace.shadowing import DIAGNOSTIC_PREFIX

__all__ = ["MAX_NAMED_CELLS", "refuse_tampered", "tampered_cells"]

#: Cells named in the reason before the rest is counted.
MAX_NAMED_CELLS = 5
Diagnostics = Iterable[tuple[tuple[str, str, int], Sequence[Any]]]


def tampered_cells(diagnostics: Diagnostics, arm: str) -> tuple[str, ...]:
    """``<task>/<arm>/run-<i>: <path>`` for each test-infrastructure edit in ``arm``'s rows."""
    found: list[str] = []
    for (task, row_arm, run), items in diagnostics:
        if row_arm != arm:
            continue
        for item in items:
            if isinstance(item, str) and item.startswith(DIAGNOSTIC_PREFIX):
                path = item[len(DIAGNOSTIC_PREFIX) :].split(" (", 1)[0]
                found.append(f"{task}/{arm}/run-{run}: {path}")
    return tuple(found)


def refuse_tampered(decision: Decision, diagnostics: Diagnostics) -> Decision:
    """``decision``, refused (``keep_incumbent``) with a reason when its candidate's cells edited
    test infrastructure; unchanged otherwise."""
    cells = tampered_cells(diagnostics, decision.candidate_arm)
    if not cells:
        return decision
    named = "; ".join(cells[:MAX_NAMED_CELLS])
    more = f" and {len(cells) - MAX_NAMED_CELLS} more" if len(cells) > MAX_NAMED_CELLS else ""
    reason = f"test-infrastructure edits block promotion ({len(cells)}): {named}{more}"

    def refused(kind: DecisionKind) -> DecisionKind:
        return DecisionKind.KEEP_INCUMBENT if kind is DecisionKind.PROMOTE else kind

    verdicts = tuple(
        attrs.evolve(v, kind=refused(v.kind), reasons=(*v.reasons, reason)) for v in decision.verdicts
    )
    return attrs.evolve(
        decision, kind=refused(decision.kind), reasons=(*decision.reasons, reason), verdicts=verdicts
    )
