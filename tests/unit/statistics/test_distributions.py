"""The distribution functions against published values (scipy.stats 1.17 to 16 digits, and the
classic printed tables), and their refusals."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wfbench.domain.statistics import distributions
from wfbench.domain.statistics.distributions import (
    normal_cdf,
    normal_ppf,
    sign_test_p,
    t_cdf,
    t_ppf,
    wilson_interval,
)

# df: (t_0.80, t_0.95, t_0.975), from scipy.stats.t.ppf.
T_QUANTILES = {
    1: (1.3763819204711738, 6.313751514675037, 12.706204736174694),
    2: (1.0606601717798214, 2.9199855803537242, 4.302652729749462),
    3: (0.9784723123633042, 2.3533634348018233, 3.1824463052837078),
    4: (0.9409645772351816, 2.1318467863266495, 2.7764451051977934),
    7: (0.8960296443137653, 1.8945786050900062, 2.364624251592784),
    11: (0.8755299780738819, 1.7958848187040433, 2.200985160091639),
    19: (0.8609505502689286, 1.7291328115213682, 2.0930240544083087),
    39: (0.8509350199201249, 1.6848751217112248, 2.022690920036761),
    120: (0.8446268377431316, 1.6576508993552352, 1.9799304050824402),
    1000: (0.8419808221624288, 1.6463788172854643, 1.9623390808264083),
}


@pytest.mark.parametrize("df", sorted(T_QUANTILES))
def test_t_quantiles_match_the_published_table(df: int) -> None:
    computed = tuple(t_ppf(p, df) for p in (0.8, 0.95, 0.975))

    assert computed == pytest.approx(T_QUANTILES[df], rel=1e-10)


def test_t_quantiles_match_the_printed_three_decimal_table() -> None:
    """The rows everybody knows: t_{.975, 1} = 12.706, t_{.95, 7} = 1.895, t_{.975, 19} = 2.093."""
    assert round(t_ppf(0.975, 1), 3) == 12.706
    assert round(t_ppf(0.95, 7), 3) == 1.895
    assert round(t_ppf(0.975, 19), 3) == 2.093


def test_t_quantiles_are_antisymmetric_and_zero_at_the_median() -> None:
    assert t_ppf(0.5, 3) == 0.0
    assert t_ppf(0.05, 7) == -t_ppf(0.95, 7)


def test_t_quantiles_approach_the_normal_for_many_degrees_of_freedom() -> None:
    assert t_ppf(0.975, 10**7) == pytest.approx(1.959963984540054, rel=1e-6)


@pytest.mark.parametrize(
    ("t", "df", "expected"),
    [
        (2.0, 5, 0.9490302605850708),
        (-1.5, 3, 0.11529193262241147),
        (0.3, 1, 0.5927735790777423),
        (4.0, 40, 0.9998670438021666),
        (-6.0, 2, 0.013335736607712385),
    ],
)
def test_t_cdf_matches_scipy(t: float, df: int, expected: float) -> None:
    assert t_cdf(t, df) == pytest.approx(expected, rel=1e-10)


def test_t_cdf_inverts_t_ppf() -> None:
    for df in (1, 2, 5, 30):
        for p in (0.001, 0.2, 0.7, 0.999):
            assert t_cdf(t_ppf(p, df), df) == pytest.approx(p, rel=1e-10)


def test_t_cdf_at_the_infinities() -> None:
    assert t_cdf(math.inf, 3) == 1.0
    assert t_cdf(-math.inf, 3) == 0.0


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        (1e-10, -6.361340902404056),
        (0.001, -3.090232306167813),
        (0.05, -1.6448536269514729),
        (0.3, -0.5244005127080409),
        (0.5, 0.0),
        (0.9, 1.2815515655446004),
        (0.975, 1.959963984540054),
        (1 - 1e-12, 7.0344869100478356),
    ],
)
def test_normal_quantiles_match_scipy(p: float, expected: float) -> None:
    assert normal_ppf(p) == pytest.approx(expected, rel=1e-14, abs=1e-15)


def test_normal_quantile_is_infinite_at_the_ends_and_inverts_the_cdf() -> None:
    assert normal_ppf(0.0) == -math.inf
    assert normal_ppf(1.0) == math.inf
    assert normal_cdf(normal_ppf(0.123)) == pytest.approx(0.123, rel=1e-14)


@pytest.mark.parametrize("bad", [-0.1, 1.1, math.nan])
def test_normal_quantile_refuses_a_probability_outside_the_unit_interval(bad: float) -> None:
    with pytest.raises(ValueError, match="probability"):
        normal_ppf(bad)


@pytest.mark.parametrize(("p", "df"), [(0.0, 3), (1.0, 3), (0.5, 0), (0.9, -1)])
def test_t_quantile_refuses_bad_arguments(p: float, df: float) -> None:
    with pytest.raises(ValueError, match="out of range|degrees"):
        t_ppf(p, df)


def test_t_cdf_refuses_non_positive_degrees_of_freedom() -> None:
    with pytest.raises(ValueError, match="degrees"):
        t_cdf(1.0, 0)


@pytest.mark.parametrize(
    ("wins", "losses", "expected"),
    [
        (7, 1, 0.0703125),  # 2 * (1 + 8) / 256
        (5, 0, 0.0625),
        (4, 4, 1.0),
        (0, 0, 1.0),
        (1, 9, 0.021484375),  # 2 * 11 / 1024
        (500, 480, 0.5439172374909197),
    ],
)
def test_the_sign_test_is_the_exact_binomial_tail(wins: int, losses: int, expected: float) -> None:
    assert sign_test_p(wins, losses) == expected


def test_the_sign_test_is_symmetric_and_refuses_negative_counts() -> None:
    assert sign_test_p(3, 9) == sign_test_p(9, 3)
    with pytest.raises(ValueError, match="non-negative"):
        sign_test_p(-1, 2)


def test_wilson_matches_scipy_and_stays_inside_the_unit_interval() -> None:
    low, high = wilson_interval(7, 10, 0.9)  # type: ignore[misc]

    assert (low, high) == pytest.approx((0.4416997958698351, 0.8731234160968021), rel=1e-12)
    assert wilson_interval(0, 5, 0.9)[0] == 0.0  # type: ignore[index]
    assert wilson_interval(5, 5, 0.9)[1] == 1.0  # type: ignore[index]
    assert wilson_interval(0, 0, 0.9) is None


@pytest.mark.parametrize(("successes", "trials", "confidence"), [(3, 2, 0.9), (-1, 2, 0.9), (1, 2, 1.0)])
def test_wilson_refuses_inconsistent_counts_or_confidence(
    successes: int, trials: int, confidence: float
) -> None:
    with pytest.raises(ValueError, match="successes|confidence"):
        wilson_interval(successes, trials, confidence)


@given(wins=st.integers(min_value=0, max_value=400), losses=st.integers(min_value=0, max_value=400))
def test_the_sign_tests_running_tail_is_the_sum_of_binomial_coefficients(wins: int, losses: int) -> None:
    trials = wins + losses
    tail = sum(math.comb(trials, k) for k in range(min(wins, losses) + 1))
    expected = 1.0 if trials == 0 else float(min(Fraction(1), Fraction(2 * tail, 2**trials)))

    assert sign_test_p(wins, losses) == expected


def test_the_sign_test_over_forty_thousand_tasks_is_exact() -> None:
    """Quadratic before (a fresh ``math.comb`` per term: minutes at 40,000 tasks of one gate)."""
    assert sign_test_p(20_000, 20_000) == 1.0
    assert sign_test_p(19_700, 20_300) == pytest.approx(0.002744, rel=1e-3)  # 2·Φ(−299.5/100): 0.00274


def test_the_sign_test_of_nothing_or_of_one_task_is_one() -> None:
    assert [sign_test_p(0, 0), sign_test_p(1, 0), sign_test_p(0, 1)] == [1.0, 1.0, 1.0]


@pytest.mark.parametrize(("wins", "losses"), [(-1, 2), (2, -1), (-1, -1)])
def test_the_sign_test_refuses_a_negative_count_with_its_message(wins: int, losses: int) -> None:
    with pytest.raises(ValueError, match=r"^counts must be non-negative$"):
        sign_test_p(wins, losses)


@pytest.mark.parametrize(("successes", "trials"), [(3, 2), (-1, 2), (0, -1)])
def test_wilson_refuses_inconsistent_counts_with_its_message(successes: int, trials: int) -> None:
    with pytest.raises(ValueError, match=r"^successes must lie between 0 and trials$"):
        wilson_interval(successes, trials, 0.9)


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.5, 1.5, math.nan])
def test_wilson_refuses_a_confidence_outside_the_open_unit_interval(confidence: float) -> None:
    with pytest.raises(ValueError, match=r"^confidence out of range: "):
        wilson_interval(1, 2, confidence)


@pytest.mark.parametrize(("successes", "trials", "confidence"), [(9, 9, 0.95), (2, 2, 0.5), (10, 10, 0.8)])
def test_wilsons_upper_bound_is_clamped_to_one_where_rounding_would_pass_it(
    successes: int, trials: int, confidence: float
) -> None:
    """Unclamped, these intervals end at 1.0000000000000002."""
    assert wilson_interval(successes, trials, confidence)[1] == 1.0  # type: ignore[index]


@pytest.mark.parametrize(
    ("t", "df", "expected"),
    [
        (0.0, 1.0, 1 / math.pi),  # Cauchy
        (1.0, 1.0, 1 / (2 * math.pi)),
        (0.0, 2.0, 1 / (2 * math.sqrt(2))),  # (2 + t²)^(-3/2)
        (2.0, 2.0, 6**-1.5),
        (1.5, 5.0, 8 / (3 * math.sqrt(5) * math.pi) * 1.45**-3),  # Γ(3)/(√(5π)·Γ(5/2))·(1 + t²/5)^-3
    ],
)
def test_the_t_density_newton_steps_with_is_students(t: float, df: float, expected: float) -> None:
    assert distributions._t_pdf(t, df) == pytest.approx(expected, rel=1e-13)
    assert distributions._t_pdf(-t, df) == distributions._t_pdf(t, df)


@pytest.mark.parametrize("df", [1.0, 3.0, 30.0, 1000.0])
def test_the_t_density_is_the_derivative_of_the_distribution_function(df: float) -> None:
    for t in (0.0, 0.4, 1.7, 4.0):
        step = 1e-5
        slope = (t_cdf(t + step, df) - t_cdf(t - step, df)) / (2 * step)
        assert distributions._t_pdf(t, df) == pytest.approx(slope, rel=1e-7)


@pytest.mark.parametrize(
    ("a", "b", "x"), [(0.25, 1.0, 1.0), (0.25, 4.75, 0.375), (0.25, 2.0, 1.0), (0.5, 2.0, 3.0)]
)
def test_the_continued_fraction_never_divides_by_zero(a: float, b: float, x: float) -> None:
    """Modified Lentz: a partial denominator of exactly 0 is replaced by a tiny number instead of
    dividing by it. These arguments make, before convergence, the first ``d``, an even-step ``d``,
    an odd-step ``d`` and an odd-step ``c`` exactly 0."""
    assert math.isfinite(distributions._beta_fraction(a, b, x))


def test_a_fraction_that_does_not_converge_says_so_instead_of_dividing_by_zero() -> None:
    """Past x = 1 the fraction need not converge; here a ``d`` and a ``c`` are exactly 0 on the way."""
    with pytest.raises(
        ArithmeticError, match="^the incomplete beta function's continued fraction did not converge$"
    ):
        distributions._beta_fraction(0.5, 0.25, 2.0)


@pytest.mark.parametrize("df", [0.5, 1.0, 7.0, 1e6])
def test_t_cdf_is_one_half_at_zero_and_where_t_squared_underflows(df: float) -> None:
    assert t_cdf(0.0, df) == 0.5
    assert t_cdf(-0.0, df) == 0.5
    assert t_cdf(1e-200, df) == 0.5  # t² underflows to 0


def test_t_cdf_where_the_beta_argument_underflows_to_zero() -> None:
    """df / (df + t²) is exactly 0 for df = 1e-20 and t = 1e154: all the mass lies on one side."""
    assert (t_cdf(1e154, 1e-20), t_cdf(-1e154, 1e-20)) == (1.0, 0.0)


@pytest.mark.parametrize("p", [1e-12, 7e-14, 1e-20, 1e-50, 1e-300])
def test_normal_quantiles_far_in_the_tails_invert_the_cdf(p: float) -> None:
    """Past r = √(−log p) = 5 (p below about 1.4e-11) AS 241 switches to its far-tail polynomials."""
    assert normal_cdf(normal_ppf(p)) == pytest.approx(p, rel=1e-12, abs=0.0)
