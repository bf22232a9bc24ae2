"""Result rows: one (task, arm, run) cell's evidence, with the reference harness's field names.

A :class:`Row` holds the fields the domain reasons about as typed attributes and keeps every
other field of the mapping it was read from, verbatim, in :attr:`Row.extra`, so a
``results.jsonl`` written by the reference harness (or by a newer wfbench) survives a
read/write round trip with nothing dropped.

Unknown is not zero: a usage, cost or duration that was not measured is ``None``.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from typing import Any

import attrs

from wfbench.domain.errors import InputError


class ErrorKind(enum.StrEnum):
    """The closed ``error_kind`` vocabulary (``docs/concepts.md``, "Error kinds")."""

    SESSION_ERROR = "session-error"
    CANCELLED = "cancelled"
    SKILL_NOT_INVOKED = "skill-not-invoked"
    EVIDENCE_UNVERIFIED = "evidence-unverified"
    PLAN_EVIDENCE_INVALID = "plan-evidence-invalid"
    IMPLEMENTATION_EVIDENCE_INVALID = "implementation-evidence-invalid"
    REVIEW_EVIDENCE_INVALID = "review-evidence-invalid"
    VERIFY_FAILED = "verify-failed"
    ORACLE_FAILED = "oracle-failed"
    ORACLE_UNAVAILABLE = "oracle-unavailable"
    NO_WORK_PRODUCED = "no-work-produced"
    INFRA_ERROR = "infra-error"
    CLEANUP_FAILURE = "cleanup-failure"


#: Rows with these kinds are kept out of medians and resolve denominators (and are never reused).
EXCLUDED_KINDS = frozenset(
    {
        ErrorKind.SESSION_ERROR,
        ErrorKind.INFRA_ERROR,
        ErrorKind.EVIDENCE_UNVERIFIED,
        ErrorKind.CLEANUP_FAILURE,
        ErrorKind.REVIEW_EVIDENCE_INVALID,
        ErrorKind.CANCELLED,
    }
)

#: The harness or the session could not execute: health counts these as execution failures.
EXECUTION_FAILURE_KINDS = frozenset(
    {
        ErrorKind.SESSION_ERROR,
        ErrorKind.INFRA_ERROR,
        ErrorKind.CLEANUP_FAILURE,
        ErrorKind.CANCELLED,
    }
)

#: The session ran but its evidence cannot be trusted: health counts these as evidence failures.
EVIDENCE_FAILURE_KINDS = frozenset(
    {
        ErrorKind.REVIEW_EVIDENCE_INVALID,
        ErrorKind.EVIDENCE_UNVERIFIED,
        ErrorKind.SKILL_NOT_INVOKED,
    }
)

#: Kinds that say the *system* is failing, not the task: they feed the outage breaker.
SYSTEMIC_KINDS = frozenset(
    {
        ErrorKind.SESSION_ERROR,
        ErrorKind.INFRA_ERROR,
        ErrorKind.CLEANUP_FAILURE,
        ErrorKind.REVIEW_EVIDENCE_INVALID,
    }
)

USAGE_FIELDS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)
CHURN_FIELDS = ("diff_files", "diff_insertions", "diff_deletions")

#: Review keys that are not metrics and therefore live in ``extra``.
_REVIEW_NON_METRIC_KEYS = frozenset(
    {"review_score", "review_evidence_valid", "review_artifact", "review_evidence_detail"}
)

ReviewValue = float | int | bool | None


@attrs.frozen
class Row:
    """One cell's result row. Build it with :meth:`from_mapping`; change it with ``attrs.evolve``."""

    task: str
    arm: str
    run: int
    task_class: str | None = None
    ok: bool = False
    resolved: bool = False
    error_kind: ErrorKind | None = None
    input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    duration_s: float | None = None
    num_turns: int | None = None
    authored_tests_passed: bool | None = None
    oracle_passed: bool | None = None
    skill_invoked: bool | None = None
    transcript_missing: bool = False
    review_evidence_valid: bool | None = None
    #: ``review_<metric>`` fields (precision, recall, weighted_f1, blocker_recall, ...).
    review: Mapping[str, ReviewValue] = attrs.field(factory=dict)
    diff_files: int | None = None
    diff_insertions: int | None = None
    diff_deletions: int | None = None
    reused: bool = False
    #: Every other field of the source mapping, verbatim and in order.
    extra: Mapping[str, Any] = attrs.field(factory=dict)

    @property
    def effective_kind(self) -> ErrorKind | None:
        """``review-evidence-invalid`` whenever the review artifact was invalid, else ``error_kind``."""
        if self.review_evidence_valid is False:
            return ErrorKind.REVIEW_EVIDENCE_INVALID
        return self.error_kind

    @property
    def excluded(self) -> bool:
        """True when the row is kept out of medians and resolve denominators."""
        return self.error_kind in EXCLUDED_KINDS or self.review_evidence_valid is False

    @property
    def cell(self) -> tuple[str, str, int]:
        """The (task, arm, run) identity of the cell."""
        return (self.task, self.arm, self.run)

    def usage(self, name: str) -> int | None:
        """One of :data:`USAGE_FIELDS` by name."""
        value: int | None = getattr(self, name)
        return value

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> Row:
        """Validate a mapping with the reference's field names; raise :class:`InputError` naming the field."""
        if type(raw) is dict:
            fast = _fast_row(cls, raw)
            if fast is not None:
                return fast
        if not isinstance(raw, Mapping):
            raise InputError("a row must be a JSON object")
        known: dict[str, Any] = {
            "task": _text(raw, "task"),
            "arm": _text(raw, "arm"),
            "run": _count(raw, "run", required=True),
            "task_class": _opt_text(raw, "class"),
            "ok": _flag(raw, "ok", default=False),
            "resolved": _flag(raw, "resolved", default=False),
            "error_kind": _kind(raw),
            "cost_usd": _opt_number(raw, "cost_usd"),
            "duration_s": _opt_number(raw, "duration_s"),
            "num_turns": _count(raw, "num_turns"),
            "authored_tests_passed": _opt_flag(raw, "authored_tests_passed"),
            "oracle_passed": _opt_flag(raw, "oracle_passed"),
            "skill_invoked": _opt_flag(raw, "skill_invoked"),
            "transcript_missing": _flag(raw, "transcript_missing", default=False),
            "review_evidence_valid": _opt_flag(raw, "review_evidence_valid"),
            "reused": _flag(raw, "reused", default=False),
        }
        for name in (*USAGE_FIELDS, *CHURN_FIELDS):
            known[name] = _count(raw, name)
        review: dict[str, ReviewValue] = {}
        extra: dict[str, Any] = {}
        for key, value in raw.items():
            if key in _MAPPED_KEYS:
                continue
            if key.startswith("review_") and key not in _REVIEW_NON_METRIC_KEYS:
                review[key] = _review_value(key, value)
            else:
                extra[key] = value
        return cls(review=review, extra=extra, **known)

    def to_mapping(self) -> dict[str, Any]:
        """The row as a mapping with the reference's field names (inverse of :meth:`from_mapping`)."""
        out: dict[str, Any] = {
            "task": self.task,
            "arm": self.arm,
            "run": self.run,
            "class": self.task_class,
            "ok": self.ok,
            "resolved": self.resolved,
            "error_kind": None if self.error_kind is None else self.error_kind.value,
        }
        for name in USAGE_FIELDS:
            out[name] = getattr(self, name)
        out |= {
            "cost_usd": self.cost_usd,
            "duration_s": self.duration_s,
            "num_turns": self.num_turns,
            "authored_tests_passed": self.authored_tests_passed,
            "oracle_passed": self.oracle_passed,
            "skill_invoked": self.skill_invoked,
            "transcript_missing": self.transcript_missing,
            "review_evidence_valid": self.review_evidence_valid,
        }
        out.update(self.review)
        for name in CHURN_FIELDS:
            out[name] = getattr(self, name)
        out["reused"] = self.reused
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out


_MAPPED_KEYS = frozenset(
    {
        "task",
        "arm",
        "run",
        "class",
        "ok",
        "resolved",
        "error_kind",
        "cost_usd",
        "duration_s",
        "num_turns",
        "authored_tests_passed",
        "oracle_passed",
        "skill_invoked",
        "transcript_missing",
        "review_evidence_valid",
        "reused",
        *USAGE_FIELDS,
        *CHURN_FIELDS,
    }
)


_KIND_OF: dict[str, ErrorKind] = {kind.value: kind for kind in ErrorKind}
_DEFAULT_FALSE_FLAGS = ("ok", "resolved", "transcript_missing", "reused")
_OPTIONAL_FLAGS = ("authored_tests_passed", "oracle_passed", "skill_invoked", "review_evidence_valid")
_COUNTS = ("num_turns", *USAGE_FIELDS, *CHURN_FIELDS)
#: Integers within this bound convert to a float and test finite without an ``OverflowError``.
_SMALL_INT = 2**53
#: How a mapping's keys split into review metrics and extra fields, per key order seen (bounded).
_LAYOUTS: dict[tuple[str, ...], tuple[tuple[str, ...], tuple[str, ...]]] = {}
_MAX_LAYOUTS = 64


def _fast_row(cls: type[Row], raw: dict[str, Any]) -> Row | None:
    """The row :meth:`Row.from_mapping` builds from ``raw``, checked with exact types only;
    ``None`` (the caller takes the general path, which says what is wrong) on anything else.

    Reading a million-row file spends most of its time here, so the common case — a dict
    decoded from JSON whose every field has its plain type — is checked without a call per
    field, and the split of the other keys into review metrics and extra fields is computed
    once per key layout. Whatever this path accepts, the general path accepts with the same
    result (``tests/unit/results/test_rows.py`` pins it on generated mappings).
    """
    get = raw.get
    task, arm, run, task_class = get("task"), get("arm"), get("run"), get("class")
    if type(task) is not str or not task or type(arm) is not str or not arm:
        return None
    if type(run) is not int or run < 0 or (task_class is not None and type(task_class) is not str):
        return None
    kind = get("error_kind")
    if kind is not None:
        kind = _KIND_OF.get(kind) if type(kind) is str else None
        if kind is None:
            return None
    for name in _DEFAULT_FALSE_FLAGS:
        value = get(name, False)
        if value is not True and value is not False:
            return None
    for name in _OPTIONAL_FLAGS:
        value = get(name)
        if value is not None and value is not True and value is not False:
            return None
    for name in _COUNTS:
        value = get(name)
        if value is not None and (type(value) is not int or value < 0):
            return None
    cost, duration = _fast_number(get("cost_usd")), _fast_number(get("duration_s"))
    if cost is False or duration is False:
        return None
    split = _layout(raw)
    review = {key: raw[key] for key in split[0]}
    for value in review.values():
        if not _plain_review_value(value):
            return None
    return cls(
        task,
        arm,
        run,
        task_class,
        get("ok", False),
        get("resolved", False),
        kind,
        get("input_tokens"),
        get("cache_creation_input_tokens"),
        get("cache_read_input_tokens"),
        get("output_tokens"),
        cost,
        duration,
        get("num_turns"),
        get("authored_tests_passed"),
        get("oracle_passed"),
        get("skill_invoked"),
        get("transcript_missing", False),
        get("review_evidence_valid"),
        review,
        get("diff_files"),
        get("diff_insertions"),
        get("diff_deletions"),
        get("reused", False),
        {key: raw[key] for key in split[1]},
    )


def _fast_number(value: Any) -> float | bool | None:
    """``_opt_number`` for a plain float or small int (``False``: take the general path)."""
    kind = type(value)
    if value is None:
        return None
    if kind is float:
        return value if 0.0 <= value < math.inf else False
    if kind is int:
        return float(value) if 0 <= value <= _SMALL_INT else False
    return False


def _plain_review_value(value: Any) -> bool:
    """True for a review value ``_review_value`` keeps as it is, checked by exact type."""
    kind = type(value)
    if value is None or kind is bool:
        return True
    if kind is float:
        return bool(value - value == 0.0)  # finite: infinity and NaN give NaN
    return kind is int and -_SMALL_INT <= value <= _SMALL_INT


def _layout(raw: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The review-metric keys and the extra keys of ``raw``, in its order (cached per key order)."""
    keys = tuple(raw)
    split = _LAYOUTS.get(keys)
    if split is None:
        review = tuple(k for k in keys if k not in _MAPPED_KEYS and _is_review_metric(k))
        extra = tuple(k for k in keys if k not in _MAPPED_KEYS and not _is_review_metric(k))
        split = (review, extra)
        if len(_LAYOUTS) < _MAX_LAYOUTS:
            _LAYOUTS[keys] = split
    return split


def _is_review_metric(key: str) -> bool:
    return key.startswith("review_") and key not in _REVIEW_NON_METRIC_KEYS


def _text(raw: Mapping[str, Any], key: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise InputError("must be a non-empty string", field=key)
    return value


def _opt_text(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise InputError("must be a string or null", field=key)
    return value


def _flag(raw: Mapping[str, Any], key: str, *, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise InputError("must be true or false", field=key)
    return value


def _opt_flag(raw: Mapping[str, Any], key: str) -> bool | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, bool):
        raise InputError("must be true, false or null", field=key)
    return value


def _count(raw: Mapping[str, Any], key: str, *, required: bool = False) -> int | None:
    if required and key not in raw:
        raise InputError("is required", field=key)
    value = raw.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError("must be a non-negative integer" + ("" if required else " or null"), field=key)
    return value


def _opt_number(raw: Mapping[str, Any], key: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not _finite(value) or value < 0:
        raise InputError("must be a finite non-negative number or null", field=key)
    return float(value)


def _kind(raw: Mapping[str, Any]) -> ErrorKind | None:
    value = raw.get("error_kind")
    if value is None:
        return None
    try:
        return ErrorKind(value)
    except ValueError:
        raise InputError(f"unknown error kind {value!r}", field="error_kind") from None


def _review_value(key: str, value: Any) -> ReviewValue:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | float) and _finite(value):
        return value
    raise InputError("must be a number, a boolean or null", field=key)


def _finite(value: float) -> bool:
    """``math.isfinite``, but False (not OverflowError) for an integer too large for a float."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
