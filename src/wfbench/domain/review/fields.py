"""Vocabulary and field rules shared by review artifacts and hidden labels.

Severities and verdicts are closed sets; categories are free text in the schema (the reference
accepts any non-blank category, and its own examples use ``style``), so :class:`Category` only
names the vocabulary the review prompt suggests. Paths are normalized the POSIX way and must stay
inside the repository.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

__all__ = [
    "Category",
    "Severity",
    "Verdict",
    "normalize_repo_path",
    "text_field",
    "utf8_size",
]


class Severity(enum.StrEnum):
    """How bad a finding (or labelled defect) is; critical and high ones block a merge."""

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def weight(self) -> int:
        """The reference's severity weight: critical 8, high 5, medium 2, low 1."""
        return _WEIGHTS[self]

    @property
    def blocking(self) -> bool:
        """Whether this severity blocks a merge (critical or high)."""
        return self in (Severity.CRITICAL, Severity.HIGH)


_WEIGHTS = {Severity.CRITICAL: 8, Severity.HIGH: 5, Severity.MEDIUM: 2, Severity.LOW: 1}


class Verdict(enum.StrEnum):
    """A review's overall verdict."""

    APPROVE = "approve"
    COMMENT = "comment"
    REQUEST_CHANGES = "request_changes"


class Category(enum.StrEnum):
    """The categories the review prompt suggests. Findings may use any other non-blank text."""

    CORRECTNESS = "correctness"
    SECURITY = "security"
    COMPATIBILITY = "compatibility"
    PERFORMANCE = "performance"
    TESTS = "tests"
    OTHER = "other"


def utf8_size(text: str) -> int:
    """Bytes ``text`` takes in UTF-8 (a lone surrogate from a ``\\ud800`` escape counts 3)."""
    return len(text.encode("utf-8", "surrogatepass"))


def text_field(value: object, limit: int, fail: Callable[[str], Exception]) -> str:
    """``value`` stripped, if it is a non-blank string of at most ``limit`` UTF-8 bytes.

    ``fail(reason)`` builds the error: ``must be a nonblank string`` or ``exceeds N bytes``.
    """
    if not isinstance(value, str) or not value.strip():
        raise fail("must be a nonblank string")
    stripped = value.strip()
    if utf8_size(stripped) > limit:
        raise fail(f"exceeds {limit} bytes")
    return stripped


def severity_field(value: object, fail: Callable[[str], Exception]) -> Severity:
    """A severity, case-insensitively: ``critical``, ``high``, ``medium`` or ``low``."""
    text = text_field(value, 16, fail).casefold()
    try:
        return Severity(text)
    except ValueError:
        raise fail("must be one of critical, high, medium, low") from None


def path_field(value: object, fail: Callable[[str], Exception]) -> str:
    """A repository-relative path of at most 512 bytes, normalized (see :func:`normalize_repo_path`)."""
    path = normalize_repo_path(text_field(value, 512, fail))
    if path.startswith(("/", "../")) or path in (".", ".."):
        raise fail("must be a repository-relative path")
    return path


def positive_int(value: object) -> int | None:
    """``value`` if it is a JSON integer of at least 1 (never a boolean or a float), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return None


def normalize_repo_path(path: str) -> str:
    """Backslashes become slashes, then POSIX ``normpath``: ``./src//a.ts`` becomes ``src/a.ts``.

    Like ``posixpath.normpath``: ``..`` cancels the component before it, a leading ``//`` is kept
    and three or more leading slashes collapse to one; the empty path becomes ``.``.
    """
    path = path.replace("\\", "/")
    if not path:
        return "."
    slashes = len(path) - len(path.lstrip("/"))
    lead = "//" if slashes == 2 else "/" if slashes else ""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part != ".." or (not lead and (not parts or parts[-1] == "..")):
            parts.append(part)
        elif parts:
            parts.pop()
    return lead + "/".join(parts) or "."
