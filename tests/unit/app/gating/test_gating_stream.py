"""The one-pass gate input attests what the row-at-a-time derivation attested, from any rows."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import wide_rows
from wfbench.app.gating.gating import TASK_BINDING_FIELDS, derive_bindings, gate_input, regate, resolve_model
from wfbench.domain.promotion.evidence import EvidenceBindings
from wfbench.domain.results.rows import Row

#: Rows of every value shape are costly to draw; a loaded machine must not fail the health check.
relaxed = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

NOW = dt.datetime(2026, 2, 1, tzinfo=dt.UTC)
PAIRS = {"candidate_workflow": "workflow", "candidate_review": "review"}


# --- the derivation as it was: every row in memory, one filter per task ---------------------
def _agreed(values: Iterable[Any]) -> tuple[Any, ...]:
    seen: dict[Any, None] = {}
    for value in values:
        if value not in (None, "") and isinstance(value, str | int | float):
            seen.setdefault(value, None)
    return tuple(seen)


def naive_resolve_model(rows: Sequence[Row]) -> tuple[str | None, str | None]:
    models = _agreed(row.extra.get("benchmark_model") or row.extra.get("model") for row in rows)
    if len(models) == 1:
        return str(models[0]), None
    if len(models) > 1:
        return None, "rows disagree on the benchmark model (" + ", ".join(map(str, models)) + ")"
    return None, None


def naive_derive_bindings(
    rows: Sequence[Row], *, model: str | None, candidates: Sequence[str]
) -> EvidenceBindings:
    def single(name: str, subset: Sequence[Row] = rows) -> Any:
        values = _agreed(row.extra.get(name) for row in subset)
        return values[0] if len(values) == 1 else None

    tasks: list[dict[str, Any]] = []
    for task in dict.fromkeys(row.task for row in rows):
        of_task = [row for row in rows if row.task == task]
        binding: dict[str, Any] = {"id": task}
        for key, field in TASK_BINDING_FIELDS:
            if (value := single(field, of_task)) is not None:
                binding[key] = value
        tasks.append(binding)
    candidate_rows = [row for row in rows if row.arm in candidates]
    plugin = {"version": single("ce_plugin_version"), "manifest_digest": single("ce_plugin_manifest_digest")}
    return EvidenceBindings(
        benchmark_model=model,
        proposer_model=single("proposer_model"),
        effort=single("effort"),
        candidate_overlay_digest=single("candidate_overlay_digest", candidate_rows),
        selected_tasks=tuple(tasks),
        ce_plugin=plugin if any(plugin.values()) else None,
    )


def _typed(value: Any) -> Any:
    """A binding with each value's type, so 7 and 7.0 and True are told apart."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


@relaxed
@given(st.lists(wide_rows(), max_size=16))
def test_the_model_the_rows_agree_on_is_the_naive_one(rows: list[Row]) -> None:
    """Agreement, disagreement (named in first-seen order) and absence."""
    assert resolve_model(iter(rows)) == naive_resolve_model(rows)


@relaxed
@given(st.lists(wide_rows(), max_size=16), st.lists(st.sampled_from(sorted(PAIRS)), unique=True))
def test_bindings_from_one_pass_equal_the_naive_bindings(rows: list[Row], candidates: list[str]) -> None:
    """Per-task digests, proposer, effort, plugin and the candidates' overlay digest, value types kept."""
    streamed = derive_bindings(iter(rows), model="m", candidates=candidates)
    naive = naive_derive_bindings(rows, model="m", candidates=candidates)

    assert streamed == naive
    assert _typed(streamed.selected_tasks) == _typed(naive.selected_tasks)


@relaxed
@given(st.lists(wide_rows(), max_size=16))
def test_regate_of_a_stream_equals_regate_of_the_same_rows_in_memory(rows: list[Row]) -> None:
    """A generator is read once and gives the decisions and evidence a list gives."""
    streamed = regate((row for row in rows), now=NOW, pairs=PAIRS)
    listed = regate(rows, now=NOW, pairs=PAIRS)
    once = regate(gate_input(rows), now=NOW, pairs=PAIRS)

    assert streamed == listed == once
    paired = [row for row in rows if row.arm in {arm for pair in PAIRS.items() for arm in pair}]
    candidates = [arm for arm in PAIRS if any(row.arm == arm for row in rows)]
    if candidates:
        arms = {*candidates, *(PAIRS[arm] for arm in candidates)}
        assert streamed.model == naive_resolve_model([row for row in paired if row.arm in arms])[0]


def _row(task: str, arm: str, run: int, **extra: Any) -> Row:
    return Row(task=task, arm=arm, run=run, extra=extra)


def test_an_arm_whose_rows_disagree_attests_nothing_even_when_other_arms_agree() -> None:
    """Two values within one arm, then the first again elsewhere: no single value."""
    rows = [
        _row("t", "workflow", 0, effort="high", candidate_overlay_digest="d1"),
        _row("t", "workflow", 1, effort="xhigh"),
        _row("t", "candidate_workflow", 0, effort="high", candidate_overlay_digest="d1"),
        _row("t", "candidate_workflow", 1, candidate_overlay_digest="d2"),
        _row("t", "candidate_workflow", 2, candidate_overlay_digest="d1"),
    ]

    streamed = derive_bindings(iter(rows), model=None, candidates=["candidate_workflow"])

    assert streamed == naive_derive_bindings(rows, model=None, candidates=["candidate_workflow"])
    assert streamed.effort is None
    assert streamed.candidate_overlay_digest is None


def test_a_task_whose_rows_disagree_on_a_digest_records_only_the_agreed_ones() -> None:
    """The oracle digest conflicts (dropped); the sha agrees across a gap (kept); 7 == 7.0 agree."""
    rows = [
        _row("t", "a", 0, oracle_digest="o1", task_base_sha="s", task_prompt_digest=7),
        _row("t", "a", 1, oracle_digest="o2", task_prompt_digest=7.0),
        _row("u", "a", 0, oracle_digest="o2"),
        _row("t", "b", 0, task_base_sha="s", oracle_digest="o1"),
    ]

    (t, u) = derive_bindings(rows, model=None, candidates=[]).selected_tasks

    assert t == {"id": "t", "sha": "s", "prompt_digest": 7}
    assert type(t["prompt_digest"]) is int
    assert u == {"id": "u", "oracle_digest": "o2"}


def test_every_disagreeing_model_is_named_in_first_seen_order_across_arms() -> None:
    """Models are not capped: three names, first seen in rows of different arms."""
    rows = [
        _row("t", "workflow", 0, benchmark_model="m-2"),
        _row("t", "candidate_workflow", 0, model="m-1"),
        _row("t", "workflow", 1, benchmark_model="m-3"),
        _row("t", "candidate_workflow", 1, benchmark_model="m-2"),
    ]

    assert resolve_model(rows) == (None, "rows disagree on the benchmark model (m-2, m-1, m-3)")
    assert resolve_model(rows) == naive_resolve_model(rows)


_STAMPS = st.sampled_from(
    [
        "2026-01-01T00:00:00+00:00",
        "2026-01-01T01:00:00+02:00",
        "2026-01-02T00:00:00Z",
        "2026-01-03T00:00:00",
        "yesterday",
        "",
        None,
        7,
        "2025-12-31T23:59:59+00:00",
    ]
)


@relaxed
@given(st.lists(st.tuples(wide_rows(), _STAMPS), max_size=12))
def test_the_newest_recorded_at_is_the_newest_aware_time_of_any_row(drawn: list[tuple[Row, Any]]) -> None:
    from wfbench.app.gating.gating import aware_time

    rows = [attrs.evolve(row, extra={**row.extra, "recorded_at": stamp}) for row, stamp in drawn]
    times = [moment for row in rows if (moment := aware_time(row.extra["recorded_at"])) is not None]

    assert gate_input(rows).attested.recorded_at == (max(times) if times else None)
