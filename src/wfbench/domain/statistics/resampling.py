"""The seeded cluster bootstrap over tasks, its fixed quantile rule and the expanded percentile.

The unit resampled is the **task**: each task contributes one paired effect computed from all
of its runs, so drawing tasks with replacement keeps every task's runs together (a cluster
bootstrap). Resampling runs instead would treat runs of one task as independent evidence and
make intervals too narrow when tasks differ (``docs/statistics.md``).

Reproducibility, bit for bit:

- the generator is :class:`random.Random` seeded with an integer: its ``random()`` sequence for
  an integer seed is guaranteed stable across Python versions (the only part of the module
  with that guarantee; ``choices``/``randrange`` are not used). An index is
  ``int(random() · n)``. This module is the one place in the domain that imports ``random``
  (import-linter allows exactly this import); nothing reads the global generator. A large
  bootstrap (millions of draws: a gate over thousands of tasks) draws the same stream through
  numpy when it is installed, to the same bits (:func:`_vectorized_means` says why they agree);
- before resampling, the effects are put in a canonical order that does not depend on row
  order or task names (sorted by value), and in a canonical *orientation*: the draws run on
  whichever of the effects and their negations sorts first, and the means are negated back
  when needed. Swapping the two arms therefore negates every bootstrap mean exactly; when the
  effects are their own mirror image the distribution is symmetrised (the means and their
  negations), which is what the bootstrap distribution is in expectation;
- the quantile rule is fixed (Hyndman & Fan type 7, linear interpolation) and the upper
  quantile is the mirror of the lower one, so intervals mirror exactly too.

The interval is the **expanded percentile** interval (Hesterberg 2015): the percentile
interval at the widened tail ``Φ(−√(n/(n−1))·t_{1−α/2, n−1})`` instead of ``α/2``. With few
tasks the plain percentile interval is too narrow (it behaves like a z interval with a
``1/n`` variance); the expansion restores the t interval's small-sample coverage while
keeping the bootstrap's asymmetry. BCa was considered and not used: its acceleration
estimate is itself noisy at 5–20 tasks and it needs a jackknife per interval.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from typing import Any

from wfbench.domain.statistics.distributions import normal_cdf, normal_ppf, t_cdf, t_ppf

__all__ = [
    "bootstrap_means",
    "bootstrap_p_value",
    "expanded_tail",
    "percentile_interval",
    "quantile",
]


def _canonical(values: Sequence[float]) -> tuple[list[float], bool, bool]:
    """The values to draw from, whether to negate the means, and whether to symmetrise."""
    ordered = sorted(values)
    mirrored = sorted(-value for value in values)
    if mirrored < ordered:
        return mirrored, True, False
    return ordered, False, ordered == mirrored


def bootstrap_means(values: Sequence[float], *, seed: int, resamples: int) -> tuple[float, ...]:
    """``resamples`` means of ``len(values)`` draws with replacement, sorted ascending.

    Invariant to the order of ``values``; ``bootstrap_means([-v for v in values])`` is exactly
    the mirror image (negated, reversed). A symmetric input yields ``2·resamples`` means.

    Raises:
        ValueError: no values, or fewer than one resample.
    """
    if not values:
        raise ValueError("the bootstrap needs at least one value")
    if resamples < 1:
        raise ValueError("the bootstrap needs at least one resample")
    pool, negate, symmetric = _canonical(values)
    means = _resample_means(pool, seed, resamples)
    if negate:
        means = [-mean for mean in means]
    if symmetric:
        means += [-mean for mean in means]
    # ``+ 0.0`` turns a negative zero into zero so that mirrored outputs compare and print alike.
    return tuple(sorted(mean + 0.0 for mean in means))


def _resample_means(pool: list[float], seed: int, resamples: int) -> list[float]:
    """The mean of each resample, in draw order: draw ``j`` of a resample is ``pool[int(random() · n)]``.

    The loop is the hot spot of a large gate (``resamples × n`` draws per effect: 80 million for
    40,000 tasks), so it is written for CPython: the generator's ``random`` and ``math.floor``
    bound to locals, ``n`` as a float (the product is the same double ``random() · n`` gives
    for an integer ``n``, and ``floor`` equals ``int`` on it, which is never negative), and each
    resample's values summed left to right as drawn (``sum`` of a list adds in order, so the
    mean is the same double as before). About twice as fast as the plain comprehension, same
    bits (``tests/unit/statistics/test_resampling.py`` pins it against that comprehension).
    """
    count = len(pool)
    if count * resamples >= _VECTOR_MIN_DRAWS and all(type(value) is float for value in pool):
        vectorized = _vectorized_means(pool, seed, resamples)
        if vectorized is not None:
            return vectorized
    import random  # here, not at import: a gate with no pair to judge never needs it

    draw = random.Random(seed).random
    width = float(count)
    floor = math.floor
    means: list[float] = []
    keep = means.append
    for _ in range(resamples):
        keep(sum([pool[floor(draw() * width)] for _ in range(count)]) / count)
    return means


#: Below this many draws the plain loop is faster than importing numpy (and most gates are below).
_VECTOR_MIN_DRAWS = 1 << 22
#: Draws per vectorized chunk (512 KiB per array: the chunk's arrays stay in cache and the
#: allocator reuses them, where 8 MiB ones were mapped and faulted in afresh every chunk).
_CHUNK_DRAWS = 1 << 16


def _vectorized_means(pool: list[float], seed: int, resamples: int) -> list[float] | None:
    """:func:`_resample_means` with numpy when it is installed (``None`` when it is not): the same bits.

    numpy is optional (the domain must install anywhere; ``pip install wfbench[fast]`` adds it).
    Same stream: numpy's legacy ``RandomState`` is the same Mersenne Twister, started from this
    generator's own state (``random.Random(seed).getstate()``), and its ``random_sample`` is
    ``random()``'s formula (``(a >> 5, b >> 6)`` of two 32-bit words, over 2**53). Same
    indices: ``floor(u · n)`` in doubles. Same sums: ``cumsum`` adds left to right as ``sum``
    does (no pairwise summation), from the first value, which is what ``sum``'s ``0 + x``
    gives once a negative zero is read as zero (``-0.0`` adds exactly as ``0.0`` does to any
    running sum that starts at ``0``). The picks of a chunk are laid out draw-major (one row per
    draw position, one column per resample) so that ``add.reduce`` over the first axis adds row
    after row, left to right, without ``cumsum``'s whole second array (numpy sums pairwise only
    along the contiguous axis it reduces, so a chunk of one resample is summed with ``cumsum``).
    Only floats reach here (``sum`` of integers is exact).
    ``tests/unit/statistics/test_resampling.py`` pins it against the plain loop.
    """
    try:
        numpy: Any = importlib.import_module("numpy")
    except ImportError:
        return None
    count = len(pool)
    import random

    _, words, _ = random.Random(seed).getstate()
    generator = numpy.random.RandomState()
    generator.set_state(("MT19937", numpy.array(words[:-1], dtype=numpy.uint32), words[-1]))
    values = numpy.array(pool, dtype=numpy.float64) + 0.0
    width = float(count)
    per_chunk = max(1, _CHUNK_DRAWS // count)
    means: list[float] = []
    for start in range(0, resamples, per_chunk):
        rows = min(per_chunk, resamples - start)
        draws = generator.random_sample(rows * count)
        numpy.multiply(draws, width, out=draws)
        picks = values.take(draws.astype(numpy.intp).reshape(rows, count).T)  # C order: (count, rows)
        # one resample: its axis 0 is the contiguous one, which numpy would sum pairwise
        sums = numpy.cumsum(picks[:, 0])[-1:] if rows == 1 else numpy.add.reduce(picks, axis=0)
        means.extend((sums / count).tolist())
    return means


def quantile(ordered: Sequence[float], p: float) -> float:
    """The ``p`` quantile of ascending ``ordered`` values (type 7: linear interpolation).

    Raises:
        ValueError: no values, or ``p`` outside [0, 1].
    """
    if not ordered:
        raise ValueError("no values")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability out of range: {p!r}")
    position = (len(ordered) - 1) * p
    index = math.floor(position)
    fraction = position - index
    if fraction == 0.0:  # also every p = 1 (the last value): nothing to interpolate
        return ordered[index]
    return ordered[index] + fraction * (ordered[index + 1] - ordered[index])


def percentile_interval(ordered: Sequence[float], tail: float) -> tuple[float, float]:
    """``(lower, upper)`` quantiles leaving ``tail`` on each side; the upper mirrors the lower."""
    lower = quantile(ordered, tail)
    upper = -quantile([-value for value in reversed(ordered)], tail)
    return lower + 0.0, upper + 0.0


def expanded_tail(tail: float, n: int) -> float:
    """The expanded-percentile tail for a nominal ``tail`` (one side) with ``n ≥ 2`` clusters.

    Raises:
        ValueError: ``n < 2`` or ``tail`` outside (0, ½).
    """
    if n < 2:
        raise ValueError("the expanded percentile needs at least two clusters")
    if not 0.0 < tail < 0.5:
        raise ValueError(f"tail out of range: {tail!r}")
    return normal_cdf(-math.sqrt(n / (n - 1)) * t_ppf(1.0 - tail, n - 1))


def bootstrap_p_value(ordered: Sequence[float], n: int, null: float = 0.0) -> float:
    """One-sided p-value for ``H0: effect ≤ null`` from ascending bootstrap means of ``n ≥ 2`` clusters.

    The expanded-percentile interval's own test inverted: ``F0`` is the share of bootstrap
    means at or below ``null`` (``(k + 1)/(B + 1)``, so never 0), and ``p = T_{n−1}(Φ⁻¹(F0)·√((n−1)/n))``.
    A lower bound at one-sided level ``α`` is above zero exactly when ``p`` is below ``α`` (up
    to the interpolation between neighbouring means).

    Raises:
        ValueError: no means, or ``n < 2``.
    """
    if not ordered:
        raise ValueError("no values")
    if n < 2:
        raise ValueError("a p-value needs at least two clusters")
    at_or_below = sum(1 for mean in ordered if mean <= null)
    share = (at_or_below + 1) / (len(ordered) + 1)
    return t_cdf(normal_ppf(share) * math.sqrt((n - 1) / n), n - 1)
