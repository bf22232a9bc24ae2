"""The session's own temporary directory, and the rule that no test leaves a wfbench temp dir in it.

The session runs with ``TMPDIR`` (inherited by every subprocess) and ``tempfile.tempdir`` (the
code the tests run in-process) pointed at a private directory beside pytest's own tree, so a test
run adds nothing to ``/tmp`` and another run on the same machine cannot be mistaken for this one.
After each test, the entries it added there are noted with its id; one of wfbench's (``wfbench-*``,
``swebench-oracle-*``) still there when the session ends, after every fixture's teardown, is a
leak and fails the session, naming the test that made it. The directory is removed either way.

A test that kills a process on purpose runs it with :func:`scratch_env` (``TMPDIR`` in a directory
the test removes), because a killed process cannot remove its own temporary directories.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

#: Prefixes of the temporary directories wfbench itself makes (grep ``mkdtemp``/``TemporaryDirectory``).
PRODUCT_PREFIXES = ("wfbench-", "swebench-oracle-")


@contextlib.contextmanager
def scratch_env() -> Iterator[dict[str, str]]:
    """``os.environ`` with ``TMPDIR`` in a fresh directory that is removed afterwards, with what a
    killed process left in it."""
    with tempfile.TemporaryDirectory(prefix="killed-", ignore_cleanup_errors=True) as scratch:
        yield {**os.environ, "TMPDIR": scratch}
        _make_removable(scratch)


def _make_removable(root: str) -> None:
    """Owner write and search bits back on every directory (a tree a command left read-only)."""
    for dirpath, dirnames, _files in os.walk(root):
        for name in dirnames:
            with contextlib.suppress(OSError):
                path = os.path.join(dirpath, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o700)


class SessionTmp:
    """The session's temporary directory and, for each entry a test added to it, that test's id."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.made_by: dict[str, str] = {}

    def leaks(self) -> list[str]:
        """wfbench's entries still in the directory, each with the test that made it."""
        left = sorted(name for name in _listing(self.root) if name.startswith(PRODUCT_PREFIXES))
        return [f"{name} (left by {self.made_by.get(name, 'an unknown test')})" for name in left]


@pytest.fixture(scope="session", autouse=True)
def session_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SessionTmp]:
    """TMPDIR for the whole session, removed at its end; a leak of wfbench's fails the session."""
    tmp_path_factory.getbasetemp()  # pytest's own tree stays in the system's temporary directory
    saved = os.environ.get("TMPDIR"), tempfile.tempdir
    # Short (/tmp/wfbt-xxxxxxxx): UNIX socket paths made under it must stay within 107 bytes.
    session = SessionTmp(tempfile.mkdtemp(prefix="wfbt-"))
    os.environ["TMPDIR"] = tempfile.tempdir = session.root
    try:
        yield session
    finally:
        tempfile.tempdir = saved[1]
        if saved[0] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved[0]
        leaks = session.leaks()
        _make_removable(session.root)
        shutil.rmtree(session.root, ignore_errors=True)
    if leaks:
        pytest.fail("tests left temporary directories behind:\n  " + "\n  ".join(leaks), pytrace=False)


@pytest.fixture(autouse=True)
def _note_new_temp_entries(session_tmp: SessionTmp, request: pytest.FixtureRequest) -> Iterator[None]:
    """Remember which test made each new entry of the session's TMPDIR (for the leak message)."""
    before = set(_listing(session_tmp.root))
    yield
    for name in set(_listing(session_tmp.root)) - before:
        session_tmp.made_by.setdefault(name, request.node.nodeid)


def _listing(root: str) -> list[str]:
    try:
        return os.listdir(root)
    except OSError:
        return []
