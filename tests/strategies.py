"""Hypothesis strategies for the domain's value objects (one section per concept)."""

from __future__ import annotations

import attrs
from hypothesis import strategies as st

from wfbench.domain.rows import ErrorKind, Row
from wfbench.domain.sessions import SessionRecord, Usage

# --- rows ---------------------------------------------------------------------------------

_maybe_count = st.none() | st.integers(min_value=0, max_value=10**7)


@st.composite
def rows(draw: st.DrawFn, *, tasks: tuple[str, ...] = ("t1", "t2"), arms: tuple[str, ...] = ("baseline", "workflow")) -> Row:
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
