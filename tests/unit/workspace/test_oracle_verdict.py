"""The hidden oracle's verdict: an exit status, or an exit status plus a JUnit report and canaries."""

from __future__ import annotations

from wfbench.domain.workspace.oracle import (
    PATCH_NOT_APPLIED_STATUS,
    Canaries,
    CaseOutcome,
    OracleOutcome,
    OracleVerdict,
    ReportedCase,
    junit_id,
    oracle_verdict,
)

PASS, FAIL = CaseOutcome.PASSED, CaseOutcome.FAILED
OK_CASES = (ReportedCase("test_hidden::test_a", PASS), ReportedCase("test_hidden::test_b", PASS))
CANARIES = Canaries(holds="test_wfbcanary_x_holds", trips="test_wfbcanary_x_trips")
HONEST_CANARIES = (
    ReportedCase("test_wfbcanary_x.TestWfbCanaryx::test_wfbcanary_x_holds", PASS),
    ReportedCase("test_wfbcanary_x.TestWfbCanaryx::test_wfbcanary_x_trips", FAIL),
)
MISSING = OracleOutcome.EXPECTED_MISSING


def _junit(**kw):
    return oracle_verdict(require_report=True, **{"exit_ok": True, "returncode": 0, "report": OK_CASES, **kw})


def _canaried(cases=OK_CASES + HONEST_CANARIES, returncode=1, **kw):
    return _junit(report=cases, exit_ok=returncode == 0, returncode=returncode, canaries=CANARIES, **kw)


def test_without_a_report_the_exit_status_decides() -> None:
    assert oracle_verdict(exit_ok=True, returncode=0, report=None) == OracleVerdict(
        True, "exit-code", None, OracleOutcome.PASSED
    )
    assert oracle_verdict(exit_ok=False, returncode=3, report=None) == OracleVerdict(
        False, "exit-code", "the oracle exited 3", OracleOutcome.EXIT_STATUS
    )


def test_a_passing_report_with_every_expected_id_passes() -> None:
    assert _junit(expect=("test_hidden::test_a", "test_b")) == OracleVerdict(
        True, "junit", None, OracleOutcome.PASSED
    )


def test_an_exit_0_without_a_report_is_refused() -> None:
    verdict = _junit(report=None, report_problem="no report was written")
    assert verdict == OracleVerdict(
        False,
        "junit",
        "the oracle exited 0 without a valid JUnit report (no report was written)",
        OracleOutcome.NO_REPORT,
    )
    assert "exited 2 without" in str(_junit(report=None, exit_ok=False, returncode=2).detail)


def test_the_runners_patch_status_without_a_report_says_the_test_patch_did_not_apply() -> None:
    verdict = _junit(report=None, exit_ok=False, returncode=PATCH_NOT_APPLIED_STATUS)
    assert verdict == OracleVerdict(
        False, "junit", "the test patch did not apply", OracleOutcome.PATCH_NOT_APPLIED
    )


def test_a_passing_report_with_a_failing_exit_status_fails() -> None:
    assert _junit(exit_ok=False, returncode=1) == OracleVerdict(
        False, "junit", "the oracle exited 1", OracleOutcome.EXIT_STATUS
    )


def test_an_empty_report_fails() -> None:
    assert _junit(report=()) == OracleVerdict(
        False, "junit", "the JUnit report holds no test case", OracleOutcome.NO_REPORT
    )


def test_a_skipped_failed_or_erroring_case_fails_and_only_counts_are_named() -> None:
    cases = (
        ReportedCase("t::a", PASS),
        ReportedCase("t::secret_name", CaseOutcome.SKIPPED),
        ReportedCase("t::c", CaseOutcome.FAILED),
        ReportedCase("t::d", CaseOutcome.ERROR),
    )
    verdict = _junit(report=cases, expect=("t::a", "t::c", "t::gone"), exit_ok=False, returncode=1)
    assert verdict == OracleVerdict(
        False, "junit", "the oracle exited 1", OracleOutcome.TESTS_FAILED, ("t::c", "t::gone")
    )
    verdict = _junit(report=cases, expect=("t::a", "t::c"))
    assert verdict == OracleVerdict(
        False,
        "junit",
        "3 of 4 test case(s) did not pass (1 error, 1 failed, 1 skipped)",
        OracleOutcome.TESTS_FAILED,
        ("t::c",),
    )
    assert "secret_name" not in str(verdict.detail)


def test_a_missing_expected_id_fails_naming_it_for_the_author_only() -> None:
    verdict = _junit(expect=("test_hidden::test_a", "test_hidden::test_z"))
    assert verdict == OracleVerdict(
        False,
        "junit",
        "1 of 2 expected test case(s) missing from the report",
        MISSING,
        ("test_hidden::test_z",),
    )
    assert _junit(exit_ok=False, returncode=1, expect=("test_z",)).outcome is MISSING


def test_a_bare_expected_name_matches_only_the_name_part() -> None:
    case = ReportedCase("pkg.test_mod::test_x", PASS)
    assert case.matches("test_x")
    assert case.matches("pkg.test_mod::test_x")
    assert not case.matches("other::test_x")
    assert not case.matches("test_x_more")


def test_a_pytest_node_id_matches_its_junit_classname_and_name() -> None:
    assert junit_id("tests/test_m.py::TestC::test_y[a/b.py::c]") == "tests.test_m.TestC::test_y[a/b.py::c]"
    assert junit_id("tests/test_m.py::test_y") == "tests.test_m::test_y"
    assert junit_id("test_hidden::test_a") == "test_hidden::test_a"
    assert junit_id("a[x.py::b]") == "a[x.py::b]"
    assert ReportedCase("tests.test_m::test_y", PASS).matches("tests/test_m.py::test_y")
    assert not ReportedCase("tests.test_m::test_y", PASS).matches("tests/test_n.py::test_y")


def test_honest_canaries_need_exit_status_1_and_then_the_hidden_cases_decide() -> None:
    assert _canaried(expect=("test_a",)) == OracleVerdict(True, "junit", None, OracleOutcome.PASSED)
    failing = (ReportedCase("test_hidden::test_a", FAIL), *HONEST_CANARIES)
    assert _canaried(failing, expect=("test_a",)) == OracleVerdict(
        False, "junit", "1 of 1 test case(s) did not pass (1 failed)", OracleOutcome.TESTS_FAILED, ("test_a",)
    )
    assert _canaried(HONEST_CANARIES).outcome is OracleOutcome.NO_REPORT
    assert _canaried(returncode=2) == OracleVerdict(
        False, "junit", "the oracle exited 2", OracleOutcome.EXIT_STATUS
    )


def test_a_must_fail_canary_that_passes_or_an_exit_0_is_a_tripped_canary() -> None:
    forged = (*OK_CASES, HONEST_CANARIES[0], ReportedCase(HONEST_CANARIES[1].id, PASS))
    verdict = _canaried(forged)
    assert verdict == OracleVerdict(
        False,
        "junit",
        "the must-fail canary test_wfbcanary_x_trips did not fail (1 passed)",
        OracleOutcome.CANARY_TRIPPED,
    )
    assert _canaried(returncode=0) == OracleVerdict(
        False,
        "junit",
        "the oracle exited 0 although the must-fail canary failed (a forged exit status)",
        OracleOutcome.CANARY_TRIPPED,
    )


def test_a_missing_canary_or_a_failing_must_pass_canary_trips() -> None:
    for cases in (OK_CASES + HONEST_CANARIES[:1], OK_CASES + HONEST_CANARIES[1:]):
        verdict = _canaried(cases)
        assert verdict.outcome is OracleOutcome.CANARY_TRIPPED
        assert "did not run" in str(verdict.detail)
    broken = (*OK_CASES, ReportedCase(HONEST_CANARIES[0].id, CaseOutcome.ERROR), HONEST_CANARIES[1])
    assert _canaried(broken) == OracleVerdict(
        False,
        "junit",
        "the must-pass canary test_wfbcanary_x_holds did not pass (1 error)",
        OracleOutcome.CANARY_TRIPPED,
    )


def test_a_failing_must_pass_canary_beside_failing_hidden_tests_is_tests_failed() -> None:
    cases = (
        ReportedCase("test_hidden::test_a", CaseOutcome.ERROR),
        ReportedCase(HONEST_CANARIES[0].id, CaseOutcome.ERROR),
        HONEST_CANARIES[1],
    )
    assert _canaried(cases).outcome is OracleOutcome.TESTS_FAILED


# --- mutation kills (issue 25) ---------------------------------------------------------------------
def test_a_bare_name_is_everything_after_the_classname() -> None:
    case = ReportedCase("tests.test_m::test_y[a::b]", PASS)
    assert case.matches("tests.test_m::test_y[a::b]")
    assert not case.matches("b]")


def test_nested_brackets_in_a_node_id_stay_in_the_name() -> None:
    assert junit_id("t/x.py::C::test_y[a[b]::c]") == "t.x.C::test_y[a[b]::c]"
    assert junit_id("t/x.py::C::test_y[a::b[c]]") == "t.x.C::test_y[a::b[c]]"


def test_counts_add_up_per_outcome() -> None:
    cases = (ReportedCase("t::a", FAIL), ReportedCase("t::b", FAIL), ReportedCase("t::c", PASS))
    assert _junit(report=cases).detail == "2 of 3 test case(s) did not pass (2 failed)"


def test_a_tripped_canary_still_names_the_failing_and_missing_ids_for_the_author() -> None:
    cases = (ReportedCase("test_hidden::test_a", FAIL), HONEST_CANARIES[0])
    verdict = _canaried(cases, expect=("test_a", "test_gone"))
    assert (verdict.outcome, verdict.failing_ids) == (OracleOutcome.CANARY_TRIPPED, ("test_a", "test_gone"))
    assert (
        verdict.detail
        == "a harness canary did not run (the oracle must run the canary staged beside its tests)"
    )
    forged_exit = _canaried(
        (ReportedCase("test_hidden::test_a", FAIL), *HONEST_CANARIES), returncode=0, expect=("test_a",)
    )
    assert (forged_exit.outcome, forged_exit.failing_ids) == (OracleOutcome.CANARY_TRIPPED, ("test_a",))


def test_a_report_of_canaries_alone_says_so() -> None:
    assert _canaried(HONEST_CANARIES) == OracleVerdict(
        False, "junit", "the JUnit report holds no test case but the canaries", OracleOutcome.NO_REPORT
    )


def test_without_a_named_problem_the_report_is_said_missing() -> None:
    assert _junit(report=None, exit_ok=False, returncode=2).detail == (
        "the oracle exited 2 without a valid JUnit report (no report was written)"
    )
