"""The bad-input matrix through the real ``wfbench`` command (a subprocess per malformed input).

Every case in :data:`tests.cli.bad_input_cases.CASES` must exit 2 with exactly one
``wfbench: error:`` line naming the file, the id or line, and the field, print no traceback,
create nothing but what the case allows, and never reach the model: every case gets its own
loopback sentinel as ``--base-url`` (``wfbench run`` uses it) that counts connections: none allowed.

The commands run concurrently (they are independent processes) in one module fixture; each
parametrized test then checks one outcome. ``python -m tests.cli.test_bad_input_matrix --table``
prints the Markdown table of ``docs/reliability.md``.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs
import pytest

from tests.cli.bad_input_cases import CASES, CORPUS, OUT, RESULTS, Case, Env, corpus, run_with

WFBENCH = (sys.executable, "-m", "wfbench")
ROOT = Path(__file__).resolve().parents[2]
API_KEY = "wfbench-matrix-key-7f3a9c51"
ERROR_PREFIX = "wfbench: error: "
#: stderr lines that are not errors: the host-unsafe backend's warning.
NOTICES = ("sandbox.host_unsafe",)
PARALLEL = 4
TIMEOUT_S = 120


class Sentinel:
    """A loopback TCP listener that counts connections and closes each at once (a dead model)."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        """Stop listening."""
        self._stop.set()
        self._thread.join()
        self._sock.close()


@attrs.frozen
class Outcome:
    """What one command did: exit code, output, and the files it created or changed."""

    returncode: int
    stdout: str
    stderr: str
    touched: tuple[str, ...]
    #: Connections the case's model endpoint (a :class:`Sentinel`) received.
    connections: int = 0

    @property
    def error_lines(self) -> list[str]:
        """stderr lines that start with ``wfbench: error:``."""
        return [line for line in self.stderr.splitlines() if line.startswith(ERROR_PREFIX)]

    @property
    def message(self) -> str:
        """The one error message (without the prefix), or "" when there is not exactly one."""
        lines = self.error_lines
        return lines[0][len(ERROR_PREFIX) :] if len(lines) == 1 else ""


def one_line_error_problems(outcome: Outcome) -> list[str]:
    """Why ``outcome`` is not a single clean error line (empty when it is)."""
    problems = []
    if outcome.returncode != 2:
        problems.append(f"exit code {outcome.returncode}, not 2")
    if "Traceback" in outcome.stderr or "Traceback" in outcome.stdout:
        problems.append("a traceback was printed")
    if len(outcome.error_lines) != 1:
        problems.append(f"{len(outcome.error_lines)} `wfbench: error:` lines, not 1")
    other = [
        line
        for line in outcome.stderr.splitlines()
        if line.strip() and not line.startswith(ERROR_PREFIX) and not any(n in line for n in NOTICES)
    ]
    if other:
        problems.append(f"other stderr lines: {other[:3]}")
    return problems


def tree(root: Path) -> dict[str, str]:
    """Every path under ``root`` → the sha256 of its content ("dir" or "link" otherwise)."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[rel] = "link"
            elif path.is_dir():
                found[rel] = "dir"
            else:
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def changes(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[str, ...]:
    """Paths created, changed or removed between two :func:`tree` snapshots."""
    return tuple(sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p)))


def _case_env() -> dict[str, str]:
    """The caller's environment with the case's key, and without ``CI``.

    The run cases use ``--sandbox host-unsafe`` so they need no bubblewrap; that backend is
    refused whenever ``CI`` is set (a test of its own pins that), which would hide the input
    error under test behind the sandbox refusal.
    """
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    return env | {"WFBENCH_ANTHROPIC_API_KEY": API_KEY}


def run_case(case: Case, directory: Path, repo: str) -> Outcome:
    """Write the case's input under ``directory`` and run its ``wfbench`` command there.

    The case's model endpoint is its own :class:`Sentinel`, so a session is pinned to its case.
    """
    directory.mkdir(parents=True, exist_ok=True)
    sentinel = Sentinel()
    try:
        argv = case.build(directory, Env(repo=repo, base_url=sentinel.url))
        before = tree(directory)
        done = subprocess.run(
            [*WFBENCH, *argv],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            env=_case_env(),
            check=False,
        )
    finally:
        sentinel.close()
    touched = changes(before, tree(directory))
    return Outcome(done.returncode, done.stdout, done.stderr, touched, sentinel.connections)


def make_repo(path: Path) -> str:
    """A git repository with one commit on ``main``; returns its path."""
    path.mkdir(parents=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(path)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (path / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    return str(path)


def run_all(cases: tuple[Case, ...], root: Path, repo: str) -> dict[str, Outcome]:
    """Run every case concurrently; each in its own directory under ``root``."""
    with ThreadPoolExecutor(PARALLEL) as pool:
        futures = {case.id: pool.submit(run_case, case, root / case.id, repo) for case in cases}
        return {case_id: future.result() for case_id, future in futures.items()}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every case's outcome."""
    root = tmp_path_factory.mktemp("bad-input")
    return run_all(CASES, root, make_repo(root / "_repo"))


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_malformed_input_exits_2_with_one_line_naming_file_locator_and_field(
    case: Case, outcomes: dict[str, Outcome]
) -> None:
    """One `wfbench: error:` line naming file, id/line and field; exit 2; no traceback."""
    outcome = outcomes[case.id]
    assert one_line_error_problems(outcome) == [], outcome.stderr
    missing = [name for name in case.names if name not in outcome.message]
    assert missing == [], f"{outcome.message!r} does not name {missing}"


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_malformed_input_creates_nothing_and_starts_no_session(
    case: Case, outcomes: dict[str, Outcome]
) -> None:
    """Only the allowed files appear (never results.jsonl or transcripts); the model gets no request."""
    outcome = outcomes[case.id]
    assert set(outcome.touched) <= set(case.may_create), outcome.touched
    assert outcome.connections == 0


def test_the_session_checks_see_a_session_when_the_input_is_valid(tmp_path: Path) -> None:
    """Negative control: a valid corpus reaches the sentinel and writes rows and transcripts."""
    case = Case("valid", "run", "a valid corpus", run_with(corpus, "--arms", "baseline"), ())
    outcome = run_case(case, tmp_path / "valid", make_repo(tmp_path / "_repo"))
    assert outcome.connections >= 1, outcome.stderr
    assert f"{OUT}/{RESULTS}" in outcome.touched
    assert any(path.startswith(f"{OUT}/cells/") and "/transcripts/" in path for path in outcome.touched)
    assert one_line_error_problems(outcome) != []


def test_the_error_line_check_refuses_a_traceback_and_a_second_line() -> None:
    """Negative control: a traceback, two error lines or exit 1 are reported as problems."""
    traceback = Outcome(1, "", "Traceback (most recent call last):\nValueError: x\n", ())
    twice = Outcome(2, "", f"{ERROR_PREFIX}a\n{ERROR_PREFIX}b\n", ())
    assert len(one_line_error_problems(traceback)) == 4
    assert one_line_error_problems(twice) == ["2 `wfbench: error:` lines, not 1"]
    assert one_line_error_problems(Outcome(2, "", f"{ERROR_PREFIX}{CORPUS}: t1: id: bad\n", ())) == []


def test_an_empty_results_file_is_not_bad_input_and_gates_nothing(tmp_path: Path) -> None:
    """An empty results.jsonl has no rows to gate: exit 0, says so, writes no promotion.json."""
    (tmp_path / RESULTS).write_bytes(b"")
    done = subprocess.run(
        [*WFBENCH, "gate", RESULTS], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert "nothing to gate" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == [RESULTS]


def test_every_case_is_listed_in_the_reliability_doc() -> None:
    """docs/reliability.md's Bad input table has a row for every case id."""
    doc = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    assert [case.id for case in CASES if f"`{case.id}`" not in doc] == []


def markdown_table() -> str:
    """Run every case and render the Bad input table (paths shown relative to the case directory)."""
    lines = [
        "| case | input | command | message (`wfbench: error: …`) | exit |",
        "| --- | --- | --- | --- | --- |",
    ]
    with tempfile.TemporaryDirectory(prefix="wfbench-bad-input-") as tmp:
        root = Path(tmp)
        repo = make_repo(root / "_repo")
        results = run_all(CASES, root, repo)
        for case in CASES:
            found = results[case.id]
            shown = found.message or found.stderr.strip().splitlines()[-1]
            shown = shown.replace(str(root / case.id) + "/", "").replace(repo, "REPO").replace("|", "\\|")
            lines.append(
                f"| `{case.id}` | {case.what} | `wfbench {case.command}` | {shown} | {found.returncode} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["--table"]:
        sys.stdout.write(markdown_table())
    else:
        sys.exit("usage: python -m tests.cli.test_bad_input_matrix --table")
