"""`wfbench gate --policy statistical` as a real subprocess: the policy decides, both are recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

from tests.cli.test_gate_cmd import reference_row, wfbench, write_results
from wfbench.cli.options.gate import Policy
from wfbench.domain.promotion.policy import DecisionPolicy


def _rows() -> list[dict]:
    """Twelve tasks: the candidate resolves 3/3 on eleven where the incumbent resolves 1/3, and
    drops one run on the twelfth (the reference blocks on that one task; statistics do not)."""
    rows = []
    for index in range(12):
        task = f"task-{index:02d}"
        inc, cand = ("100", "111") if index < 11 else ("111", "110")
        for arm, pattern in (("workflow", inc), ("candidate_workflow", cand)):
            for run, flag in enumerate(pattern):
                resolved = flag == "1"
                extra = {} if resolved else {"oracle_passed": False, "error_kind": "oracle-failed"}
                rows.append(reference_row(task, arm, run, resolved=resolved, **extra))
    return rows


def test_gate_under_the_statistical_policy_records_both_decisions(tmp_path: Path) -> None:
    write_results(tmp_path, _rows())

    done = wfbench("gate", tmp_path, "--policy", "statistical", "--json")

    assert done.returncode == 0, done.stderr
    evidence = json.loads(done.stdout)
    (decision,) = evidence["decisions"]
    assert decision["policy"] == "statistical"
    assert decision["decision"] == "promote"
    assert decision["by_policy"]["reference"]["decision"] == "keep_incumbent"
    assert decision["statistics"]["resolution"]["n_tasks"] == 12
    assert evidence["policy"]["candidate_workflow"]["decision_policy"] == "statistical"


def test_gate_text_shows_the_other_policy_s_decision_beside(tmp_path: Path) -> None:
    write_results(tmp_path, _rows())

    done = wfbench("gate", tmp_path, "--policy", "reference")
    default = wfbench("gate", tmp_path)

    assert done.returncode == 0, done.stderr
    assert "KEEP_INCUMBENT" in done.stdout
    assert "(statistical policy: promote)" in done.stdout
    assert "PROMOTE" in default.stdout
    assert "(reference policy: keep_incumbent)" in default.stdout
    assert "  = resolution: +58.3 points, 90% interval [" in done.stdout
    assert "  = cost_usd saving: 0.0%, 90% interval [0.0%, 0.0%] (12 tasks x 3 runs)" in done.stdout


def test_an_unknown_policy_exits_2_naming_the_option(tmp_path: Path) -> None:
    write_results(tmp_path, _rows())

    done = wfbench("gate", tmp_path, "--policy", "bayesian")

    assert done.returncode == 2
    assert "--policy" in done.stderr
    assert "reference" in done.stderr
    assert "statistical" in done.stderr


def test_the_policy_choices_are_the_domain_s() -> None:
    assert set(get_args(Policy)) == {member.value for member in DecisionPolicy}
