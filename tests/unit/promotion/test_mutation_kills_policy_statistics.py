"""Tests that kill the mutants of the statistical settings' validators (``promotion/policy``, #12).

Every bound at its edge (the last value accepted, the first refused), a string where a number
belongs (a refusal, never a ``TypeError``), and the exact reason and field of each refusal.
"""

from __future__ import annotations

from typing import Any

import pytest

from wfbench.domain.errors import InputError
from wfbench.domain.promotion.policy import PromotionPolicy

UNIT = "must be a number strictly between 0 and 1"
RESAMPLES = "must be an integer from 100 to 1000000"
SEED = "must be a non-negative integer or null"
MIN_TASKS = "must be an integer of at least 2"


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("confidence", 1.0, UNIT),
        ("confidence", 0.0, UNIT),
        ("confidence", "0.9", UNIT),
        ("confidence", True, UNIT),
        ("power", 1, UNIT),
        ("power", "high", UNIT),
        ("resamples", 99, RESAMPLES),
        ("resamples", 1_000_001, RESAMPLES),
        ("resamples", "2000", RESAMPLES),
        ("resamples", 2000.0, RESAMPLES),
        ("resamples", True, RESAMPLES),
        ("seed", -1, SEED),
        ("seed", True, SEED),
        ("seed", "7", SEED),
        ("non_inferiority_margin_pts", -0.5, "must not be negative"),
        ("non_inferiority_margin_pts", float("inf"), "must be a finite number"),
        ("min_tasks", 1, MIN_TASKS),
        ("min_tasks", True, MIN_TASKS),
        ("min_tasks", 2.0, MIN_TASKS),
    ],
)
def test_a_bad_statistical_setting_is_refused_naming_its_field(field: str, value: Any, reason: str) -> None:
    with pytest.raises(InputError) as caught:
        PromotionPolicy(**{field: value})

    assert (caught.value.reason, caught.value.field) == (reason, field)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("confidence", 0.999),
        ("power", 0.001),
        ("resamples", 100),
        ("resamples", 1_000_000),
        ("seed", 0),
        ("seed", None),
        ("non_inferiority_margin_pts", 0.0),
        ("non_inferiority_margin_pts", 0.5),
        ("min_tasks", 2),
    ],
)
def test_the_edge_values_are_accepted(field: str, value: Any) -> None:
    assert getattr(PromotionPolicy(**{field: value}), field) == value
