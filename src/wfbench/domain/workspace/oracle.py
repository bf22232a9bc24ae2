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


def junit_id(expected: str) -> str:
    """``expected`` as a JUnit ``<classname>::<name>``: a pytest node id is translated, else unchanged.

    pytest's ``--junitxml`` writes ``tests/test_x.py::TestC::test_y[p]`` as classname
    ``tests.test_x.TestC`` and name ``test_y[p]`` (the path's slashes become dots, ``.py`` goes).
    """
    path, sep, rest = expected.partition(".py::")
    if not sep or "[" in path:
        return expected
    head, bracket, params = rest.partition("[")
    names = head.split("::")
    names[-1] += bracket + params
    classname = ".".join([path.replace("/", "."), *names[:-1]])
    return f"{classname}::{names[-1]}"


@attrs.frozen
class ReportedCase:
    """One test case of an oracle's JUnit report: ``<classname>::<name>`` and its outcome."""

    id: str
    outcome: CaseOutcome

    def matches(self, expected: str) -> bool:
        """True for ``<classname>::<name>`` (or the pytest node id of it), or for a bare ``<name>``."""
        if "::" not in expected:  # a JUnit classname is dotted: the first "::" ends it
            return self.id.partition("::")[2] == expected
        return self.id in (expected, junit_id(expected))


class OracleOutcome(enum.StrEnum):
    """Why the oracle passed or failed: for the task's author (rows, report, ``tasks validate``)."""

    PASSED = "passed"
    TESTS_FAILED = "tests-failed"
    EXPECTED_MISSING = "expected-ids-missing"
    PATCH_NOT_APPLIED = "test-patch-did-not-apply"
    TIMED_OUT = "timed-out"
    CANARY_TRIPPED = "canary-tripped"
    NO_REPORT = "no-report"
    EXIT_STATUS = "exit-status"
    REWARD_LOW = "reward-not-above-threshold"


#: The exit status the SWE-bench oracle runner gives when the test patch does not apply.
PATCH_NOT_APPLIED_STATUS = 97


@attrs.frozen
class Canaries:
    """The two harness canaries of one oracle run (bare test names, unguessable, one pair per cell)."""

    #: Must pass: it only imports the package under test.
    holds: str
    #: Must fail: it asserts something false.
    trips: str

    @property
    def names(self) -> tuple[str, str]:
        """Both names."""
        return (self.holds, self.trips)


@attrs.frozen
class OracleVerdict:
    """Whether the hidden oracle passed, on what evidence, and (when it did not) why."""

    passed: bool
    #: ``junit`` (a harness-owned report, test ids counted) or ``exit-code`` (the status alone).
    evidence: str
    detail: str | None = None
    outcome: OracleOutcome | None = None
    #: Expected ids that did not pass or were missing: for the author, never in ``detail``.
    failing_ids: tuple[str, ...] = ()
    #: ``report: reward``: the reward the verifier wrote (kept as the row's ``oracle_reward``).
    reward: float | None = None


def _counts(cases: Sequence[ReportedCase]) -> str:
    found: dict[str, int] = {}
    for case in cases:
        found[case.outcome.value] = found.get(case.outcome.value, 0) + 1
    return ", ".join(f"{number} {outcome}" for outcome, number in sorted(found.items()))


def _failed(detail: str, outcome: OracleOutcome, ids: Sequence[str] = ()) -> OracleVerdict:
    return OracleVerdict(False, "junit", detail, outcome, tuple(ids))


def _canary_problem(report: Sequence[ReportedCase], canaries: Canaries, others_bad: bool) -> str | None:
    """Why the canaries say the verdict is forged or broken, or None when they behaved."""
    trips = [case for case in report if case.matches(canaries.trips)]
    holds = [case for case in report if case.matches(canaries.holds)]
    if not trips or not holds:
        return "a harness canary did not run (the oracle must run the canary staged beside its tests)"
    if any(case.outcome is not CaseOutcome.FAILED for case in trips):
        return f"the must-fail canary {canaries.trips} did not fail ({_counts(trips)})"
    if not others_bad and any(case.outcome is not CaseOutcome.PASSED for case in holds):
        return f"the must-pass canary {canaries.holds} did not pass ({_counts(holds)})"
    return None


def _report_verdict(
    exit_ok: bool,
    returncode: int | None,
    report: Sequence[ReportedCase],
    expect: Sequence[str],
    canaries: Canaries | None,
) -> OracleVerdict:
    if not report:
        return _failed("the JUnit report holds no test case", OracleOutcome.NO_REPORT)
    names = canaries.names if canaries is not None else ()
    cases = [case for case in report if not any(case.matches(name) for name in names)]
    bad = [case for case in cases if case.outcome is not CaseOutcome.PASSED]
    failing = [want for want in expect if any(c.matches(want) for c in bad)]
    missing = [want for want in expect if not any(c.matches(want) for c in cases)]
    if canaries is not None:
        problem = _canary_problem(report, canaries, bool(bad) or not cases)
        if problem is not None:
            return _failed(problem, OracleOutcome.CANARY_TRIPPED, failing + missing)
        if exit_ok:
            detail = "the oracle exited 0 although the must-fail canary failed (a forged exit status)"
            return _failed(detail, OracleOutcome.CANARY_TRIPPED, failing + missing)
    if returncode != (1 if canaries is not None else 0):
        return _failed(f"the oracle exited {returncode}", _outcome_of(bad, missing), failing + missing)
    if not cases:
        return _failed("the JUnit report holds no test case but the canaries", OracleOutcome.NO_REPORT)
    if bad:
        detail = f"{len(bad)} of {len(cases)} test case(s) did not pass ({_counts(bad)})"
        return _failed(detail, OracleOutcome.TESTS_FAILED, failing + missing)
    if missing:
        detail = f"{len(missing)} of {len(expect)} expected test case(s) missing from the report"
        return _failed(detail, OracleOutcome.EXPECTED_MISSING, missing)
    return OracleVerdict(True, "junit", None, OracleOutcome.PASSED)


def _outcome_of(bad: Sequence[ReportedCase], missing: Sequence[str]) -> OracleOutcome:
    if bad:
        return OracleOutcome.TESTS_FAILED
    return OracleOutcome.EXPECTED_MISSING if missing else OracleOutcome.EXIT_STATUS


def oracle_verdict(
    *,
    exit_ok: bool,
    returncode: int | None,
    report: Sequence[ReportedCase] | None,
    report_problem: str | None = None,
    require_report: bool = False,
    expect: Sequence[str] = (),
    canaries: Canaries | None = None,
) -> OracleVerdict:
    """The oracle's verdict (``docs/security.md``, "Oracle verdicts").

    Without ``require_report`` the exit status decides. With it, the oracle passes only when the
    harness-owned report exists, holds at least one case, every case passed (a skip is not a
    pass), every ``expect``ed id is among them, and the exit status is the one an honest run
    gives: 0, or — with ``canaries`` — 1, because the must-fail canary fails; the must-fail
    canary must be reported failed and the must-pass one passed, else the verdict is forged or
    broken (``canary-tripped``). An exit status without a matching report is refused. The detail
    gives counts, never a hidden test id (the ids go to ``failing_ids``, for the author).
    """
    if not require_report:
        if exit_ok:
            return OracleVerdict(True, "exit-code", None, OracleOutcome.PASSED)
        return OracleVerdict(False, "exit-code", f"the oracle exited {returncode}", OracleOutcome.EXIT_STATUS)
    if report is None:
        why = report_problem or "no report was written"
        if returncode == PATCH_NOT_APPLIED_STATUS:
            return _failed("the test patch did not apply", OracleOutcome.PATCH_NOT_APPLIED)
        status = "exited 0" if exit_ok else f"exited {returncode}"
        detail = f"the oracle {status} without a valid JUnit report ({why})"
        return _failed(detail, OracleOutcome.NO_REPORT)
    return _report_verdict(exit_ok, returncode, report, expect, canaries)


def parse_reward(text: bytes | None, data: bytes | None) -> tuple[float | None, str | None]:
    """The reward of a Harbor verifier's ``reward.txt`` (one number) or ``reward.json``; (reward, problem).

    ``reward.txt`` wins when both exist. ``reward.json`` is an object of numbers: its ``reward`` key,
    or its only key. A missing, empty, non-numeric or non-finite reward is a problem, never 0.
    """
    import json
    import math

    if text is not None:
        try:
            value = float(text.decode("ascii").strip())
        except (UnicodeDecodeError, ValueError):
            return None, "reward.txt does not hold one number"
        return (value, None) if math.isfinite(value) else (None, "reward.txt holds a non-finite number")
    if data is None:
        return None, "no reward.txt or reward.json was written"
    try:
        raw = json.loads(data)
    except ValueError:
        return None, "reward.json is not JSON"
    if not isinstance(raw, dict) or not raw:
        return None, "reward.json is not an object of rewards"
    key = "reward" if "reward" in raw else (next(iter(raw)) if len(raw) == 1 else None)
    found = raw.get(key) if key is not None else None
    if isinstance(found, bool) or not isinstance(found, int | float) or not math.isfinite(found):
        return None, "reward.json has no numeric `reward` (nor a single numeric key)"
    return float(found), None


def reward_verdict(
    *, exit_ok: bool, returncode: int | None, reward: float | None, problem: str | None, above: float
) -> OracleVerdict:
    """A reward oracle's verdict: test.sh exited 0 **and** wrote a reward above ``above``.

    The reward is kept (``reward``) whatever the verdict, so a non-binary reward reaches the row.
    """
    if reward is None:
        status = "exited 0" if exit_ok else f"exited {returncode}"
        return OracleVerdict(
            False, "reward", f"the verifier {status} without a reward ({problem})", OracleOutcome.NO_REPORT
        )
    if not exit_ok:
        detail = f"the verifier exited {returncode}"
        return OracleVerdict(False, "reward", detail, OracleOutcome.EXIT_STATUS, reward=reward)
    if not reward > above:
        detail = f"the reward {reward:g} is not above {above:g}"
        return OracleVerdict(False, "reward", detail, OracleOutcome.REWARD_LOW, reward=reward)
    return OracleVerdict(True, "reward", None, OracleOutcome.PASSED, reward=reward)
