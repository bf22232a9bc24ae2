"""The seeded cluster bootstrap: reproducible to the bit, order-free, mirror-exact; the quantile
rule, the expanded tail and the bootstrap p-value."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wfbench.domain.statistics import resampling
from wfbench.domain.statistics.resampling import (
    bootstrap_means,
    bootstrap_p_value,
    expanded_tail,
    percentile_interval,
    quantile,
)

VALUES = [0.0, 1.0, 2.0, 4.0]


def test_the_same_seed_gives_the_same_means_pinned_to_the_bit() -> None:
    """random.Random(seed).random() is stable across Python versions; so is this sequence."""
    assert bootstrap_means(VALUES, seed=7, resamples=5) == (1.0, 2.0, 2.5, 2.75, 3.5)


def _plain_means(values: list[float], seed: int, resamples: int) -> tuple[float, ...]:
    """The bootstrap as first written (the oracle of the fast loop): ``int(random() * n)`` per draw."""
    pool = sorted(values)
    mirrored = sorted(-value for value in values)
    negate, symmetric = mirrored < pool, pool == mirrored
    pool = mirrored if negate else pool
    count = len(pool)
    draw = random.Random(seed).random
    means = [sum([pool[int(draw() * count)] for _ in range(count)]) / count for _ in range(resamples)]
    if negate:
        means = [-mean for mean in means]
    if symmetric:
        means += [-mean for mean in means]
    return tuple(sorted(mean + 0.0 for mean in means))


_EFFECTS = st.one_of(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.sampled_from([0.0, -0.0, 0.2, -0.2, 1 / 3, 0.1, 1.0, -1.0]),
)


@given(
    values=st.lists(_EFFECTS, min_size=1, max_size=60),
    seed=st.integers(min_value=0, max_value=2**64),
    resamples=st.integers(min_value=1, max_value=40),
)
def test_the_fast_loop_gives_the_plain_comprehensions_means_to_the_bit(
    values: list[float], seed: int, resamples: int
) -> None:
    assert bootstrap_means(values, seed=seed, resamples=resamples) == _plain_means(values, seed, resamples)


def test_the_fast_loop_matches_on_thousands_of_tasks() -> None:
    values = [random.Random(index).choice([-0.2, 0.0, 0.2, 0.4, 1 / 3]) for index in range(2500)]

    assert bootstrap_means(values, seed=2026, resamples=6) == _plain_means(values, 2026, 6)


def _plain_loop(pool: list[float], seed: int, resamples: int) -> list[float]:
    count = len(pool)
    draw = random.Random(seed).random
    return [sum([pool[int(draw() * count)] for _ in range(count)]) / count for _ in range(resamples)]


@pytest.mark.parametrize("chunk", [7, 1200, 1 << 16, 1 << 20])
def test_the_vectorized_bootstrap_draws_the_same_means_to_the_bit(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("numpy", reason="numpy is optional (wfbench[fast]); the plain loop is the reference")
    monkeypatch.setattr(resampling, "_CHUNK_DRAWS", chunk)
    rng = random.Random(4)
    pools = [
        [0.25],
        sorted(rng.uniform(-1, 1) for _ in range(997)),
        sorted(rng.choice([-0.2, -0.0, 0.0, 0.2, 1 / 3, 0.4]) for _ in range(500)),
        [-0.0, -0.0, -0.0],
        sorted(rng.uniform(-1e300, 1e300) for _ in range(30)),
    ]
    for pool in pools:
        for seed in (0, 7, 2**40 + 3):
            vectorized = resampling._vectorized_means(pool, seed, 23)
            assert vectorized is not None
            assert [mean.hex() for mean in vectorized] == [mean.hex() for mean in _plain_loop(pool, seed, 23)]


def test_a_bootstrap_of_millions_of_draws_is_the_plain_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resampling, "_VECTOR_MIN_DRAWS", 1000)
    values = [random.Random(index).choice([-0.2, 0.0, 0.2, 0.4, 1 / 3]) for index in range(300)]

    assert bootstrap_means(values, seed=9, resamples=40) == _plain_means(values, 9, 40)


def test_integers_are_summed_exactly_by_the_plain_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resampling, "_VECTOR_MIN_DRAWS", 1)
    values = [2**60 + 1, 3, 2**60 + 7]

    assert bootstrap_means(values, seed=1, resamples=5) == _plain_means(values, 1, 5)


class _Spy:
    """Stands in for ``_vectorized_means``: records each call, answers ``answer`` (None: no numpy)."""

    def __init__(self, answer: str = "zeros") -> None:
        self.calls: list[tuple[int, int, int]] = []
        self.answer = answer

    def __call__(self, pool: list[float], seed: int, resamples: int) -> list[float] | None:
        self.calls.append((len(pool), seed, resamples))
        return None if self.answer == "none" else [0.0] * resamples


@pytest.mark.parametrize(
    ("count", "resamples", "vectorized"),
    [(4096, 1024, True), (4096, 1023, False), (1024, 4096, True), (1 << 22, 1, True)],
)
def test_numpy_takes_a_bootstrap_from_four_million_draws_on(
    count: int, resamples: int, vectorized: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vectorized path is taken from ``count × resamples ≥ 2**22`` draws on (below, importing
    numpy costs more than the plain loop), and it receives the pool, the seed and the resamples."""
    spy = _Spy()
    monkeypatch.setattr(resampling, "_vectorized_means", spy)
    pool = [float(index % 5) for index in range(count)]

    means = resampling._resample_means(pool, 11, resamples)

    assert spy.calls == ([(count, 11, resamples)] if vectorized else [])
    assert len(means) == resamples
    if vectorized:
        assert means == [0.0] * resamples  # the vectorized answer is the one returned


@pytest.mark.parametrize("pool", [[1, 2, 3] * 2000, [0.5] * 5999 + [1], [True] * 6000])
def test_only_an_all_float_pool_is_vectorized(pool: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    """Integers (and bools) are summed exactly by the plain loop, however large the bootstrap."""
    spy = _Spy()
    monkeypatch.setattr(resampling, "_vectorized_means", spy)
    monkeypatch.setattr(resampling, "_VECTOR_MIN_DRAWS", 1)

    resampling._resample_means(pool, 3, 2)

    assert spy.calls == []


def test_without_numpy_a_large_bootstrap_is_the_plain_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _Spy(answer="none")
    monkeypatch.setattr(resampling, "_vectorized_means", spy)
    monkeypatch.setattr(resampling, "_VECTOR_MIN_DRAWS", 1)
    pool = sorted(random.Random(5).uniform(-1, 1) for _ in range(50))

    means = resampling._resample_means(pool, 8, 7)

    assert spy.calls == [(50, 8, 7)]
    assert [mean.hex() for mean in means] == [mean.hex() for mean in _plain_loop(pool, 8, 7)]


def test_the_vectorized_path_is_none_without_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """numpy is optional: where it cannot be imported, the vectorized path says so (None)."""
    monkeypatch.setitem(__import__("sys").modules, "numpy", None)  # import numpy raises ImportError

    assert resampling._vectorized_means([0.5, 1.5], 1, 3) is None


def test_another_seed_gives_other_means() -> None:
    assert bootstrap_means(VALUES, seed=8, resamples=50) != bootstrap_means(VALUES, seed=7, resamples=50)


def test_the_means_are_sorted_and_as_many_as_the_resamples() -> None:
    means = bootstrap_means(VALUES, seed=1, resamples=300)

    assert len(means) == 300
    assert list(means) == sorted(means)
    assert min(VALUES) <= means[0]
    assert means[-1] <= max(VALUES)


def test_the_order_of_the_values_does_not_matter() -> None:
    assert bootstrap_means([4.0, 0.0, 2.0, 1.0], seed=3, resamples=200) == bootstrap_means(
        VALUES, seed=3, resamples=200
    )


def test_negated_values_give_exactly_the_mirrored_means() -> None:
    values = [0.1, -0.3, 0.7, 0.7, 1 / 3]
    means = bootstrap_means(values, seed=11, resamples=400)
    mirrored = bootstrap_means([-v for v in values], seed=11, resamples=400)

    assert mirrored == tuple(-m + 0.0 for m in reversed(means))


def test_a_self_mirrored_sample_gets_a_symmetric_distribution() -> None:
    means = bootstrap_means([-1.0, 1.0, -0.5, 0.5], seed=5, resamples=100)

    assert len(means) == 200
    assert means == tuple(-m + 0.0 for m in reversed(means))


def test_a_single_value_resamples_to_itself() -> None:
    assert set(bootstrap_means([0.25], seed=1, resamples=10)) == {0.25}


def test_the_bootstrap_refuses_no_values_or_no_resamples() -> None:
    with pytest.raises(ValueError, match="value"):
        bootstrap_means([], seed=1, resamples=10)
    with pytest.raises(ValueError, match="resample"):
        bootstrap_means(VALUES, seed=1, resamples=0)


@pytest.mark.parametrize(
    ("p", "expected"),
    [(0.0, 1.0), (0.25, 1.75), (0.5, 2.5), (0.9, 5.8), (1.0, 7.0)],
)
def test_quantiles_interpolate_linearly_type_7(p: float, expected: float) -> None:
    assert quantile([1.0, 2.0, 3.0, 7.0], p) == pytest.approx(expected)


def test_quantile_refuses_no_values_or_a_bad_level() -> None:
    with pytest.raises(ValueError, match="no values"):
        quantile([], 0.5)
    with pytest.raises(ValueError, match="probability"):
        quantile([1.0], 1.5)


def test_the_upper_bound_mirrors_the_lower_bound_exactly() -> None:
    ordered = sorted([0.1, 0.35, 0.2, 0.9, 0.6, 0.61, 0.33])
    low, high = percentile_interval(ordered, 0.13)
    mirror_low, mirror_high = percentile_interval(sorted(-v for v in ordered), 0.13)

    assert (mirror_low, mirror_high) == (-high, -low)
    assert low == quantile(ordered, 0.13)


def test_the_expanded_tail_matches_hesterberg_s_formula() -> None:
    """Φ(−√(n/(n−1))·t_{0.95, n−1}) at n = 8 (scipy: 0.021413680917346592)."""
    assert expanded_tail(0.05, 8) == pytest.approx(0.021413680917346592, rel=1e-12)


def test_the_expansion_vanishes_as_tasks_grow() -> None:
    assert expanded_tail(0.05, 8) < expanded_tail(0.05, 100) < expanded_tail(0.05, 10_000) < 0.05
    assert expanded_tail(0.05, 10_000) == pytest.approx(0.05, abs=2e-4)


@pytest.mark.parametrize(("tail", "n"), [(0.05, 1), (0.0, 5), (0.5, 5)])
def test_the_expanded_tail_refuses_one_cluster_or_a_bad_tail(tail: float, n: int) -> None:
    with pytest.raises(ValueError, match="clusters|tail"):
        expanded_tail(tail, n)


def test_the_p_value_falls_as_the_means_move_above_zero() -> None:
    around_zero = [x / 100 for x in range(-50, 50)]
    above_zero = [x / 100 for x in range(-5, 95)]

    assert bootstrap_p_value(above_zero, 10) < bootstrap_p_value(around_zero, 10)
    assert bootstrap_p_value([-1.0, -0.5], 10) == 1.0


def test_the_p_value_is_below_alpha_exactly_when_the_expanded_lower_bound_clears_zero() -> None:
    """The test the interval makes, inverted: p < α ⟺ the one-sided bound at α is above 0."""
    n = 12
    for shift in (x / 40 for x in range(-10, 30)):
        means = sorted(shift + (i - 500) / 1000 for i in range(1000))
        low = quantile(means, expanded_tail(0.05, n))
        p = bootstrap_p_value(means, n)
        if abs(low) > 0.003:  # away from the interpolation step at zero
            assert (p < 0.05) == (low > 0), shift


def test_zero_counts_against_an_improvement() -> None:
    """A mean of exactly 0 is no improvement: all-zero means give p = 1."""
    assert bootstrap_p_value([0.0] * 50, 8) == 1.0
    assert not math.isnan(bootstrap_p_value([0.1] * 50, 8))


def test_the_p_value_refuses_no_means_or_one_cluster() -> None:
    with pytest.raises(ValueError, match="no values"):
        bootstrap_p_value([], 5)
    with pytest.raises(ValueError, match="clusters"):
        bootstrap_p_value([0.1], 1)


def test_the_vectorized_bootstrap_adds_left_to_right_whatever_the_chunk_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Chunks of 1 to 9 resamples over pools of 8 to 64 values (numpy sums pairwise from 8 values
    along a contiguous axis): every shape gives the plain loop's bits."""
    pytest.importorskip("numpy", reason="numpy is optional (wfbench[fast]); the plain loop is the reference")
    rng = random.Random(9)
    for count in (8, 9, 17, 64):
        pool = sorted(rng.uniform(-1, 1) for _ in range(count))
        for rows in range(1, 10):
            monkeypatch.setattr(resampling, "_CHUNK_DRAWS", rows * count)
            vectorized = resampling._vectorized_means(pool, count + rows, 19)
            assert vectorized is not None
            expected = _plain_loop(pool, count + rows, 19)
            assert [mean.hex() for mean in vectorized] == [mean.hex() for mean in expected]
