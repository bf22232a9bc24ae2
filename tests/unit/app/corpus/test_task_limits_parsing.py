"""A corpus task's ``limits:``: timeouts, CPUs, memory and storage, parsed strictly; their digest."""

from __future__ import annotations

from typing import Any

import pytest

from wfbench.app.corpus.task_limits import TaskLimits, parse_limits, parse_task_size
from wfbench.domain.errors import InputError

G = 1024**3


def test_cpus_memory_and_storage_are_read_in_binary_units():
    limits = parse_limits({"cpus": 2, "memory": "1.5G", "storage": "512m"}, locator="t")
    assert limits == TaskLimits(cpus=2.0, memory_bytes=int(1.5 * G), storage_bytes=512 * 1024**2)


@pytest.mark.parametrize("text", ["4GB", "4GiB", "4096", "4 G", "G", "-1G", "0M", "1K", 4096, None])
def test_a_size_without_one_unit_or_too_small_is_not_a_size(text: Any):
    with pytest.raises(ValueError, match="must be"):
        parse_task_size(text)


@pytest.mark.parametrize(
    ("key", "value"),
    [("cpus", -1), ("cpus", 0), ("cpus", True), ("cpus", "2"), ("memory", "4GB"), ("storage", -5)],
)
def test_a_bad_limit_is_an_input_error_naming_the_task_and_the_field(key: str, value: Any):
    with pytest.raises(InputError) as caught:
        parse_limits({key: value}, locator="fix-median")
    assert (caught.value.locator, caught.value.field) == ("fix-median", f"limits.{key}")


def test_a_task_without_limits_has_no_digest_so_older_rows_still_match():
    assert TaskLimits().digest() is None


def test_the_digest_changes_with_each_limit_and_only_with_them():
    base = TaskLimits(memory_bytes=G)
    assert base.digest() == TaskLimits(memory_bytes=G).digest()
    others = {
        TaskLimits(memory_bytes=2 * G).digest(),
        TaskLimits(memory_bytes=G, cpus=1.0).digest(),
        TaskLimits(memory_bytes=G, storage_bytes=G).digest(),
        TaskLimits(memory_bytes=G, agent_timeout_s=60.0).digest(),
    }
    assert base.digest() not in others
    assert len(others) == 4
