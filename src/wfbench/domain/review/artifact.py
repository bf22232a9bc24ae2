"""The agent's review artifact: value objects and the strict parser (one message per cause).

:func:`parse_review_artifact` checks the bytes in the reference harness's order and raises a
:class:`~wfbench.domain.errors.ReviewArtifactError` whose reason is exactly the reference's
message for the first failure. The file-level checks (lstat, symlink, regular file) belong to
whoever reads the file; their messages are the ``MSG_*`` constants below.

One deliberate tightening: a JSON object with a repeated key is refused
(``review output is not valid JSON: Duplicate object key ...``); the reference keeps the last.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from wfbench.domain import strict_json
from wfbench.domain.errors import ReviewArtifactError
from wfbench.domain.review.fields import (
    Severity,
    Verdict,
    path_field,
    positive_int,
    severity_field,
    text_field,
)

__all__ = [
    "FINDING_KEYS",
    "MAX_ARTIFACT_BYTES",
    "MAX_FINDINGS",
    "MSG_EMPTY",
    "MSG_NEVER_WRITTEN",
    "MSG_NOT_BOUNDED_FILE",
    "MSG_NOT_UTF8",
    "Finding",
    "ReviewArtifact",
    "msg_unreadable",
    "parse_review_artifact",
]

#: Largest artifact accepted, in bytes (256 KiB).
MAX_ARTIFACT_BYTES = 262_144
#: Most findings one artifact may hold.
MAX_FINDINGS = 100
#: The ten keys every finding must have, sorted.
FINDING_KEYS = (
    "blocking",
    "category",
    "end_line",
    "evidence",
    "id",
    "line",
    "path",
    "recommendation",
    "scenario",
    "severity",
)
_TOP_KEYS = frozenset({"schema_version", "verdict", "findings"})

MSG_NEVER_WRITTEN = "review output was never written"
MSG_NOT_BOUNDED_FILE = "review output must be a bounded regular non-symlink file"
MSG_EMPTY = "review output is empty"
MSG_NOT_UTF8 = "review output is not valid UTF-8"


def msg_unreadable(strerror: str) -> str:
    """The message for an OS error while inspecting or reading the artifact."""
    return f"review output is unreadable: {strerror}"


@attrs.frozen
class Finding:
    """One defect the reviewer reports; lines are a closed 1-based range on a repo-relative path."""

    id: str
    severity: Severity
    path: str
    line: int
    end_line: int
    category: str
    scenario: str
    evidence: str
    recommendation: str
    blocking: bool

    def to_mapping(self) -> dict[str, object]:
        """The finding as the artifact's JSON object."""
        return {key: getattr(self, key) for key in FINDING_KEYS}

    def content_key(self) -> tuple[Any, ...]:
        """Everything but the id: two findings with equal keys are interchangeable for scoring."""
        return (
            self.severity.weight,
            self.path,
            self.line,
            self.end_line,
            self.category,
            self.scenario,
            self.evidence,
            self.recommendation,
            self.blocking,
        )


@attrs.frozen
class ReviewArtifact:
    """A parsed review: the verdict and its findings (in the artifact's order)."""

    verdict: Verdict
    findings: tuple[Finding, ...] = ()

    def to_mapping(self) -> dict[str, object]:
        """The artifact as the JSON document the agent writes (``schema_version`` 1)."""
        return {
            "schema_version": 1,
            "verdict": str(self.verdict),
            "findings": [finding.to_mapping() for finding in self.findings],
        }


def parse_review_artifact(data: bytes) -> ReviewArtifact:
    """Parse and validate the artifact's bytes. Raises :class:`ReviewArtifactError` (one cause)."""
    if len(data) > MAX_ARTIFACT_BYTES:
        raise ReviewArtifactError(MSG_NOT_BOUNDED_FILE)
    if not data:
        raise ReviewArtifactError(MSG_EMPTY)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ReviewArtifactError(MSG_NOT_UTF8) from None
    try:
        document = strict_json.loads(text)
    except strict_json.JsonSyntaxError as exc:
        reason = f"review output is not valid JSON: {exc.msg} at line {exc.lineno}"
        raise ReviewArtifactError(reason) from None
    return artifact_from_document(document)


def artifact_from_document(document: object) -> ReviewArtifact:
    """Validate an already-decoded JSON document (the reference harness's checks, in its order)."""
    if not isinstance(document, dict) or document.keys() != _TOP_KEYS:
        raise ReviewArtifactError("review output requires exactly schema_version, verdict, and findings")
    if document["schema_version"] != 1:  # Python equality, as the reference: 1.0 and true pass
        raise ReviewArtifactError("review output schema_version must be 1")
    verdict = _verdict(document["verdict"])
    raw_findings = document["findings"]
    if not isinstance(raw_findings, list) or len(raw_findings) > MAX_FINDINGS:
        raise ReviewArtifactError(f"findings must be a list of at most {MAX_FINDINGS} items")
    findings = tuple(_finding(index, raw) for index, raw in enumerate(raw_findings))
    if len({finding.id for finding in findings}) != len(findings):
        raise ReviewArtifactError("review finding ids must be unique")
    if verdict is Verdict.APPROVE and findings:
        raise ReviewArtifactError("approve verdict cannot contain findings")
    if verdict is Verdict.REQUEST_CHANGES and not any(finding.blocking for finding in findings):
        raise ReviewArtifactError("request_changes requires at least one blocking finding")
    return ReviewArtifact(verdict=verdict, findings=findings)


def _verdict(value: object) -> Verdict:
    text = text_field(value, 32, lambda reason: ReviewArtifactError(f"verdict {reason}"))
    try:
        return Verdict(text.casefold())
    except ValueError:
        raise ReviewArtifactError("verdict must be approve, comment, or request_changes") from None


def _finding(index: int, raw: object) -> Finding:
    where = f"findings[{index}]"

    def fail(field: str) -> Callable[[str], ReviewArtifactError]:
        return lambda reason: ReviewArtifactError(f"{where}.{field} {reason}")

    if not isinstance(raw, dict):
        raise ReviewArtifactError(f"{where} must be an object")
    if raw.keys() != set(FINDING_KEYS):
        raise ReviewArtifactError(f"{where} requires exactly {list(FINDING_KEYS)}")
    line = positive_int(raw["line"])
    if line is None:
        raise ReviewArtifactError(f"{where}.line must be a positive integer")
    end_line = positive_int(raw["end_line"])
    if end_line is None:
        raise ReviewArtifactError(f"{where}.end_line must be a positive integer")
    if end_line < line:
        raise ReviewArtifactError(f"{where}.end_line precedes line")
    if not isinstance(raw["blocking"], bool):
        raise ReviewArtifactError(f"{where}.blocking must be boolean")
    return Finding(
        id=text_field(raw["id"], 128, fail("id")),
        severity=severity_field(raw["severity"], fail("severity")),
        path=path_field(raw["path"], fail("path")),
        line=line,
        end_line=end_line,
        category=text_field(raw["category"], 128, fail("category")).casefold(),
        scenario=text_field(raw["scenario"], 4096, fail("scenario")),
        evidence=text_field(raw["evidence"], 4096, fail("evidence")),
        recommendation=text_field(raw["recommendation"], 4096, fail("recommendation")),
        blocking=raw["blocking"],
    )
