"""The hidden oracle of an imported SWE-bench instance (standard library only; run by the task's Python).

``python swebench_oracle.py ORACLE_ROOT``: copy the (read-only) workspace to a private directory,
apply ``ORACLE_ROOT/test.patch`` there, run exactly the ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` tests of
``ORACLE_ROOT/tests.json`` with pytest (``-rA``) and exit 0 only if every one passed (PASSED or
XFAIL, SWE-bench's rule). Only the verdict leaves the sandbox; the output is never persisted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

PASSING = ("PASSED", "XFAIL")


def statuses(output: str) -> dict[str, str]:
    """Test id -> status from pytest's ``-rA`` short summary (``STATUS id[ - reason]``)."""
    found = {}
    for line in output.splitlines():
        for status in ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS"):
            if line.startswith(status + " "):
                test = line[len(status) + 1 :].split(" - ", 1)[0].strip()
                found[test] = status
    return found


def main(argv: list[str]) -> int:
    root = argv[1]
    with open(os.path.join(root, "tests.json"), encoding="utf-8") as handle:
        tests = json.load(handle)
    wanted = list(tests["FAIL_TO_PASS"]) + list(tests["PASS_TO_PASS"])
    work = tempfile.mkdtemp(prefix="swebench-oracle-")
    copy = os.path.join(work, "workspace")
    shutil.copytree(os.getcwd(), copy, symlinks=True)
    applied = subprocess.run(
        [
            "git",
            "-c",
            "core.fsmonitor=false",
            "apply",
            "--whitespace=nowarn",
            os.path.join(root, "test.patch"),
        ],
        cwd=copy,
        check=False,
    )
    if applied.returncode != 0:
        print("the test patch does not apply", file=sys.stderr)
        return 1
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--tb=no", "-q", *wanted],
        cwd=copy,
        capture_output=True,
        text=True,
        check=False,
    )
    seen = statuses(done.stdout)
    missing = [t for t in wanted if seen.get(t) not in PASSING]
    print(f"{len(wanted) - len(missing)}/{len(wanted)} required tests passed")
    return 0 if not missing else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
