"""Hypothesis strategies for the domain's value objects (one section per concept)."""

from __future__ import annotations

import attrs
from hypothesis import strategies as st

from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.review.scoring import Finding, Label, ReviewArtifact, ReviewLabels, Severity, Verdict
from wfbench.domain.session.records import SessionRecord, Usage
from wfbench.domain.statistics.samples import ArmRuns, PairedSamples, TaskPair

# --- rows ---------------------------------------------------------------------------------

_maybe_count = st.none() | st.integers(min_value=0, max_value=10**7)


@st.composite
def rows(
    draw: st.DrawFn,
    *,
    tasks: tuple[str, ...] = ("t1", "t2"),
    arms: tuple[str, ...] = ("baseline", "workflow"),
) -> Row:
    """Any valid row over the given tasks and arms."""
    kind = draw(st.none() | st.sampled_from(list(ErrorKind)))
    return Row(
        task=draw(st.sampled_from(tasks)),
        arm=draw(st.sampled_from(arms)),
        run=draw(st.integers(min_value=1, max_value=5)),
        task_class=draw(st.none() | st.sampled_from(["bugfix", "feature"])),
        ok=kind is None,
        resolved=kind is None and draw(st.booleans()),
        error_kind=kind,
        input_tokens=draw(_maybe_count),
        cache_creation_input_tokens=draw(_maybe_count),
        cache_read_input_tokens=draw(_maybe_count),
        output_tokens=draw(_maybe_count),
        cost_usd=draw(st.none() | st.floats(min_value=0, max_value=100, allow_nan=False)),
        duration_s=draw(st.none() | st.floats(min_value=0, max_value=5400, allow_nan=False)),
        num_turns=draw(_maybe_count),
        transcript_missing=draw(st.booleans()),
        reused=draw(st.booleans()),
    )


# --- scheduling ---------------------------------------------------------------------------


@st.composite
def breaker_rows(draw: st.DrawFn) -> Row:
    """A row as the outage breaker sees it: any kind, any artifact validity, fresh or reused."""
    return Row(
        task="t",
        arm="a",
        run=draw(st.integers(min_value=0, max_value=9)),
        error_kind=draw(st.none() | st.sampled_from(list(ErrorKind))),
        review_evidence_valid=draw(st.sampled_from([None, True, False])),
        reused=draw(st.booleans()),
    )


# --- aggregation and session sums ---------------------------------------------------------

_review_metric = st.none() | st.floats(min_value=0, max_value=1, allow_nan=False)


@st.composite
def aggregation_rows(draw: st.DrawFn) -> Row:
    """A row as aggregation sees it: any kind, optional review metrics and validity, churn."""
    row = draw(rows(tasks=("t1", "t2"), arms=("review", "workflow")))
    review: dict[str, float | bool | None] = {}
    if draw(st.booleans()):
        review = {
            "review_weighted_f1": draw(_review_metric),
            "review_blocker_recall": draw(_review_metric),
            "review_precision": draw(_review_metric),
            "review_verdict_correct": draw(st.none() | st.booleans()),
            "review_clean_pass": draw(st.booleans()),
        }
    return attrs.evolve(
        row,
        review_evidence_valid=draw(st.sampled_from([None, True, False])),
        review=review,
        diff_files=draw(_maybe_count),
    )


# Numbers at the edges of what a double holds exactly (2**52, 2**53 + 1, 2**64), mixed with floats.
_edge_number = (
    st.integers(min_value=0, max_value=2**64)
    | st.sampled_from([0, 1, 2**52, 2**52 + 1, 2**53, 2**53 + 1, 2**63 + 5])
    | st.floats(min_value=0, max_value=1e300, allow_nan=False)
)
_wide_review_value = st.none() | st.booleans() | _edge_number


@st.composite
def wide_rows(draw: st.DrawFn, *, tasks: tuple[str, ...] = ("t1", "t2", "t3")) -> Row:
    """A row with any value shape aggregation must reduce exactly: integers beyond a double's exact
    range, mixed ints and floats, booleans and nulls in review metrics, partial review metrics, and
    provenance fields (``benchmark_model``, digests) that may disagree."""
    row = draw(aggregation_rows())
    maybe = st.none() | _edge_number
    review = {
        name: draw(_wide_review_value)
        for name in draw(st.lists(st.sampled_from(_WIDE_REVIEW_NAMES), max_size=6, unique=True))
    }
    extra = {
        name: draw(st.sampled_from(values)) for name, values in _WIDE_EXTRA.items() if draw(st.booleans())
    }
    return attrs.evolve(
        row,
        task=draw(st.sampled_from(tasks)),
        arm=draw(st.sampled_from(("review", "workflow", "candidate_workflow", "candidate_review"))),
        input_tokens=draw(st.none() | st.integers(min_value=0, max_value=2**64)),
        output_tokens=draw(maybe.filter(lambda v: v is None or isinstance(v, int))),
        cost_usd=draw(st.none() | st.floats(min_value=0, max_value=1e300, allow_nan=False)),
        review=review if draw(st.booleans()) else dict(row.review),
        extra=extra,
    )


_WIDE_REVIEW_NAMES = (
    "review_weighted_f1",
    "review_blocker_recall",
    "review_true_positives",
    "review_precision",
    "review_verdict_correct",
    "review_clean_control",
    "review_clean_pass",
    "review_grounded_evidence",
)
_WIDE_EXTRA: dict[str, list[object]] = {
    "benchmark_model": ["m-1", "m-2", "", None, 3],
    "model": ["m-1", "m-3"],
    "effort": ["high", "xhigh", None],
    "proposer_model": ["p-1", None],
    "candidate_overlay_digest": ["d1", "d2", ""],
    "ce_plugin_version": ["1.0", None],
    "task_base_sha": ["a" * 40, "b" * 40, None],
    "oracle_digest": ["o1", "o2", 7, 7.0, True],
    "task_prompt_digest": ["p1", ""],
}


@st.composite
def session_records(draw: st.DrawFn) -> SessionRecord:
    """A session record whose usage, cost, turns and duration may each be unreported (None)."""
    kind = draw(st.none() | st.sampled_from(list(ErrorKind)))
    return SessionRecord(
        ok=kind is None and draw(st.booleans()),
        error_kind=kind,
        error_detail=draw(st.none() | st.text(max_size=5)),
        usage=Usage(draw(_maybe_count), draw(_maybe_count), draw(_maybe_count), draw(_maybe_count)),
        cost_usd=draw(st.none() | st.floats(min_value=0, max_value=100, allow_nan=False)),
        num_turns=draw(_maybe_count),
        duration_s=draw(st.none() | st.floats(min_value=0, max_value=5400, allow_nan=False)),
        session_id=draw(st.none() | st.text(alphabet="abc123", min_size=1, max_size=6)),
        skill_invoked=draw(st.none() | st.booleans()),
        transcript_missing=draw(st.booleans()),
    )


# --- review artifacts and labels ------------------------------------------------------------

_review_paths = st.sampled_from(["src/api.ts", "src/auth.ts", "lib/x.py"])
_review_categories = st.sampled_from(["correctness", "security", "tests", "style"])
_review_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs", "Zs", "Cc", "Zl", "Zp"]),
    min_size=1,
    max_size=12,
)


@st.composite
def review_findings(draw: st.DrawFn, *, finding_id: str | None = None) -> Finding:
    """A finding as the parser produces it (stripped, case-folded, normalized), on a few paths."""
    line = draw(st.integers(min_value=1, max_value=30))
    return Finding(
        id=finding_id if finding_id is not None else draw(_review_text),
        severity=draw(st.sampled_from(list(Severity))),
        path=draw(_review_paths),
        line=line,
        end_line=line + draw(st.integers(min_value=0, max_value=8)),
        category=draw(_review_categories),
        scenario=draw(_review_text),
        evidence=draw(_review_text),
        recommendation=draw(st.sampled_from(["fix it", "add a test"])),
        blocking=draw(st.booleans()),
    )


@st.composite
def review_artifacts(draw: st.DrawFn, *, max_findings: int = 8) -> ReviewArtifact:
    """A coherent artifact: unique ids; approve only when empty; request_changes with a blocker."""
    count = draw(st.integers(min_value=0, max_value=max_findings))
    ids = draw(st.lists(_review_text, min_size=count, max_size=count, unique=True))
    findings = tuple(draw(review_findings(finding_id=finding_id)) for finding_id in ids)
    verdicts = [Verdict.COMMENT]
    if not findings:
        verdicts.append(Verdict.APPROVE)
    if any(finding.blocking for finding in findings):
        verdicts.append(Verdict.REQUEST_CHANGES)
    return ReviewArtifact(verdict=draw(st.sampled_from(verdicts)), findings=findings)


@st.composite
def review_labels(draw: st.DrawFn, *, max_labels: int = 8) -> ReviewLabels:
    """A label set with unique ids on the same few paths as :func:`review_findings`."""
    count = draw(st.integers(min_value=0, max_value=max_labels))
    labels = []
    for index in range(count):
        start = draw(st.integers(min_value=1, max_value=30))
        labels.append(
            Label(
                id=f"expected-{index}",
                severity=draw(st.sampled_from(list(Severity))),
                path=draw(_review_paths),
                line_start=start,
                line_end=start + draw(st.integers(min_value=0, max_value=8)),
                category=draw(_review_categories),
            )
        )
    return ReviewLabels(tuple(labels))


# --- promotion ------------------------------------------------------------------------------

_gate_kinds = st.sampled_from(
    [*[None] * 40, ErrorKind.ORACLE_FAILED, ErrorKind.SKILL_NOT_INVOKED, ErrorKind.SESSION_ERROR]
)
_gate_costs = st.sampled_from([0.1, 0.5, 0.5, 1.0, 1.0, 1.0, 2.0, 0.5, 1.0, 0.1, 0.5, None])


def _gate_review_metrics(draw: st.DrawFn) -> dict[str, float | bool | None]:
    return {
        "review_weighted_f1": draw(st.sampled_from([0.0, 0.5, 0.6, 0.8, 1.0])),
        "review_blocker_recall": draw(st.sampled_from([None, 0.0, 1.0, 1.0])),
        "review_false_positives": float(draw(st.integers(min_value=0, max_value=2))),
        "review_verdict_correct": draw(st.sampled_from([True, True, False])),
        "review_clean_control": False,
        "review_clean_pass": False,
    }


@st.composite
def gate_arm_rows(
    draw: st.DrawFn, task: str, arm: str, *, review: bool = False, count: int | None = None
) -> list[Row]:
    """One arm's rows on one task, as the promotion gates see them.

    2-4 runs; the arm draws one typical row (cost, resolved, review metrics) and each run
    either repeats it or deviates, so paired medians are often comparable.
    """
    if count is None:
        count = draw(st.integers(min_value=2, max_value=4))
    typical = (draw(_gate_costs), draw(st.sampled_from([True, True, False])), _gate_review_metrics(draw))
    out = []
    for run in range(count):
        kind = draw(_gate_kinds)
        deviates = draw(st.integers(min_value=0, max_value=4)) == 0
        cost, resolved, metrics = typical
        if deviates:
            cost, resolved, metrics = draw(_gate_costs), draw(st.booleans()), _gate_review_metrics(draw)
        out.append(
            Row(
                task=task,
                arm=arm,
                run=run,
                ok=kind is None,
                resolved=kind is None and resolved,
                error_kind=kind,
                cost_usd=cost,
                review=metrics if review else {},
                review_evidence_valid=True if review else None,
            )
        )
    return out


@st.composite
def paired_gate_rows(
    draw: st.DrawFn,
    *,
    incumbent: str = "workflow",
    candidate: str = "candidate_workflow",
    review: bool = False,
) -> list[Row]:
    """Rows of an incumbent and a candidate arm over 1-3 tasks (either arm may miss a task)."""
    names = st.sampled_from(["task-a", "task-b", "task-c"])
    tasks = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    out: list[Row] = []
    for task in tasks:
        count = draw(st.integers(min_value=2, max_value=4))
        out += draw(gate_arm_rows(task, incumbent, review=review, count=count))
        if draw(st.integers(min_value=0, max_value=19)):
            paired = draw(st.sampled_from([count, count, count, None]))
            out += draw(gate_arm_rows(task, candidate, review=review, count=paired))
    return out


# --- scripted provider turns (issue #3) ------------------------------------------------------

_json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_token_counts = st.none() | st.integers(min_value=0, max_value=10**7)


@st.composite
def scripted_turns(draw: st.DrawFn) -> object:
    """A provider-script Turn: optional text, 0-3 tools with JSON inputs, any subset of usage."""
    from wfbench.adapters.provider.script import ScriptedUsage, ToolCall, Turn

    tools = draw(
        st.lists(
            st.builds(
                ToolCall,
                name=st.text(min_size=1, max_size=12),
                input=st.dictionaries(st.text(max_size=8), json_values, max_size=3),
            ),
            max_size=3,
        )
    )
    usage = ScriptedUsage(
        input_tokens=draw(_token_counts),
        output_tokens=draw(_token_counts),
        cache_read_input_tokens=draw(_token_counts),
        cache_creation_input_tokens=draw(_token_counts),
    )
    return Turn(say=draw(st.none() | st.text(max_size=40)), tools=tuple(tools), usage=usage)


# --- paired statistics ----------------------------------------------------------------------

_costs = st.sampled_from([0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]) | st.floats(min_value=0.01, max_value=10)


_runs = st.lists(st.tuples(st.booleans(), _costs), min_size=1, max_size=4).map(
    lambda runs: ArmRuns(tuple(r for r, _ in runs), tuple(c for _, c in runs))
)


def paired_sample_sets(*, min_tasks: int = 2, max_tasks: int = 8) -> st.SearchStrategy[PairedSamples]:
    """Samples of one pair: 2–8 tasks, 1–4 runs per arm (the arms may differ), costs > 0."""
    return st.lists(st.tuples(_runs, _runs), min_size=min_tasks, max_size=max_tasks).map(
        lambda tasks: PairedSamples(
            "candidate",
            "incumbent",
            "cost_usd",
            tuple(TaskPair(f"task-{i:02d}", inc, cand) for i, (inc, cand) in enumerate(tasks)),
        )
    )


def rows_of(samples: PairedSamples) -> list[Row]:
    """The rows the samples came from (run numbers in order, cost as measured)."""
    out = []
    for pair in samples.tasks:
        for arm, runs in ((samples.incumbent, pair.incumbent), (samples.candidate, pair.candidate)):
            for index, (resolved, cost) in enumerate(zip(runs.resolved, runs.metric, strict=True)):
                out.append(
                    Row(
                        task=pair.task,
                        arm=arm,
                        run=index,
                        ok=True,
                        resolved=resolved,
                        error_kind=None if resolved else ErrorKind.ORACLE_FAILED,
                        cost_usd=cost,
                    )
                )
    return out
