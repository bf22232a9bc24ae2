"""Hidden review labels: the ground truth a review is scored against, and their strict parser.

Labels have their own shape (``line_start``/``line_end``, no narrative, no ``blocking`` flag, no
verdict, no count limit); the expected verdict follows from their severities. Errors are
:class:`~wfbench.domain.errors.InputError` naming the field (``findings[2].line_start``); the
caller adds the file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from wfbench.domain import strict_json
from wfbench.domain.errors import InputError
from wfbench.domain.review.fields import (
    Severity,
    Verdict,
    path_field,
    positive_int,
    severity_field,
    text_field,
)

__all__ = ["LABEL_KEYS", "Label", "ReviewLabels", "parse_labels"]

#: The six keys every label must have, sorted.
LABEL_KEYS = ("category", "id", "line_end", "line_start", "path", "severity")
_TOP_KEYS = frozenset({"schema_version", "findings"})
_BOMS = (
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\xfe\xff", "utf-16"),
    (b"\xff\xfe", "utf-16"),
    (b"\xef\xbb\xbf", "utf-8-sig"),
)


@attrs.frozen
class Label:
    """One known defect: a closed 1-based line range on a repo-relative path."""

    id: str
    severity: Severity
    path: str
    line_start: int
    line_end: int
    category: str

    def to_mapping(self) -> dict[str, object]:
        """The label as its JSON object."""
        return {key: getattr(self, key) for key in LABEL_KEYS}

    def content_key(self) -> tuple[Any, ...]:
        """A total order on labels (content first, the id last)."""
        return (self.path, self.line_start, self.line_end, self.severity.weight, self.category, self.id)


@attrs.frozen
class ReviewLabels:
    """The label set of one review task. Empty means a clean control: only ``approve`` is right."""

    labels: tuple[Label, ...] = ()

    @property
    def expected_verdict(self) -> Verdict:
        """``approve`` with no labels, ``request_changes`` with a blocker, else ``comment``."""
        if not self.labels:
            return Verdict.APPROVE
        if any(label.severity.blocking for label in self.labels):
            return Verdict.REQUEST_CHANGES
        return Verdict.COMMENT

    def to_mapping(self) -> dict[str, object]:
        """The labels as their JSON document (``schema_version`` 1)."""
        return {"schema_version": 1, "findings": [label.to_mapping() for label in self.labels]}


def parse_labels(data: bytes) -> ReviewLabels:
    """Parse a ``review-labels.json`` document. Raises :class:`InputError` naming the field."""
    try:
        document = strict_json.loads(data.decode(_encoding(data)))
    except UnicodeDecodeError:
        raise InputError("hidden review labels are malformed: not valid Unicode text") from None
    except strict_json.JsonSyntaxError as exc:
        raise InputError(f"hidden review labels are malformed: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(document, dict) or document.keys() != _TOP_KEYS:
        raise InputError("hidden review labels require schema_version and findings")
    if document["schema_version"] != 1:
        raise InputError("hidden review labels have an unsupported schema", field="schema_version")
    raw_labels = document["findings"]
    if not isinstance(raw_labels, list):
        raise InputError("hidden review labels have an unsupported schema", field="findings")
    labels = tuple(_label(index, raw) for index, raw in enumerate(raw_labels))
    seen: set[str] = set()
    for index, label in enumerate(labels):
        if label.id in seen:
            reason = f"repeats id {label.id!r}; label ids must be unique"
            raise InputError(reason, field=f"findings[{index}].id")
        seen.add(label.id)
    return ReviewLabels(labels)


def _label(index: int, raw: object) -> Label:
    where = f"findings[{index}]"

    def fail(field: str) -> Callable[[str], InputError]:
        return lambda reason: InputError(reason, field=f"{where}.{field}")

    if not isinstance(raw, dict):
        raise InputError("must be an object", field=where)
    if raw.keys() != set(LABEL_KEYS):
        raise InputError(f"requires exactly {list(LABEL_KEYS)}", field=where)
    line_start = positive_int(raw["line_start"])
    if line_start is None:
        raise InputError("must be a positive integer", field=f"{where}.line_start")
    line_end = positive_int(raw["line_end"])
    if line_end is None:
        raise InputError("must be a positive integer", field=f"{where}.line_end")
    if line_end < line_start:
        raise InputError("precedes line_start (an inverted range)", field=f"{where}.line_end")
    return Label(
        id=text_field(raw["id"], 128, fail("id")),
        severity=severity_field(raw["severity"], fail("severity")),
        path=path_field(raw["path"], fail("path")),
        line_start=line_start,
        line_end=line_end,
        category=text_field(raw["category"], 128, fail("category")).casefold(),
    )


def _encoding(data: bytes) -> str:
    """The text encoding of a JSON document, detected as :func:`json.loads` does for bytes."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding
    if len(data) >= 4:
        if not data[0]:
            return "utf-16-be" if data[1] else "utf-32-be"
        if not data[1]:
            return "utf-16-le" if data[2] or data[3] else "utf-32-le"
    elif len(data) == 2:
        if not data[0]:
            return "utf-16-be"
        if not data[1]:
            return "utf-16-le"
    return "utf-8"
