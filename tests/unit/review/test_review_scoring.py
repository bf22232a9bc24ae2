"""Scoring reviews: every acceptance example of reference §6.1-6.2, the metrics, the oracle."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from wfbench.domain.review.scoring import (
    SCORE_KEYS,
    Finding,
    Label,
    ReviewArtifact,
    ReviewLabels,
    ReviewScore,
    Severity,
    Verdict,
    review_oracle_passed,
    score_review,
)

H, C, M, LOW = Severity.HIGH, Severity.CRITICAL, Severity.MEDIUM, Severity.LOW


def F(**overrides: Any) -> Finding:
    """The default finding: actual-1, high, src/api.ts 20-24, correctness, blocking."""
    values: dict[str, Any] = {
        "id": "actual-1",
        "severity": H,
        "path": "src/api.ts",
        "line": 20,
        "end_line": 24,
        "category": "correctness",
        "scenario": "s",
        "evidence": "e",
        "recommendation": "r",
        "blocking": True,
    }
    values.update(overrides)
    if "line" in overrides and "end_line" not in overrides:
        values["end_line"] = values["line"]
    return Finding(**values)


def L(**overrides: Any) -> Label:
    """The default label: expected-1, high, src/api.ts 18-22, correctness."""
    values: dict[str, Any] = {
        "id": "expected-1",
        "severity": H,
        "path": "src/api.ts",
        "line_start": 18,
        "line_end": 22,
        "category": "correctness",
    }
    values.update(overrides)
    return Label(**values)


def score(verdict: str, findings: list[Finding] | tuple[Finding, ...], labels: list[Label]) -> ReviewScore:
    return score_review(ReviewArtifact(Verdict(verdict), tuple(findings)), ReviewLabels(tuple(labels)))


def metrics(result: ReviewScore, *keys: str) -> tuple[Any, ...]:
    return tuple(getattr(result, key) for key in keys)


NOISE = F(id="noise", severity=LOW, path="src/other.ts", line=1, category="style", blocking=False)


# --- §6.1 pinned and derived ------------------------------------------------------------------


def test_s1_path_and_overlap_match_and_noise_is_a_false_positive() -> None:
    """S1 (pinned and derived values)."""
    result = score("request_changes", [F(), NOISE], [L()])
    assert metrics(result, "true_positives", "false_positives", "false_negatives") == (1, 1, 0)
    assert metrics(result, "recall", "precision", "blocker_recall", "verdict_correct") == (
        1.0,
        0.5,
        1.0,
        True,
    )
    assert metrics(result, "f1", "weighted_precision", "weighted_recall", "weighted_f1") == (
        0.666667,
        0.833333,
        1.0,
        0.909091,
    )


def test_s2_list_order_does_not_matter() -> None:
    """S2: b can only reach broad, so a pairs with tight; category accuracy 0."""
    labels = [
        L(id="broad", line_start=1, line_end=10, category="a"),
        L(id="tight", line_start=5, line_end=5, category="b"),
    ]
    findings = [F(id="a", line=5, category="a"), F(id="b", line=1, category="b")]
    forward = score("comment", findings, labels)
    backward = score("comment", findings[::-1], labels[::-1])
    assert forward.to_mapping() == backward.to_mapping()
    assert forward.true_positives == 2
    assert forward.category_accuracy == 0.0
    assert set(forward.pairs) == {("a", "tight"), ("b", "broad")}


def test_s3_maximum_cardinality_beats_a_greedy_category_match() -> None:
    """S3: a greedy pass would pair actual-1 with broad and strand actual-2."""
    labels = [
        L(id="broad", line_start=1, line_end=10, category="a"),
        L(id="tight", line_start=1, line_end=1, category="b"),
    ]
    findings = [F(id="actual-1", line=1, category="a"), F(id="actual-2", line=10, category="b")]
    result = score("comment", findings, labels)
    assert metrics(result, "true_positives", "false_positives", "false_negatives") == (2, 0, 0)


def test_s4_a_clean_approve_is_undefined_not_perfect_and_passes_the_clean_control() -> None:
    """S4 (pinned): no findings, no labels."""
    result = score("approve", [], [])
    assert metrics(result, "weighted_f1", "precision", "recall") == (None, None, None)
    assert metrics(result, "clean_pass", "verdict_correct", "clean_control") == (True, True, True)
    assert review_oracle_passed(result)


def test_s4_noise_on_a_clean_case_fails_the_clean_control() -> None:
    """S4 (pinned and derived): one medium noise finding with comment; negative control for clean_pass."""
    result = score("comment", [F(id="n", severity=M, path="x.py", line=1, category="style")], [])
    assert metrics(result, "false_positives", "weighted_precision", "recall") == (1, 0.0, None)
    assert metrics(result, "clean_pass", "verdict_correct", "clean_control") == (False, False, True)
    assert metrics(result, "precision", "f1", "weighted_f1") == (0.0, None, None)
    assert not review_oracle_passed(result)


def test_s5_a_silent_approve_misses_and_scores_zero_not_none() -> None:
    """S5 (pinned and derived): approving defective code."""
    result = score("approve", [], [L()])
    assert metrics(result, "f1", "weighted_f1") == (0.0, 0.0)
    assert metrics(result, "precision", "recall", "blocker_recall", "verdict_correct") == (
        None,
        0.0,
        0.0,
        False,
    )


def test_s5_noise_only_misses_and_scores_zero() -> None:
    """S5 (pinned and derived): one low noise finding with comment."""
    result = score("comment", [F(id="n", severity=LOW, path="other.py", line=1, category="style")], [L()])
    assert metrics(result, "f1", "weighted_f1", "precision") == (0.0, 0.0, 0.0)


def test_s6_a_downgraded_blocker_loses_weight_and_blocker_credit() -> None:
    """S6 (pinned and derived)."""
    result = score("comment", [F(severity=LOW, line=20)], [L()])
    assert metrics(result, "weighted_recall", "blocker_recall", "verdict_correct") == (0.2, 0.0, False)
    assert metrics(result, "true_positives", "false_positives", "false_negatives") == (1, 0, 0)
    assert metrics(result, "precision", "recall", "f1", "weighted_precision") == (1.0, 1.0, 1.0, 1.0)
    assert metrics(result, "weighted_f1", "severity_accuracy") == (0.333333, 0.0)
    assert not review_oracle_passed(result)


@pytest.mark.parametrize("size", [2, 17, 100])
@pytest.mark.parametrize("reverse_findings", [False, True])
@pytest.mark.parametrize("reverse_labels", [False, True])
def test_s7_maximum_matching_at_every_supported_size(
    size: int, reverse_findings: bool, reverse_labels: bool
) -> None:
    """S7 (pinned): the S3 pair plus size-2 one-to-one pairs on their own paths; no greedy fallback."""
    labels = [
        L(id="broad", line_start=1, line_end=10, category="a"),
        L(id="tight", line_start=1, line_end=1, category="b"),
    ]
    findings = [F(id="actual-1", line=1, category="a"), F(id="actual-2", line=10, category="b")]
    labels += [L(id=f"e{i}", path=f"{i}.py", line_start=1, line_end=1) for i in range(size - 2)]
    findings += [F(id=f"f{i}", path=f"{i}.py", line=1) for i in range(size - 2)]
    findings = findings[::-1] if reverse_findings else findings
    labels = labels[::-1] if reverse_labels else labels
    assert score("comment", findings, labels).true_positives == size


def test_s8_the_dense_limit_matches_all_hundred() -> None:
    """S8 (pinned): 100 identical findings against 100 default labels."""
    findings = [F(id=str(i), line=20) for i in range(100)]
    labels = [L(id=f"expected-{i}") for i in range(100)]
    assert score("request_changes", findings, labels).true_positives == 100


@pytest.mark.parametrize("extra", ["findings", "labels"])
def test_s9_asymmetric_large_inputs_keep_both_pairs(extra: str) -> None:
    """S9 (pinned): S3 plus 15 unlabelled findings, or plus 15 unfound labels."""
    labels = [
        L(id="broad", line_start=1, line_end=10, category="a"),
        L(id="tight", line_start=1, line_end=1, category="b"),
    ]
    findings = [F(id="actual-1", line=1, category="a"), F(id="actual-2", line=10, category="b")]
    if extra == "findings":
        findings += [F(id=f"x{i}", path=f"extra-{i}.py", line=1) for i in range(15)]
    else:
        labels += [L(id=f"x{i}", path=f"extra-{i}.py", line_start=1, line_end=1) for i in range(15)]
    assert score("comment", findings, labels).true_positives == 2


# --- §6.2 derived examples -------------------------------------------------------------------


def test_d1_touching_the_last_labelled_line_matches() -> None:
    """D1: lines 22-30 touch 18-22; with request_changes the oracle passes."""
    result = score("request_changes", [F(line=22, end_line=30)], [L()])
    assert result.true_positives == 1
    assert review_oracle_passed(result)


def test_d2_one_line_past_the_label_is_a_finding_in_the_wrong_place() -> None:
    """D2: lines 23-30; there is no line tolerance."""
    result = score("request_changes", [F(line=23, end_line=30)], [L()])
    assert metrics(result, "true_positives", "false_positives", "false_negatives", "f1", "weighted_f1") == (
        0,
        1,
        1,
        0.0,
        0.0,
    )


def test_d3_a_wrong_category_still_matches_and_passes_the_oracle() -> None:
    """D3."""
    result = score("request_changes", [F(category="security")], [L()])
    assert metrics(result, "true_positives", "category_accuracy") == (1, 0.0)
    assert review_oracle_passed(result)


def test_d4_an_upgraded_severity_is_not_rewarded_and_needs_the_right_verdict() -> None:
    """D4: medium label, critical finding: min caps the credit; the verdict must be comment."""
    result = score("request_changes", [F(severity=C)], [L(severity=M)])
    assert metrics(result, "true_positives", "weighted_precision", "weighted_recall", "weighted_f1") == (
        1,
        1.0,
        1.0,
        1.0,
    )
    assert metrics(result, "severity_accuracy", "blocker_recall", "verdict_correct") == (0.0, None, False)
    assert not review_oracle_passed(result)


@pytest.mark.parametrize(("verdict", "passes"), [("comment", True), ("request_changes", False)])
def test_d5_a_medium_only_label_set_expects_comment(verdict: str, passes: bool) -> None:
    """D5."""
    result = score(verdict, [F(severity=M, blocking=False)], [L(severity=M)])
    assert (result.verdict_correct, review_oracle_passed(result)) == (passes, passes)


def test_d6_a_duplicate_finding_is_a_false_positive() -> None:
    """D6: one label, the default finding twice under two ids."""
    result = score("request_changes", [F(), F(id="actual-2")], [L()])
    assert metrics(result, "true_positives", "false_positives", "precision", "weighted_precision") == (
        1,
        1,
        0.5,
        0.5,
    )
    assert not review_oracle_passed(result)


def test_d7_one_broad_finding_matches_one_label_only() -> None:
    """D7: it pairs with the high label l1 (severity match); l2 is missed."""
    labels = [L(id="l1", line_start=10, line_end=10), L(id="l2", severity=M, line_start=40, line_end=40)]
    result = score("request_changes", [F(line=1, end_line=50)], labels)
    assert result.pairs == (("actual-1", "l1"),)
    assert metrics(result, "true_positives", "false_negatives", "recall", "weighted_recall") == (
        1,
        1,
        0.5,
        0.714286,
    )


def test_d8_the_closer_start_wins() -> None:
    """D8: start distance 1 beats 5."""
    labels = [L(id="near", line_start=11, line_end=11), L(id="far", line_start=5, line_end=12)]
    result = score("request_changes", [F(line=10, end_line=12)], labels)
    assert (result.pairs, result.false_negatives) == ((("actual-1", "near"),), 1)


def test_d9_a_high_finding_on_a_critical_label_is_blocker_credit() -> None:
    """D9."""
    result = score(
        "request_changes",
        [F(line=10, category="security")],
        [L(severity=C, line_start=8, line_end=12, category="security")],
    )
    assert metrics(result, "blocker_recall", "weighted_recall", "severity_accuracy") == (1.0, 0.625, 0.0)


PR_2108_LABELS = [
    # Reconstructed from the reference's description: 6 labels (4 medium, 2 low, weight 10);
    # the build-extension label on Dockerfile.cli is security, a low 'other' label overlaps r1.
    L(
        id="unpinned-build-extension",
        severity=M,
        path="Dockerfile.cli",
        line_start=87,
        line_end=87,
        category="security",
    ),
    L(id="apt-cache-left", severity=LOW, path="Dockerfile.cli", line_start=88, line_end=88, category="other"),
    L(
        id="batch-failure",
        severity=M,
        path="local-backend.ts",
        line_start=1134,
        line_end=1178,
        category="correctness",
    ),
    L(
        id="retry-unbounded",
        severity=M,
        path="local-backend.ts",
        line_start=1210,
        line_end=1210,
        category="correctness",
    ),
    L(
        id="missing-regression-test",
        severity=M,
        path="local-backend.test.ts",
        line_start=40,
        line_end=40,
        category="tests",
    ),
    L(id="log-noise", severity=LOW, path="cli.ts", line_start=12, line_end=12, category="other"),
]


@pytest.mark.parametrize(("verdict", "correct"), [("request_changes", False), ("comment", True)])
def test_d10_the_pr_2108_case(verdict: str, correct: bool) -> None:
    """D10: the category match beats the overlapping low 'other' label; all derived metrics."""
    findings = [
        F(id="r1", severity=H, path="Dockerfile.cli", line=87, end_line=88, category="security"),
        F(id="r2", severity=M, path="local-backend.ts", line=1150, end_line=1160, category="correctness"),
        F(id="r3", severity=H, path="unlabelled.ts", line=5, category="correctness"),
    ]
    result = score(verdict, findings, PR_2108_LABELS)
    assert set(result.pairs) == {("r1", "unpinned-build-extension"), ("r2", "batch-failure")}
    assert metrics(result, "true_positives", "false_positives", "false_negatives") == (2, 1, 4)
    assert metrics(result, "precision", "recall", "f1") == (0.666667, 0.333333, 0.444444)
    assert metrics(result, "weighted_precision", "weighted_recall", "weighted_f1") == (
        0.444444,
        0.4,
        0.421053,
    )
    assert metrics(result, "blocker_recall", "severity_accuracy", "category_accuracy") == (None, 0.5, 1.0)
    assert result.verdict_correct is correct


D11_LABELS = [
    L(id="e0", severity=C, path="p", line_start=1, line_end=1, category="x"),
    L(id="e1", severity=LOW, path="p", line_start=3, line_end=4, category="y"),
]


@pytest.mark.parametrize("renamed", ["a2", "Z"])
def test_d11_renaming_a_finding_does_not_change_the_score(renamed: str) -> None:
    """D11 — our deliberate difference changes the expected values. The reference pairs a0 with e1
    (a0 is processed first by id): category_accuracy 0.0, weighted_f1 0.153846; renaming a2 to Z
    flips it to 1.0 / 0.125. Our matching maximizes category matches over the whole assignment,
    so both names give a2/Z <-> e1, category_accuracy 1.0 and weighted_f1 0.125."""
    findings = [
        F(id="a0", severity=H, path="p", line=3, end_line=5, category="x"),
        F(id="a1", severity=LOW, path="p", line=6, end_line=8, category="x"),
        F(id=renamed, severity=M, path="p", line=4, end_line=5, category="y"),
    ]
    result = score("request_changes", findings, D11_LABELS)
    assert result.pairs == ((renamed, "e1"),)
    assert metrics(result, "true_positives", "false_positives", "false_negatives") == (1, 2, 1)
    assert metrics(result, "category_accuracy", "weighted_f1") == (1.0, 0.125)


# --- §6.3 negative controls at the scoring level ----------------------------------------------


def test_a_finding_in_the_wrong_place_is_one_false_positive_and_one_miss() -> None:
    """Negative control: path src/WRONG.js line 99 against a label on src/sum.js line 1."""
    result = score(
        "request_changes", [F(path="src/WRONG.js", line=99)], [L(path="src/sum.js", line_start=1, line_end=1)]
    )
    assert metrics(result, "true_positives", "false_positives", "false_negatives", "f1") == (0, 1, 1, 0.0)
    assert not review_oracle_passed(result)


def test_approving_defective_code_is_verdict_incorrect_with_undefined_precision() -> None:
    """Negative control: approve with no findings; precision is undefined, not zero."""
    result = score("approve", [], [L(path="src/sum.js", line_start=1, line_end=1)])
    assert metrics(result, "true_positives", "false_positives", "false_negatives") == (0, 0, 1)
    assert (result.precision, result.verdict_correct) == (None, False)
    assert not review_oracle_passed(result)


def test_a_clean_control_with_a_false_positive_fails_clean_pass() -> None:
    """Negative control: the clean case passes only with approve and nothing found."""
    assert score("comment", [NOISE], []).clean_pass is False
    assert score("approve", [NOISE], []).clean_pass is False
    assert score("comment", [], []).clean_pass is False
    assert score("approve", [], []).clean_pass is True


# --- the oracle, the dict, the rows ------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "passes"),
    [
        ({}, True),
        ({"false_positives": 1}, False),
        ({"false_negatives": 1}, False),
        ({"verdict_correct": False}, False),
    ],
)
def test_the_review_oracle_needs_no_extra_no_miss_and_the_right_verdict(
    change: dict[str, Any], passes: bool
) -> None:
    """§4.1: each of the three conditions is needed on its own."""
    perfect = score("request_changes", [F()], [L()])
    assert review_oracle_passed(attrs.evolve(perfect, **change)) is passes


def test_the_score_dict_has_exactly_the_reference_keys_in_order() -> None:
    """§3.7: seventeen keys; the row fields prefix each with review_."""
    result = score("request_changes", [F()], [L()])
    assert tuple(result.to_mapping()) == SCORE_KEYS
    assert len(SCORE_KEYS) == 17
    assert result.row_fields() == {f"review_{key}": value for key, value in result.to_mapping().items()}
    assert result.row_fields()["review_weighted_f1"] == 1.0


def test_a_perfect_review_scores_one_everywhere() -> None:
    """Every ratio is 1.0 and every flag that applies is true."""
    mapping = score("request_changes", [F()], [L()]).to_mapping()
    assert mapping == {
        "true_positives": 1,
        "false_positives": 0,
        "false_negatives": 0,
        "precision": 1.0,
        "recall": 1.0,
        "f1": 1.0,
        "weighted_precision": 1.0,
        "weighted_recall": 1.0,
        "weighted_f1": 1.0,
        "blocker_recall": 1.0,
        "severity_accuracy": 1.0,
        "category_accuracy": 1.0,
        "grounded_evidence": 1.0,
        "verdict_correct": True,
        "clean_control": False,
        "clean_pass": False,
        "score_finite": True,
    }


def test_grounded_evidence_counts_findings_with_path_line_and_evidence() -> None:
    """The vestigial metric: None without findings; blank evidence, no path or line 0 is not grounded."""
    assert score("comment", [F(), F(id="b", evidence="  ")], [L()]).grounded_evidence == 0.5
    assert score("comment", [F(line=1), F(id="b", path="")], [L()]).grounded_evidence == 0.5
    assert score("comment", [F(line=0), F(id="b", line=1)], [L()]).grounded_evidence == 0.5
    assert score("approve", [], [L()]).grounded_evidence is None


def test_accuracies_are_undefined_without_pairs() -> None:
    """severity and category accuracy are None when nothing matched."""
    result = score("comment", [NOISE], [L()])
    assert metrics(result, "severity_accuracy", "category_accuracy") == (None, None)


def test_ratios_are_rounded_to_six_decimals() -> None:
    """1/3 becomes 0.333333 and 2/3 becomes 0.666667."""
    findings = [F(), F(id="b", path="b.py"), F(id="c", path="c.py")]
    result = score("request_changes", findings, [L(), L(id="l2", path="x.py"), L(id="l3", path="y.py")])
    assert metrics(result, "precision", "recall", "f1") == (0.333333, 0.333333, 0.333333)
    result = score("request_changes", [F(), F(id="b", path="b.py"), F(id="c")], [L(), L(id="l2")])
    assert result.precision == 0.666667


def test_unmatched_findings_weigh_by_their_own_severity() -> None:
    """FPW sums each unmatched finding's weight: 5 matched credit against 8 + 1 unmatched."""
    findings = [F(), F(id="c", severity=C, path="c.py"), F(id="l", severity=LOW, path="l.py")]
    assert score("request_changes", findings, [L()]).weighted_precision == round(5 / 14, 6)


def test_blocker_recall_counts_only_blocking_labels_found_by_blocking_findings() -> None:
    """Two blockers, one found by a high finding, one by a medium one: 0.5; a medium label is ignored."""
    labels = [L(), L(id="b2", severity=C, path="c.py"), L(id="m", severity=M, path="m.py")]
    findings = [F(), F(id="x", severity=M, path="c.py"), F(id="y", severity=M, path="m.py")]
    assert score("request_changes", findings, labels).blocker_recall == 0.5


def test_weighted_f1_is_zero_when_every_finding_misses() -> None:
    """Labels exist and precision and recall are both 0: 0.0, not None."""
    result = score("comment", [NOISE], [L()])
    assert metrics(result, "weighted_precision", "weighted_recall", "weighted_f1") == (0.0, 0.0, 0.0)
    assert result.score_finite is True
