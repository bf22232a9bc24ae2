"""Hidden oracles as values: declared files, their limits, and the in-memory bundle with digests.

The adapter (``wfbench.adapters.repo.oracle_files``) reads the files; this module decides what a
declaration may say and computes the digests (``docs/concepts.md``, "Hidden oracles"). ``H`` is
sha256 over frames, each an 8-byte big-endian length followed by the bytes.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable, Sequence

import attrs

from wfbench.domain.workspace.rules import relative_path_problem


@attrs.frozen
class OracleLimits:
    """Bounds on what a task's oracle may capture (reference defaults: 8 files, 512 KiB, 2 MiB)."""

    max_files: int = 8
    max_file_bytes: int = 512 * 1024
    max_total_bytes: int = 2 * 1024 * 1024


@attrs.frozen
class OracleFileSpec:
    """A declared oracle file: ``source`` relative to the corpus, staged at ``target``."""

    source: str
    target: str


@attrs.frozen
class OracleFile:
    """One captured oracle file: its bytes and their sha256 (hex)."""

    target: str
    data: bytes = attrs.field(repr=False)
    sha256: str

    @classmethod
    def of(cls, target: str, data: bytes) -> OracleFile:
        """Capture ``data`` for ``target`` with its digest."""
        return cls(target, data, hashlib.sha256(data).hexdigest())

    @property
    def size(self) -> int:
        """Length in bytes."""
        return len(self.data)


def _framed(parts: Iterable[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


@attrs.frozen
class OracleBundle:
    """A task's oracle files held in memory, sorted by target."""

    files: tuple[OracleFile, ...]

    @property
    def manifest_digest(self) -> str:
        """H over (target, sha256 hex, decimal size) of every file."""
        parts: list[bytes] = []
        for item in self.files:
            parts += [item.target.encode(), item.sha256.encode(), str(item.size).encode()]
        return _framed(parts)

    def digest(self, command: str = "") -> str:
        """H over the command, then (target, payload) for each file."""
        parts = [command.encode()]
        for item in self.files:
            parts += [item.target.encode(), item.data]
        return _framed(parts)

    @property
    def total_bytes(self) -> int:
        """Bytes over all files."""
        return sum(item.size for item in self.files)


def declaration_problems(
    specs: Sequence[OracleFileSpec], limits: OracleLimits
) -> tuple[tuple[str, str], ...]:
    """(path, reason) for each rule a declaration breaks before any file is read.

    Rules: 1..``max_files`` entries; sources and targets simple relative paths; no target
    under ``.git``; no duplicate sources or targets.
    """
    problems: list[tuple[str, str]] = []
    if not specs:
        problems.append(("", "oracle declares no files"))
    if len(specs) > limits.max_files:
        problems.append(
            ("", f"oracle declares {len(specs)} files, more than the limit of {limits.max_files}")
        )
    seen_sources: set[str] = set()
    seen_targets: set[str] = set()
    for spec in specs:
        for role, path in (("source", spec.source), ("target", spec.target)):
            reason = relative_path_problem(path)
            if reason:
                problems.append((path, f"oracle {role}: {reason}"))
        if spec.target == ".git" or spec.target.startswith(".git/"):
            problems.append((spec.target, "oracle target may not be under .git"))
        if spec.source in seen_sources:
            problems.append((spec.source, "duplicate oracle source"))
        if spec.target in seen_targets:
            problems.append((spec.target, "duplicate oracle target"))
        seen_sources.add(spec.source)
        seen_targets.add(spec.target)
    return tuple(problems)


class CaseOutcome(enum.StrEnum):
    """How one test case of an oracle's report ended."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"


@attrs.frozen
class ReportedCase:
    """One test case of an oracle's JUnit report: ``<classname>::<name>`` and its outcome."""

    id: str
    outcome: CaseOutcome

    def matches(self, expected: str) -> bool:
        """True for ``<classname>::<name>``, or for a bare ``<name>`` when ``expected`` has no ``::``."""
        return self.id == expected or ("::" not in expected and self.id.rpartition("::")[2] == expected)


@attrs.frozen
class OracleVerdict:
    """Whether the hidden oracle passed, on what evidence, and (when it did not) why."""

    passed: bool
    #: ``junit`` (a harness-owned report, test ids counted) or ``exit-code`` (the status alone).
    evidence: str
    detail: str | None = None


def _counts(cases: Sequence[ReportedCase]) -> str:
    found: dict[str, int] = {}
    for case in cases:
        found[case.outcome.value] = found.get(case.outcome.value, 0) + 1
    return ", ".join(f"{number} {outcome}" for outcome, number in sorted(found.items()))


def oracle_verdict(
    *,
    exit_ok: bool,
    returncode: int | None,
    report: Sequence[ReportedCase] | None,
    report_problem: str | None = None,
    require_report: bool = False,
    expect: Sequence[str] = (),
) -> OracleVerdict:
    """The oracle's verdict (``docs/security.md``, "Oracle verdicts").

    Without ``require_report`` the exit status decides. With it, the oracle passes only when it
    exited 0 **and** the harness-owned report exists, holds at least one case, every case passed
    (a skip is not a pass) and every ``expect``ed id is among them: an exit status without a
    matching report is refused. The detail gives counts, never a test id (the hidden tests'
    names stay out of rows).
    """
    if not require_report:
        return OracleVerdict(exit_ok, "exit-code", None if exit_ok else f"the oracle exited {returncode}")
    if report is None:
        why = report_problem or "no report was written"
        status = "exited 0" if exit_ok else f"exited {returncode}"
        return OracleVerdict(False, "junit", f"the oracle {status} without a valid JUnit report ({why})")
    if not exit_ok:
        return OracleVerdict(False, "junit", f"the oracle exited {returncode}")
    if not report:
        return OracleVerdict(False, "junit", "the JUnit report holds no test case")
    bad = [case for case in report if case.outcome is not CaseOutcome.PASSED]
    if bad:
        detail = f"{len(bad)} of {len(report)} test case(s) did not pass ({_counts(bad)})"
        return OracleVerdict(False, "junit", detail)
    missing = [want for want in expect if not any(case.matches(want) for case in report)]
    if missing:
        detail = f"{len(missing)} of {len(expect)} expected test case(s) missing from the report"
        return OracleVerdict(False, "junit", detail)
    return OracleVerdict(True, "junit")
