"""A finished sweep's own exit code (its ``sweep_finished`` and ``summary`` events) honours --fail-on."""

from __future__ import annotations

import pytest

from wfbench.app.sweep.sweep import DECISION_EXIT, _fails_on
from wfbench.cli.exit_codes import DECISION


def test_the_sweep_s_decision_exit_is_the_cli_s() -> None:
    assert DECISION_EXIT == DECISION


@pytest.mark.parametrize(
    ("decisions", "fail_on", "fails"),
    [
        ((("c", "promote"),), frozenset({"keep_incumbent", "insufficient_evidence"}), False),
        ((("c", "promote"), ("d", "keep_incumbent")), frozenset({"keep_incumbent"}), True),
        ((), frozenset({"insufficient_evidence"}), True),
        ((), frozenset({"keep_incumbent"}), False),
        ((("c", "keep_incumbent"),), frozenset(), False),
    ],
    ids=["promoted", "one-kept", "no-decision-is-insufficient", "no-decision-not-named", "no-fail-on"],
)
def test_fail_on_names_a_decision_of_the_sweep(
    decisions: tuple[tuple[str, str], ...], fail_on: frozenset[str], fails: bool
) -> None:
    assert _fails_on(decisions, fail_on) is fails
