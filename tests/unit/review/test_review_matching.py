"""Optimal matching: maximum cardinality, then the best total quality, never ids or order."""

from __future__ import annotations

import itertools
import posixpath
import random
from collections.abc import Sequence
from typing import Any

import attrs
from hypothesis import example, given
from hypothesis import strategies as st

from tests.strategies import review_artifacts, review_findings, review_labels
from tests.unit.review.test_review_scoring import F, L, score
from wfbench.domain.review.fields import normalize_repo_path
from wfbench.domain.review.matching import _max_weight_assignment, edge_quality, match_findings, overlaps
from wfbench.domain.review.scoring import Finding, Label, ReviewArtifact, ReviewLabels, Severity, score_review


def total_quality(pairs: Sequence[tuple[Finding, Label]]) -> tuple[int, ...]:
    """(pairs, category matches, severity matches, -distance, -width) summed over a matching."""
    qualities = [edge_quality(finding, label) for finding, label in pairs]
    return (len(pairs), *(sum(quality[index] for quality in qualities) for index in range(4)))


def brute_force_best(findings: Sequence[Finding], labels: Sequence[Label]) -> tuple[int, ...]:
    """The best total quality over every matching, by exhaustive search."""
    best = total_quality([])

    def search(index: int, used: frozenset[int], chosen: list[tuple[Finding, Label]]) -> None:
        nonlocal best
        if index == len(findings):
            best = max(best, total_quality(chosen))
            return
        search(index + 1, used, chosen)
        for j, label in enumerate(labels):
            if j not in used and overlaps(findings[index], label):
                search(index + 1, used | {j}, [*chosen, (findings[index], label)])

    search(0, frozenset(), [])
    return best


@given(st.lists(review_findings(), max_size=6), review_labels(max_labels=6))
def test_the_matching_has_the_best_total_quality_of_all_matchings(
    findings: list[Finding], labels: ReviewLabels
) -> None:
    """Exhaustive search agrees on (pairs, categories, severities, -distance, -width)."""
    findings = [attrs.evolve(finding, id=str(index)) for index, finding in enumerate(findings)]
    pairs = match_findings(findings, labels.labels)
    assert len({id(f) for f, _ in pairs}) == len({label.id for _, label in pairs}) == len(pairs)
    assert all(overlaps(finding, label) for finding, label in pairs)
    assert total_quality(pairs) == brute_force_best(findings, labels.labels)


@given(review_artifacts(max_findings=10), review_labels(max_labels=10), st.randoms(use_true_random=False))
def test_the_score_is_invariant_to_the_order_of_findings_and_labels(
    artifact: ReviewArtifact, labels: ReviewLabels, random: Any
) -> None:
    """Shuffling findings and labels changes no metric."""
    findings, shuffled_labels = list(artifact.findings), list(labels.labels)
    random.shuffle(findings)
    random.shuffle(shuffled_labels)
    shuffled = score_review(
        attrs.evolve(artifact, findings=tuple(findings)), ReviewLabels(tuple(shuffled_labels))
    )
    assert shuffled.to_mapping() == score_review(artifact, labels).to_mapping()


@given(review_artifacts(max_findings=10), review_labels(max_labels=10), st.randoms(use_true_random=False))
def test_the_score_is_invariant_to_renaming_findings(
    artifact: ReviewArtifact, labels: ReviewLabels, random: Any
) -> None:
    """Giving the findings other unique ids (in another order) changes no metric."""
    names = [f"renamed-{index}" for index in range(len(artifact.findings))]
    random.shuffle(names)
    renamed = tuple(
        attrs.evolve(finding, id=name) for finding, name in zip(artifact.findings, names, strict=True)
    )
    before = score_review(artifact, labels).to_mapping()
    assert score_review(attrs.evolve(artifact, findings=renamed), labels).to_mapping() == before


def test_category_match_outranks_severity_match() -> None:
    """One finding, two labels: the category-equal one wins over the severity-equal one."""
    labels = [L(id="sev", severity=Severity.HIGH, category="tests"), L(id="cat", severity=Severity.LOW)]
    assert score("comment", [F()], labels).pairs == (("actual-1", "cat"),)


def test_severity_match_outranks_start_distance() -> None:
    """A far label with the right severity beats a near label with another severity."""
    labels = [
        L(id="near", severity=Severity.LOW, line_start=20, line_end=20),
        L(id="far", line_start=10, line_end=30),
    ]
    assert score("comment", [F()], labels).pairs == (("actual-1", "far"),)


def test_start_distance_outranks_label_width() -> None:
    """A wide label starting at the finding beats a narrow one starting one line off."""
    labels = [L(id="narrow", line_start=21, line_end=21), L(id="wide", line_start=20, line_end=40)]
    assert score("comment", [F()], labels).pairs == (("actual-1", "wide"),)


def test_the_narrower_label_wins_when_all_else_is_equal() -> None:
    """Same start: the narrower label is preferred."""
    labels = [L(id="wide", line_start=20, line_end=40), L(id="narrow", line_start=20, line_end=22)]
    assert score("comment", [F()], labels).pairs == (("actual-1", "narrow"),)


def test_quality_is_summed_over_the_assignment_not_taken_greedily() -> None:
    """f1 could take either label; giving it the severity-equal one would strand f2's category match.

    Totals: (f1-b, f2-a) has 2 category matches; a greedy f1-a first would give only 1.
    """
    labels = [
        L(id="a", category="x", severity=Severity.LOW, line_start=1, line_end=5),
        L(id="b", category="x", line_start=1, line_end=5),
    ]
    findings = [F(id="f1", category="x", line=1), F(id="f2", category="x", severity=Severity.LOW, line=5)]
    assert set(score("comment", findings, labels).pairs) == {("f1", "b"), ("f2", "a")}


def test_more_findings_than_labels_in_one_component_is_solved_exactly() -> None:
    """Three findings compete for two labels; the best two win (the transposed solver path)."""
    labels = [
        L(id="x", category="a", line_start=1, line_end=10),
        L(id="y", category="b", line_start=1, line_end=10),
    ]
    findings = [
        F(id="p", category="c", line=1),
        F(id="q", category="a", line=1),
        F(id="r", category="b", line=1),
    ]
    assert set(score("comment", findings, labels).pairs) == {("q", "x"), ("r", "y")}


def test_findings_that_differ_only_by_id_are_interchangeable() -> None:
    """Two identical findings, one label: exactly one pair, and the metrics do not depend on which."""
    one = score("request_changes", [F(id="b"), F(id="a")], [L()])
    other = score("request_changes", [F(id="a"), F(id="z")], [L()])
    assert one.to_mapping() == other.to_mapping()
    assert one.true_positives == 1


def test_ties_left_after_the_ranking_are_broken_by_content_not_by_id() -> None:
    """Two findings equal on every criterion but their narrative: the same content wins under any ids."""
    first = F(id="a", evidence="alpha", severity=Severity.MEDIUM)
    second = F(id="b", evidence="beta", severity=Severity.MEDIUM)
    label = [L(severity=Severity.LOW)]
    chosen = {
        score("comment", findings, label).pairs[0][0] for findings in ([first, second], [second, first])
    }
    swapped = [attrs.evolve(first, id="b"), attrs.evolve(second, id="a")]
    assert chosen == {"a"}
    assert score("comment", swapped, label).pairs == (("b", "expected-1"),)


def test_no_edge_without_the_same_path_or_overlapping_lines() -> None:
    """Edges need the exact same normalized path and touching closed ranges."""
    assert overlaps(F(line=22, end_line=30), L())
    assert overlaps(F(line=1, end_line=18), L())
    assert not overlaps(F(line=23, end_line=30), L())
    assert not overlaps(F(line=1, end_line=17), L())
    assert not overlaps(F(path="src/API.ts"), L())


def test_the_edge_quality_is_the_reference_rank_tuple() -> None:
    """(category equal, severity equal, -start distance, -label width)."""
    assert edge_quality(F(), L()) == (1, 1, -2, -4)
    assert edge_quality(F(category="x", severity=Severity.LOW, line=18), L()) == (0, 0, 0, -4)


def test_unmatched_findings_and_labels_stay_out_of_the_pairs() -> None:
    """Findings with no edge are not paired; pairs come back in content order."""
    pairs = match_findings(
        [F(id="z", path="other.ts"), F(id="y", line=18), F(id="x", path="a.ts", line=1)],
        [L(), L(id="e2", path="a.ts", line_start=1, line_end=1)],
    )
    assert [(f.id, label.id) for f, label in pairs] == [("x", "e2"), ("y", "expected-1")]


_path_parts = st.sampled_from(["a", "b", ".", "..", "", "src", "C:"])


@given(st.lists(_path_parts, max_size=6).map("/".join), st.integers(min_value=0, max_value=4))
@example("a/b", 2)
@example("../../a", 0)
@example("a/../../b/..", 0)
def test_path_normalization_is_posix_normpath_after_backslashes(path: str, slashes: int) -> None:
    """normalize_repo_path agrees with posixpath.normpath, including leading slashes."""
    text = "/" * slashes + path
    assert normalize_repo_path(text) == posixpath.normpath(text)
    assert normalize_repo_path(text.replace("/", "\\")) == posixpath.normpath(text)


def test_a_finding_left_over_in_a_crowded_component_stays_unmatched() -> None:
    """f1 and f3 can only reach l1, f2 reaches l1-l3: two pairs, and f3 is a false positive."""
    labels = [L(id=f"l{i}", line_start=10 * i, line_end=10 * i) for i in (1, 2, 3)]
    findings = [F(id="f1", line=10), F(id="f2", line=10, end_line=30), F(id="f3", line=10)]
    result = score("comment", findings, labels)
    assert (result.true_positives, result.false_positives, result.false_negatives) == (2, 1, 1)


def _best_total(weights: list[list[int]]) -> int:
    """The best total weight over every way to give each row a distinct column (brute force)."""
    columns = range(len(weights[0]))
    return max(
        sum(row[column] for row, column in zip(weights, chosen, strict=True))
        for chosen in itertools.permutations(columns, len(weights))
    )


def test_the_assignment_solver_is_optimal_on_many_seeded_matrices() -> None:
    """Hungarian vs brute force on 400 random matrices (ties, zeros for missing edges, wide spreads)."""
    generator = random.Random(20261130)
    for case in range(400):
        rows = generator.randint(1, 5)
        columns = generator.randint(rows, 6)
        spread = generator.choice([1, 3, 10**6])
        weights = [
            [generator.randint(1, spread) if generator.random() < 0.7 else 0 for _ in range(columns)]
            for _ in range(rows)
        ]
        if case % 3 == 0:
            weights[0] = [0] * columns  # a row with no edge at all
        assignment = _max_weight_assignment(weights)
        assert sorted(set(assignment)) == sorted(assignment), weights
        total = sum(row[column] for row, column in zip(weights, assignment, strict=True))
        assert total == _best_total(weights), weights
