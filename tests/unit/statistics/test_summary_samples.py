"""Run-level samples from the one-pass summary equal those built from the rows themselves."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import wide_rows
from wfbench.domain.errors import InputError
from wfbench.domain.results.rows import Row
from wfbench.domain.results.summary import summarize
from wfbench.domain.statistics.samples import REVIEW_METRIC, paired_samples, summary_samples

METRICS = ("cost_usd", "output_tokens", "duration_s", "num_turns", REVIEW_METRIC)
relaxed = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@relaxed
@given(
    st.lists(wide_rows(), max_size=16),
    st.sampled_from(METRICS),
    st.sampled_from([("candidate_workflow", "workflow"), ("candidate_review", "review")]),
    st.none() | st.sets(st.sampled_from(["t1", "t2", "t3"])),
)
def test_summary_samples_equal_the_samples_of_the_rows(
    rows: list[Row], metric: str, pair: tuple[str, str], tasks: set[str] | None
) -> None:
    """Every task both arms ran admissibly, runs sorted by run number, values and their absence."""
    candidate, incumbent = pair
    expected = paired_samples(rows, candidate=candidate, incumbent=incumbent, metric=metric, tasks=tasks)

    streamed = summary_samples(
        summarize(iter(rows)), candidate=candidate, incumbent=incumbent, metric=metric, tasks=tasks
    )

    assert streamed == expected
    assert repr(streamed) == repr(expected)


def test_an_unknown_metric_is_refused_naming_the_field() -> None:
    with pytest.raises(InputError, match="unsupported promotion metric: vibes"):
        summary_samples(summarize([]), candidate="a", incumbent="b", metric="vibes")
