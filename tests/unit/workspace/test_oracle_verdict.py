"""The hidden oracle's verdict: an exit status, or an exit status plus a matching JUnit report."""

from __future__ import annotations

from wfbench.domain.workspace.oracle import CaseOutcome, OracleVerdict, ReportedCase, oracle_verdict

PASS = CaseOutcome.PASSED
OK_CASES = (ReportedCase("test_hidden::test_a", PASS), ReportedCase("test_hidden::test_b", PASS))


def _junit(**kw):
    return oracle_verdict(require_report=True, **{"exit_ok": True, "returncode": 0, "report": OK_CASES, **kw})


def test_without_a_report_the_exit_status_decides() -> None:
    assert oracle_verdict(exit_ok=True, returncode=0, report=None) == OracleVerdict(True, "exit-code")
    assert oracle_verdict(exit_ok=False, returncode=3, report=None) == OracleVerdict(
        False, "exit-code", "the oracle exited 3"
    )


def test_a_passing_report_with_every_expected_id_passes() -> None:
    assert _junit(expect=("test_hidden::test_a", "test_b")) == OracleVerdict(True, "junit")


def test_an_exit_0_without_a_report_is_refused() -> None:
    verdict = _junit(report=None, report_problem="no report was written")
    assert verdict == OracleVerdict(
        False, "junit", "the oracle exited 0 without a valid JUnit report (no report was written)"
    )
    assert "exited 2 without" in str(_junit(report=None, exit_ok=False, returncode=2).detail)


def test_a_passing_report_with_a_failing_exit_status_fails() -> None:
    assert _junit(exit_ok=False, returncode=1) == OracleVerdict(False, "junit", "the oracle exited 1")


def test_an_empty_report_fails() -> None:
    assert _junit(report=()) == OracleVerdict(False, "junit", "the JUnit report holds no test case")


def test_a_skipped_failed_or_erroring_case_fails_and_only_counts_are_named() -> None:
    cases = (
        ReportedCase("t::a", PASS),
        ReportedCase("t::secret_name", CaseOutcome.SKIPPED),
        ReportedCase("t::c", CaseOutcome.FAILED),
        ReportedCase("t::d", CaseOutcome.ERROR),
    )
    verdict = _junit(report=cases)
    assert verdict == OracleVerdict(
        False, "junit", "3 of 4 test case(s) did not pass (1 error, 1 failed, 1 skipped)"
    )
    assert "secret_name" not in str(verdict.detail)


def test_a_missing_expected_id_fails() -> None:
    verdict = _junit(expect=("test_hidden::test_a", "test_hidden::test_z"))
    assert verdict == OracleVerdict(False, "junit", "1 of 2 expected test case(s) missing from the report")


def test_a_bare_expected_name_matches_only_the_name_part() -> None:
    case = ReportedCase("pkg.test_mod::test_x", PASS)
    assert case.matches("test_x")
    assert case.matches("pkg.test_mod::test_x")
    assert not case.matches("other::test_x")
    assert not case.matches("test_x_more")
