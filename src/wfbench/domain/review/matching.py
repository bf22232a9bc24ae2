"""Optimal one-to-one matching of review findings to labels (wfbench's deliberate difference).

An edge joins a finding and a label on the same path whose closed line ranges overlap. Among all
matchings we choose, lexicographically:

1. the most pairs (maximum cardinality: the most true positives);
2. the most pairs whose categories agree;
3. the most pairs whose severities agree;
4. the smallest total distance between the finding's and the label's first lines;
5. the smallest total width of the matched labels;
6. remaining ties are resolved by content: findings are put in order by everything except their
   id (severity weight, path, lines, category, narrative, blocking) and labels by content, and the
   exact solver below is deterministic over that order.

Criteria 2-5 are the reference harness's own edge ranking, but summed over the whole assignment
instead of applied greedily in id order; so the result never depends on finding ids or on the
order of the findings (the reference's example D11 changes when a finding is renamed; ours does
not). Findings that differ only in their id are interchangeable: swapping them changes no metric.

Findings (and labels) with equal content form one class, so edges are weighed once per pair of
classes; the graph is split into connected components, each solved exactly by the Hungarian
algorithm on integer weights that encode criteria 1-5 as the digits of a mixed radix number (so
the sum over a matching compares lexicographically).
"""

from __future__ import annotations

from collections.abc import Sequence

from wfbench.domain.review.artifact import Finding
from wfbench.domain.review.labels import Label

__all__ = ["match_findings"]

_Quality = tuple[int, int, int, int]


def match_findings(findings: Sequence[Finding], labels: Sequence[Label]) -> tuple[tuple[Finding, Label], ...]:
    """The optimal matching, as (finding, label) pairs in content order of the findings."""
    ordered_findings = sorted(findings, key=lambda finding: (finding.content_key(), finding.id))
    ordered_labels = sorted(labels, key=Label.content_key)
    finding_classes = _classes([finding.content_key() for finding in ordered_findings])
    label_classes = _classes([label.content_key()[:-1] for label in ordered_labels])
    weigh = _Weigher.over(ordered_findings, ordered_labels)
    edges = _class_edges(
        [ordered_findings[members[0]] for members in finding_classes],
        [ordered_labels[members[0]] for members in label_classes],
        weigh,
    )
    column_class = {j: lc for lc, members in enumerate(label_classes) for j in members}
    pairs: list[tuple[int, int]] = []
    for component in _components(edges):
        rows = [f for fc in component for f in finding_classes[fc]]
        columns = sorted({j for fc in component for lc in edges[fc] for j in label_classes[lc]})
        row_class = {f: fc for fc in component for f in finding_classes[fc]}
        weights = [[edges[row_class[f]].get(column_class[j], 0) for j in columns] for f in rows]
        pairs.extend(_solve(rows, columns, weights))
    pairs.sort()
    return tuple((ordered_findings[f], ordered_labels[j]) for f, j in pairs)


def edge_quality(finding: Finding, label: Label) -> _Quality:
    """The reference's edge rank (larger is better): category, severity, start distance, width."""
    return (
        int(finding.category == label.category),
        int(finding.severity is label.severity),
        -abs(finding.line - label.line_start),
        -(label.line_end - label.line_start),
    )


def overlaps(finding: Finding, label: Label) -> bool:
    """Whether an edge joins them: the same path and overlapping closed line ranges."""
    return (
        finding.path == label.path and finding.line <= label.line_end and finding.end_line >= label.line_start
    )


class _Weigher:
    """Integer edge weights whose sums over a matching order matchings by criteria 1-5.

    A weight is a mixed radix number with the digits (1, category, severity, distance slack, width
    slack); every radix exceeds the largest sum of its digit over any matching, so comparing sums
    compares (pairs, categories, severities, -distance, -width) lexicographically.
    """

    def __init__(self, pairs: int, max_distance: int, max_width: int) -> None:
        self.max_distance = max_distance
        self.max_width = max_width
        self.count_radix = pairs + 1
        self.distance_radix = pairs * max_distance + 1
        self.width_radix = pairs * max_width + 1

    @classmethod
    def over(cls, findings: Sequence[Finding], labels: Sequence[Label]) -> _Weigher:
        starts = [finding.line for finding in findings] + [label.line_start for label in labels]
        widths = [label.line_end - label.line_start for label in labels]
        return cls(min(len(findings), len(labels)), max(starts, default=1) - 1, max(widths, default=0))

    def __call__(self, quality: _Quality) -> int:
        category, severity, distance, width = quality
        digits = (self.count_radix + category) * self.count_radix + severity
        distance_digit = self.max_distance + distance
        return (digits * self.distance_radix + distance_digit) * self.width_radix + self.max_width + width


def _classes(keys: list[tuple[object, ...]]) -> list[list[int]]:
    """Indices of a sorted list grouped into runs of equal keys (interchangeable items)."""
    classes: list[list[int]] = []
    for index, key in enumerate(keys):
        if classes and keys[classes[-1][0]] == key:
            classes[-1].append(index)
        else:
            classes.append([index])
    return classes


def _class_edges(findings: list[Finding], labels: list[Label], weigh: _Weigher) -> list[dict[int, int]]:
    """For each finding class, the label classes it may match and the weight of that edge."""
    by_path: dict[str, list[int]] = {}
    for index, label in enumerate(labels):
        by_path.setdefault(label.path, []).append(index)
    return [
        {
            index: weigh(edge_quality(finding, labels[index]))
            for index in by_path.get(finding.path, ())
            if overlaps(finding, labels[index])
        }
        for finding in findings
    ]


def _components(edges: list[dict[int, int]]) -> list[list[int]]:
    """Finding classes grouped by connected component (classes without edges are left out)."""
    parent = list(range(len(edges)))

    def root(node: int) -> int:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    owner: dict[int, int] = {}
    for finding, targets in enumerate(edges):
        for label in targets:
            if label in owner:
                parent[root(finding)] = root(owner[label])
            else:
                owner[label] = finding
    groups: dict[int, list[int]] = {}
    for finding, targets in enumerate(edges):
        if targets:
            groups.setdefault(root(finding), []).append(finding)
    return list(groups.values())


def _solve(rows: list[int], columns: list[int], weights: list[list[int]]) -> list[tuple[int, int]]:
    """The optimal (finding, label) pairs of one component; ``weights[r][c]`` is 0 without an edge."""
    if len(rows) <= len(columns):
        assignment = _max_weight_assignment(weights)
        return [(rows[r], columns[c]) for r, c in enumerate(assignment) if weights[r][c]]
    transposed = [list(column) for column in zip(*weights, strict=True)]
    assignment = _max_weight_assignment(transposed)
    return [(rows[c], columns[r]) for r, c in enumerate(assignment) if transposed[r][c]]


def _max_weight_assignment(weights: list[list[int]]) -> list[int]:
    """The column of each row in an assignment of maximum total weight (rows <= columns).

    The Hungarian algorithm with potentials on costs ``-weight`` (O(rows^2 * columns)), started
    from row-reduced potentials and a greedy matching on tight edges. With non-negative weights and
    0 for a missing edge, its positive-weight pairs are a maximum-weight matching.
    """
    solver = _Hungarian(weights)
    pending: list[int] = []
    for row in range(1, len(weights) + 1):
        if not solver.take_tight_column(row):
            pending.append(row)
    for row in pending:
        solver.augment(row)
    assignment = [0] * len(weights)
    for column, row in enumerate(solver.owner):
        if column and row:
            assignment[row - 1] = column - 1
    return assignment


class _Hungarian:
    """The solver's state: 1-based costs, dual potentials ``u``/``v`` and column owners."""

    def __init__(self, weights: list[list[int]]) -> None:
        self.costs = [[0, *(-weight for weight in row)] for row in weights]
        self.columns = len(weights[0])
        self.infinity = (max(max(row) for row in weights) + 1) * (len(weights) + self.columns + 2) * 4
        self.u = [0] * (len(weights) + 1)
        self.v = [0] * (self.columns + 1)
        self.owner = [0] * (self.columns + 1)  # owner[j]: the row holding column j; 0 = free

    def take_tight_column(self, row: int) -> bool:
        """Row-reduce ``row``; give it its first cheapest column if that is free."""
        costs = self.costs[row - 1]
        self.u[row] = min(costs[1:])
        for column in range(1, self.columns + 1):
            if costs[column] == self.u[row] and not self.owner[column]:
                self.owner[column] = row
                return True
        return False

    def augment(self, row: int) -> None:
        """One phase: add ``row`` to the matching along a shortest augmenting path.

        The uniform potential updates are applied lazily: ``shift`` is the total of the deltas so
        far; a free column's slack is stored plus that shift, and each column in the tree remembers
        the shift at which it joined.
        """
        u, v, owner = self.u, self.v, self.owner
        way = [0] * (self.columns + 1)
        slack = [self.infinity] * (self.columns + 1)  # true slack + shift
        joined = {0: 0}  # column in the tree -> shift when it joined
        unused = list(range(1, self.columns + 1))
        owner[0] = row
        column = 0
        shift = 0
        while True:
            row_costs = self.costs[owner[column] - 1]
            offset = shift - u[owner[column]]
            best = self.infinity + shift
            nearest = 0
            for j in unused:
                reduced = row_costs[j] - v[j] + offset
                if reduced < slack[j]:
                    slack[j] = reduced
                    way[j] = column
                if slack[j] < best or (slack[j] == best and not owner[j]):
                    best = slack[j]
                    nearest = j
            shift = best
            column = nearest
            if not owner[column]:
                break
            unused.remove(column)
            joined[column] = shift
        for j, since in joined.items():
            u[owner[j]] += shift - since
            v[j] -= shift - since
        while column:
            previous = way[column]
            owner[column] = owner[previous]
            column = previous
