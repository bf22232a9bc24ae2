"""Parsing the agent's review artifact: the strict schema, the limits, one message per cause."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given

from tests.strategies import review_artifacts
from wfbench.domain.errors import InputError, ReviewArtifactError
from wfbench.domain.review.artifact import FINDING_KEYS, artifact_from_document, msg_unreadable
from wfbench.domain.review.scoring import (
    MAX_ARTIFACT_BYTES,
    Finding,
    ReviewArtifact,
    Severity,
    Verdict,
    parse_review_artifact,
)


def finding(**overrides: Any) -> dict[str, Any]:
    """The reference tests' default finding as JSON: actual-1, high, src/api.ts 20-24, correctness."""
    raw: dict[str, Any] = {
        "id": "actual-1",
        "severity": "high",
        "path": "src/api.ts",
        "line": 20,
        "end_line": 24,
        "category": "correctness",
        "scenario": "A caller passes null.",
        "evidence": "api.ts:20 dereferences it.",
        "recommendation": "Guard the null case.",
        "blocking": True,
    }
    raw.update(overrides)
    return raw


def document(verdict: Any = "request_changes", findings: Any = None, **extra: Any) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "verdict": verdict,
        "findings": [finding()] if findings is None else findings,
        **extra,
    }


def encoded(doc: object) -> bytes:
    return json.dumps(doc).encode()


def reason(data: bytes) -> str:
    with pytest.raises(ReviewArtifactError) as caught:
        parse_review_artifact(data)
    assert isinstance(caught.value, InputError)
    return caught.value.reason


def parsed(doc: object) -> ReviewArtifact:
    return parse_review_artifact(encoded(doc))


# --- acceptance examples P1-P5 (reference §6.1) ---------------------------------------------


def test_p1_a_strict_document_parses_to_value_objects() -> None:
    """P1: version 1, request_changes, one default finding."""
    artifact = parsed(document())
    assert artifact.verdict is Verdict.REQUEST_CHANGES
    assert artifact.findings[0].path == "src/api.ts"
    assert artifact.findings[0].blocking is True
    assert artifact.findings[0] == Finding(
        id="actual-1",
        severity=Severity.HIGH,
        path="src/api.ts",
        line=20,
        end_line=24,
        category="correctness",
        scenario="A caller passes null.",
        evidence="api.ts:20 dereferences it.",
        recommendation="Guard the null case.",
        blocking=True,
    )


def test_p2_approve_with_findings_is_refused() -> None:
    """P2."""
    assert reason(encoded(document("approve"))) == "approve verdict cannot contain findings"


def test_p3_request_changes_without_a_blocking_finding_is_refused() -> None:
    """P3."""
    doc = document(findings=[finding(blocking=False)])
    assert reason(encoded(doc)) == "request_changes requires at least one blocking finding"


def test_p4_a_path_escaping_the_repository_is_refused() -> None:
    """P4."""
    doc = document("comment", [finding(path="../escape.ts")])
    assert reason(encoded(doc)) == "findings[0].path must be a repository-relative path"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "review output is empty"),
        (b'{"verdict": "\xff\xfe"}', "review output is not valid UTF-8"),
        (b"Here is my review of the changes.", "review output is not valid JSON: Expecting value at line 1"),
    ],
)
def test_p5_each_byte_level_failure_names_its_own_cause(data: bytes, expected: str) -> None:
    """P5 (the missing-file case is file-level: tests/cli/test_review_cmd.py)."""
    assert reason(data) == expected


# --- limits and the JSON layer ---------------------------------------------------------------


def test_an_artifact_of_exactly_256_kib_is_accepted_and_one_byte_more_is_not() -> None:
    """The size limit is 262,144 bytes, with the reference's file-level message beyond it."""
    base = encoded(document())
    padded = base + b" " * (MAX_ARTIFACT_BYTES - len(base))
    assert parse_review_artifact(padded).verdict is Verdict.REQUEST_CHANGES
    assert reason(padded + b" ") == "review output must be a bounded regular non-symlink file"


def test_a_byte_order_mark_is_not_valid_json() -> None:
    """D12: a BOM-prefixed file ends up as 'not valid JSON'."""
    expected = "review output is not valid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) at line 1"
    assert reason(b"\xef\xbb\xbf" + encoded(document())) == expected


def test_a_json_error_names_the_line() -> None:
    """The decoder message and its line number."""
    text = json.dumps(document(), indent=2).replace('"line": 20,', '"line": 20', 1)
    line = text.splitlines().index('      "line": 20') + 2
    assert reason(text.encode()) == f"review output is not valid JSON: Expecting ',' delimiter at line {line}"


def test_a_repeated_key_is_refused_not_silently_overwritten() -> None:
    """Deliberate tightening: the reference keeps the last 'verdict'; we refuse the document."""
    data = b'{"schema_version": 1, "verdict": "approve", "verdict": "comment", "findings": []}'
    assert reason(data) == "review output is not valid JSON: Duplicate object key 'verdict' at line 1"


def test_nan_in_an_artifact_is_not_valid_json() -> None:
    """NaN is not JSON."""
    assert reason(encoded(document()).replace(b"20", b"NaN", 1)).startswith("review output is not valid JSON")


# --- top-level document (§1.3) --------------------------------------------------------------

_EXACT_KEYS = "review output requires exactly schema_version, verdict, and findings"


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ([], _EXACT_KEYS),
        ({"schema_version": 1, "verdict": "comment"}, _EXACT_KEYS),
        (document("comment", [], confidence=0.9), _EXACT_KEYS),
        (document("comment", [], schema_version=2), "review output schema_version must be 1"),
        (document("comment", [], schema_version="1"), "review output schema_version must be 1"),
        (document(None), "verdict must be a nonblank string"),
        (document("  "), "verdict must be a nonblank string"),
        (document("a" * 33), "verdict exceeds 32 bytes"),
        (document("lgtm"), "verdict must be approve, comment, or request_changes"),
        (document("comment", {}), "findings must be a list of at most 100 items"),
        (
            document("comment", [finding(id=str(i)) for i in range(101)]),
            "findings must be a list of at most 100 items",
        ),
    ],
)
def test_each_top_level_rule_has_its_message(doc: object, expected: str) -> None:
    """Shape, schema_version, verdict and findings, checked in that order."""
    assert reason(encoded(doc)) == expected


def test_schema_version_uses_python_equality_like_the_reference() -> None:
    """D12: true and 1.0 compare equal to 1 and are accepted."""
    for version in (True, 1.0):
        assert parsed(document("comment", [], schema_version=version)).verdict is Verdict.COMMENT


def test_the_verdict_is_stripped_and_case_folded_within_32_bytes() -> None:
    """D12: ' APPROVE ' is approve; 32 bytes pass after stripping; a multibyte character counts its bytes."""
    assert parsed(document(" APPROVE ", [])).verdict is Verdict.APPROVE
    assert reason(encoded(document(" " + "é" * 17, []))) == "verdict exceeds 32 bytes"
    assert reason(encoded(document("x" * 32, []))) == "verdict must be approve, comment, or request_changes"


def test_one_hundred_findings_are_accepted() -> None:
    """The limit is inclusive."""
    assert len(parsed(document("comment", [finding(id=str(i)) for i in range(100)])).findings) == 100


# --- each finding (§1.4) ---------------------------------------------------------------------

_KEYS = str(
    [
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
    ]
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("not an object", "findings[0] must be an object"),
        (finding(confidence="high"), f"findings[0] requires exactly {_KEYS}"),
        ({k: v for k, v in finding().items() if k != "scenario"}, f"findings[0] requires exactly {_KEYS}"),
        (finding(line=0), "findings[0].line must be a positive integer"),
        (finding(line=20.0), "findings[0].line must be a positive integer"),
        (finding(line=True), "findings[0].line must be a positive integer"),
        (finding(line="20"), "findings[0].line must be a positive integer"),
        (finding(end_line=-1), "findings[0].end_line must be a positive integer"),
        (finding(end_line=False), "findings[0].end_line must be a positive integer"),
        (finding(end_line=19), "findings[0].end_line precedes line"),
        (finding(blocking="true"), "findings[0].blocking must be boolean"),
        (finding(blocking=1), "findings[0].blocking must be boolean"),
        (finding(id=" "), "findings[0].id must be a nonblank string"),
        (finding(id=7), "findings[0].id must be a nonblank string"),
        (finding(id="é" * 65), "findings[0].id exceeds 128 bytes"),
        (finding(severity="blocker"), "findings[0].severity must be one of critical, high, medium, low"),
        (finding(severity=""), "findings[0].severity must be a nonblank string"),
        (finding(severity="h" * 17), "findings[0].severity exceeds 16 bytes"),
        (finding(path=""), "findings[0].path must be a nonblank string"),
        (finding(path="a" * 513), "findings[0].path exceeds 512 bytes"),
        (finding(category=None), "findings[0].category must be a nonblank string"),
        (finding(category="c" * 129), "findings[0].category exceeds 128 bytes"),
        (finding(scenario="\n"), "findings[0].scenario must be a nonblank string"),
        (finding(scenario="s" * 4097), "findings[0].scenario exceeds 4096 bytes"),
        (finding(evidence=[]), "findings[0].evidence must be a nonblank string"),
        (finding(evidence="e" * 4097), "findings[0].evidence exceeds 4096 bytes"),
        (finding(recommendation=""), "findings[0].recommendation must be a nonblank string"),
        (finding(recommendation="r" * 4097), "findings[0].recommendation exceeds 4096 bytes"),
    ],
)
def test_each_finding_rule_has_its_message(raw: object, expected: str) -> None:
    """One message per field rule, naming the finding's index and the field."""
    assert reason(encoded(document("comment", [raw]))) == expected


def test_limits_are_inclusive_and_measured_after_stripping() -> None:
    """128/16/512/4096 bytes pass; surrounding whitespace does not count."""
    raw = finding(id=" " + "i" * 128 + " ", severity=" HIGH\t", path="p" * 512, scenario="s" * 4096)
    (parsed_finding,) = parsed(document("comment", [raw])).findings
    assert (parsed_finding.id, parsed_finding.severity) == ("i" * 128, Severity.HIGH)
    assert len(parsed_finding.scenario) == 4096


def test_checks_inside_a_finding_run_in_the_reference_order() -> None:
    """line, then end_line, then their order, then blocking, then id ... recommendation."""
    assert reason(encoded(document("comment", [finding(line=0, id="")]))).endswith(
        ".line must be a positive integer"
    )
    assert reason(encoded(document("comment", [finding(end_line=0, blocking=1)]))).endswith(
        ".end_line must be a positive integer"
    )
    assert reason(encoded(document("comment", [finding(end_line=1, blocking=1)]))).endswith(
        ".end_line precedes line"
    )
    assert reason(encoded(document("comment", [finding(blocking=1, id="")]))).endswith(
        ".blocking must be boolean"
    )
    assert reason(encoded(document("comment", [finding(id="", severity="x")]))).endswith(
        ".id must be a nonblank string"
    )
    assert reason(encoded(document("comment", [finding(severity="x", path="/a")]))).endswith(
        ".severity must be one of critical, high, medium, low"
    )
    assert reason(encoded(document("comment", [finding(path="/a", category="")]))).endswith(
        ".path must be a repository-relative path"
    )
    assert reason(encoded(document("comment", [finding(category="", scenario="")]))).endswith(
        ".category must be a nonblank string"
    )
    assert reason(encoded(document("comment", [finding(scenario="", evidence="")]))).endswith(
        ".scenario must be a nonblank string"
    )
    assert reason(encoded(document("comment", [finding(evidence="", recommendation="")]))).endswith(
        ".evidence must be a nonblank string"
    )


def test_the_first_bad_finding_in_array_order_is_the_one_named() -> None:
    """findings[1] fails before findings[2] is looked at, and before whole-document rules."""
    raws = [finding(id="a"), finding(id="a", line=0), finding(id="a", blocking=None)]
    assert reason(encoded(document("approve", raws))) == "findings[1].line must be a positive integer"


@pytest.mark.parametrize(
    ("path", "normalized"),
    [
        ("./src//a.ts", "src/a.ts"),
        ("src/../x", "x"),
        ("src/./a.ts/", "src/a.ts"),
        ("C:\\x\\y.ts", "C:/x/y.ts"),
        ("  src\\api.ts ", "src/api.ts"),
    ],
)
def test_paths_are_normalized(path: str, normalized: str) -> None:
    """D12 and §1.4: strip, backslashes to slashes, POSIX normpath."""
    assert parsed(document("comment", [finding(path=path)])).findings[0].path == normalized


@pytest.mark.parametrize(
    "path", ["src/../../x", "a/..", "//etc/x", "../escape.ts", "/etc/passwd", ".", "..", "\\\\srv\\x"]
)
def test_paths_outside_the_repository_are_refused(path: str) -> None:
    """§1.4: absolute, '.', '..' and '../' prefixes after normalization."""
    assert (
        reason(encoded(document("comment", [finding(path=path)])))
        == "findings[0].path must be a repository-relative path"
    )


def test_the_category_is_free_text_case_folded() -> None:
    """Categories are not an enum: 'Style' is accepted as 'style'."""
    assert parsed(document("comment", [finding(category=" Style ")])).findings[0].category == "style"


# --- whole-document coherence (§1.5) --------------------------------------------------------


def test_finding_ids_must_be_unique_after_stripping_and_case_sensitively() -> None:
    """' a ' and 'a' collide; 'A' and 'a' do not."""
    assert (
        reason(encoded(document("comment", [finding(id="a"), finding(id=" a ")])))
        == "review finding ids must be unique"
    )
    assert len(parsed(document("comment", [finding(id="A"), finding(id="a")])).findings) == 2


def test_coherence_rules_run_in_order_ids_then_approve_then_request_changes() -> None:
    """Duplicate ids are reported even under an approve verdict."""
    doc = document("approve", [finding(id="a"), finding(id="a")])
    assert reason(encoded(doc)) == "review finding ids must be unique"


@pytest.mark.parametrize(
    ("verdict", "raws"),
    [
        ("comment", []),
        ("comment", [finding(blocking=True)]),
        ("request_changes", [finding(severity="low", blocking=True)]),
        ("approve", []),
    ],
)
def test_the_easy_to_miss_allowed_combinations_parse(verdict: str, raws: list[dict[str, Any]]) -> None:
    """§1.5: comment with nothing or with blockers; request_changes whose only blocker is low."""
    assert parsed(document(verdict, raws)).verdict == verdict


def test_artifact_from_document_validates_an_already_decoded_document() -> None:
    """The document-level entry point applies the same rules."""
    with pytest.raises(ReviewArtifactError, match="approve verdict cannot contain findings"):
        artifact_from_document(document("approve"))


def test_the_unreadable_message_carries_the_os_reason() -> None:
    """The message the file reader uses for OS errors."""
    assert msg_unreadable("Permission denied") == "review output is unreadable: Permission denied"


def test_finding_keys_are_the_ten_sorted_keys() -> None:
    """The key list the error message prints."""
    assert list(FINDING_KEYS) == sorted(finding())


@given(review_artifacts())
def test_parsing_a_serialized_artifact_gives_it_back(artifact: ReviewArtifact) -> None:
    """parse(serialize(a)) == a, compact and indented."""
    assert parse_review_artifact(encoded(artifact.to_mapping())) == artifact
    assert (
        parse_review_artifact(json.dumps(artifact.to_mapping(), indent=1, ensure_ascii=False).encode())
        == artifact
    )
