"""A candidate whose cells edited test infrastructure is refused promotion, naming file and cell."""

from __future__ import annotations

import attrs

from tests.unit.promotion.promotion_fixtures import MODEL
from tests.unit.promotion.test_judging import ARM, sweep_rows
from tests.unit.promotion.test_statistical_gate import STATISTICAL
from wfbench.domain.promotion.decision import DecisionKind
from wfbench.domain.promotion.judging import PairSpec, judge_rows
from wfbench.domain.promotion.tampering import MAX_NAMED_CELLS, refuse_tampered, tampered_cells

PLANTED = "shadowing file: tests/conftest.py (added): pytest configuration or plugin (conftest/ini)"


def _judged(rows):
    _, [decision] = judge_rows(rows, [PairSpec(ARM, "workflow")], model=MODEL, policy=STATISTICAL)
    return decision


def _with_diagnostic(rows, arm: str, diagnostic: str = PLANTED, count: int = 1):
    planted = 0
    out = []
    for row in rows:
        if row.arm == arm and planted < count:
            out.append(attrs.evolve(row, extra={**row.extra, "evidence_diagnostics": [diagnostic]}))
            planted += 1
        else:
            out.append(row)
    return out


def test_a_promoted_candidate_with_one_infrastructure_edit_keeps_the_incumbent_naming_file_and_cell() -> None:
    assert _judged(sweep_rows()).kind is DecisionKind.PROMOTE  # control: the clean sweep promotes
    rows = _with_diagnostic(sweep_rows(), ARM)
    first = next(row for row in rows if row.arm == ARM)
    decision = _judged(rows)
    assert decision.kind is DecisionKind.KEEP_INCUMBENT
    cell = f"{first.task}/{ARM}/run-{first.run}"
    reason = f"test-infrastructure edits block promotion (1): {cell}: tests/conftest.py"
    assert decision.reasons[-1] == reason
    assert [v.kind for v in decision.verdicts] == [DecisionKind.KEEP_INCUMBENT] * len(decision.verdicts)
    assert all(v.reasons[-1] == reason for v in decision.verdicts)


def test_edits_in_the_incumbents_cells_or_other_diagnostics_do_not_refuse() -> None:
    assert _judged(_with_diagnostic(sweep_rows(), "workflow")).kind is DecisionKind.PROMOTE
    other = "undiffed file: big.bin (104857600 bytes): over the per-file limit"
    assert _judged(_with_diagnostic(sweep_rows(), ARM, other)).kind is DecisionKind.PROMOTE


def test_a_decision_that_was_not_promote_keeps_its_kind_and_gains_the_reason() -> None:
    decision = attrs.evolve(_judged(sweep_rows()), kind=DecisionKind.INSUFFICIENT_EVIDENCE)
    refused = refuse_tampered(decision, [(("t", ARM, 0), (PLANTED,))])
    assert refused.kind is DecisionKind.INSUFFICIENT_EVIDENCE
    assert refused.reasons[-1].endswith("t/candidate_workflow/run-0: tests/conftest.py")
    assert refuse_tampered(decision, [(("t", ARM, 0), ("other",))]) is decision


def test_past_the_limit_the_rest_of_the_cells_is_counted() -> None:
    diagnostics = [((f"t{i}", ARM, 0), (PLANTED, 7)) for i in range(MAX_NAMED_CELLS + 2)]
    assert len(tampered_cells(diagnostics, ARM)) == MAX_NAMED_CELLS + 2
    assert tampered_cells(diagnostics, "workflow") == ()
    refused = refuse_tampered(_judged(sweep_rows()), diagnostics)
    assert refused.reasons[-1].endswith(" and 2 more")
    assert f"({MAX_NAMED_CELLS + 2})" in refused.reasons[-1]
    assert f"t{MAX_NAMED_CELLS}/" not in refused.reasons[-1]


def test_cells_are_named_across_arms_in_row_order_and_paths_keep_their_spaces() -> None:
    spaced = "shadowing file: my dir/conftest.py (added): pytest configuration or plugin (conftest/ini)"
    diagnostics = [
        (("t0", "workflow", 0), (PLANTED,)),
        (("t1", ARM, 2), (spaced,)),
        (("t2", ARM, 0), (PLANTED,)),
    ]
    assert tampered_cells(diagnostics, ARM) == (
        f"t1/{ARM}/run-2: my dir/conftest.py",
        f"t2/{ARM}/run-0: tests/conftest.py",
    )
    refused = refuse_tampered(_judged(sweep_rows()), diagnostics)
    assert refused.reasons[-1] == (
        f"test-infrastructure edits block promotion (2): t1/{ARM}/run-2: my dir/conftest.py; "
        f"t2/{ARM}/run-0: tests/conftest.py"
    )


def test_exactly_the_limit_of_cells_is_named_without_a_count() -> None:
    diagnostics = [((f"t{i}", ARM, 0), (PLANTED,)) for i in range(MAX_NAMED_CELLS)]
    refused = refuse_tampered(_judged(sweep_rows()), diagnostics)
    assert refused.reasons[-1].endswith(f"t{MAX_NAMED_CELLS - 1}/{ARM}/run-0: tests/conftest.py")
