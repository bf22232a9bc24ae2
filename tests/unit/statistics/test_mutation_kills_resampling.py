"""Tests that kill the resampling module's mutants (``scripts/mutation --modules statistics/resampling``).

Exact refusals, the smallest legal resample count, signed zeros (a mirrored output compares and
prints like its original), a self-mirrored sample symmetrised rather than negated, a quantile
that never interpolates when it sits on a value, and the p-value's formula at a known share.
"""

from __future__ import annotations

import math

import pytest

from wfbench.domain.statistics.distributions import normal_ppf, t_cdf
from wfbench.domain.statistics.resampling import (
    bootstrap_means,
    bootstrap_p_value,
    expanded_tail,
    percentile_interval,
    quantile,
)


def positive_zeros(values: tuple[float, ...]) -> bool:
    return all(math.copysign(1.0, v) == 1.0 for v in values if v == 0.0)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: bootstrap_means([], seed=1, resamples=10), "the bootstrap needs at least one value"),
        (lambda: bootstrap_means([1.0], seed=1, resamples=0), "the bootstrap needs at least one resample"),
        (lambda: quantile([], 0.5), "no values"),
        (lambda: expanded_tail(0.05, 1), "the expanded percentile needs at least two clusters"),
        (lambda: bootstrap_p_value((), 3), "no values"),
        (lambda: bootstrap_p_value((1.0,), 1), "a p-value needs at least two clusters"),
    ],
)
def test_refusals_say_exactly_what_is_missing(call, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        call()


def test_one_resample_is_enough() -> None:
    assert len(bootstrap_means([1.0, 3.0], seed=5, resamples=1)) == 1


def test_zero_means_are_never_negative_zeros() -> None:
    means = bootstrap_means([0.0, 0.0], seed=3, resamples=4)  # self-mirrored: negations appended

    assert means == (0.0,) * 8
    assert positive_zeros(means)
    negated = bootstrap_means([0.0, -0.0, 1.0], seed=3, resamples=50)
    assert positive_zeros(negated)


def test_an_interval_of_zeros_is_two_positive_zeros() -> None:
    interval = percentile_interval((-0.0, -0.0, 0.0), 0.05)

    assert interval == (0.0, 0.0)
    assert positive_zeros(interval)
    on_a_zero = percentile_interval((-0.0, -0.0, 1.0), 0.0)  # the lower bound is the first value, -0.0
    assert on_a_zero == (0.0, 1.0)
    assert positive_zeros(on_a_zero)


def test_a_self_mirrored_sample_is_symmetrised_not_negated() -> None:
    means = bootstrap_means([-1.0, 1.0], seed=11, resamples=7)

    assert len(means) == 14
    assert means == tuple(sorted(-m + 0.0 for m in means))


def test_a_sample_sorting_after_its_mirror_draws_from_the_mirror_and_negates_back() -> None:
    values = [2.0, 3.0, -1.0]  # sorted: [-1, 2, 3]; mirrored: [-3, -2, 1] sorts first
    forward = bootstrap_means(values, seed=2, resamples=30)
    backward = bootstrap_means([-v for v in values], seed=2, resamples=30)

    assert len(forward) == 30
    assert forward == tuple(sorted(-m + 0.0 for m in backward))
    assert sum(forward) > 0  # negated back: the means are of the values, not of their negations


def test_a_quantile_on_a_value_never_interpolates() -> None:
    """On a value (fraction 0), the neighbour is not read: an infinite one would give nan."""
    assert quantile([1.0, math.inf], 0.0) == 1.0
    assert quantile([1.0, 2.0, math.inf], 0.5) == 2.0
    assert quantile([1.0, 2.0, 4.0], 1.0) == 4.0
    assert quantile([1.0, 2.0, 4.0], 0.75) == 3.0


@pytest.mark.parametrize("n", [2, 3, 8])
def test_the_p_value_is_the_t_cdf_of_the_shrunk_normal_quantile_of_the_share(n: int) -> None:
    means = (-0.2, 0.0, 0.1, 0.3, 0.4, 0.5, 0.6, 0.7, 0.9)  # 2 at or below 0: share (2 + 1)/(9 + 1)
    expected = t_cdf(normal_ppf(0.3) * math.sqrt((n - 1) / n), n - 1)

    assert bootstrap_p_value(means, n) == expected
    assert bootstrap_p_value(means, n) != pytest.approx(
        t_cdf(normal_ppf(0.3) * math.sqrt((n + 1) / n), n - 1)
    )
    assert bootstrap_p_value(means, n) != pytest.approx(
        t_cdf(normal_ppf(0.3) / math.sqrt((n - 1) / n), n - 1)
    )
    assert bootstrap_p_value(means, n) != pytest.approx(
        t_cdf(normal_ppf(0.3) * math.sqrt((n - 1) / n), n + 1)
    )
