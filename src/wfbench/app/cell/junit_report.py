"""Read an oracle's JUnit XML report (pytest ``--junitxml``) from the harness-owned report directory.

The file was written by the oracle command, which runs the agent's code: it is read like any
agent-influenced input — a regular, non-symlink file (``O_NOFOLLOW``, ``O_NONBLOCK``, no FIFO),
at most :data:`MAX_REPORT_BYTES`, parsed by the standard library's expat-based ``ElementTree``
(it resolves no external entity; expat ≥ 2.4 refuses entity-expansion bombs). No extra XML
dependency is needed for that.
"""

from __future__ import annotations

import os
import stat
import xml.etree.ElementTree as ET

from wfbench.domain.workspace.oracle import CaseOutcome, ReportedCase

#: Largest report read.
MAX_REPORT_BYTES = 8 * 1024 * 1024
#: Test cases read from one report.
MAX_CASES = 100_000
REPORT_NAME = "junit.xml"


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("the report is not a regular file")
        data = os.read(fd, MAX_REPORT_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_REPORT_BYTES:
        raise ValueError(f"the report is over {MAX_REPORT_BYTES} bytes")
    return data


def _outcome(case: ET.Element) -> CaseOutcome:
    tags = {child.tag for child in case}
    if "error" in tags:
        return CaseOutcome.ERROR
    if "failure" in tags:
        return CaseOutcome.FAILED
    if "skipped" in tags:
        return CaseOutcome.SKIPPED
    return CaseOutcome.PASSED


def read_report(directory: str) -> tuple[tuple[ReportedCase, ...] | None, str | None]:
    """The cases of ``<directory>/junit.xml``, or (None, why it cannot be used)."""
    path = os.path.join(directory, REPORT_NAME)
    try:
        data = _read(path)
    except FileNotFoundError:
        return None, "no report was written"
    except (OSError, ValueError) as exc:
        return None, str(exc) if isinstance(exc, ValueError) else f"unreadable report: {exc.strerror}"
    try:
        root = ET.fromstring(data)  # noqa: S314 - see the module docstring
    except ET.ParseError as exc:
        return None, f"the report is not well-formed XML ({exc})"
    if root.tag not in ("testsuites", "testsuite"):
        return None, f"the report's root element is <{root.tag[:40]}>, not <testsuites>/<testsuite>"
    cases: list[ReportedCase] = []
    for case in root.iter("testcase"):
        if len(cases) >= MAX_CASES:
            return None, f"the report holds more than {MAX_CASES} test cases"
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        cases.append(ReportedCase(name, _outcome(case)))
    return tuple(cases), None
