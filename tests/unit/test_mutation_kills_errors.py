"""InputError.located pinned (kills surviving mutants of wfbench.domain.errors)."""

from __future__ import annotations

from wfbench.domain.errors import InputError


def test_locating_an_error_keeps_its_field_and_reason():
    """Adding the file and line never loses the field the message names."""
    located = InputError("must be true or false", field="ok").located(source="r.jsonl", locator="line 3")
    assert (located.source, located.locator, located.field) == ("r.jsonl", "line 3", "ok")
    assert located.message == "r.jsonl: line 3: ok: must be true or false"


def test_locating_with_only_a_locator_leaves_the_source_empty_and_vice_versa():
    """An omitted part stays empty (not a placeholder) and is left out of the message."""
    only_line = InputError("bad").located(locator="line 2")
    assert (only_line.source, only_line.message) == ("", "line 2: bad")
    only_file = InputError("bad").located(source="f.json")
    assert (only_file.locator, only_file.message) == ("", "f.json: bad")


def test_locating_keeps_what_is_already_set():
    """A source and locator already set win over the ones offered later."""
    first = InputError("bad", source="a", locator="line 1").located(source="b", locator="line 9")
    assert (first.source, first.locator) == ("a", "line 1")


def test_a_refused_sweep_directory_names_the_cause_the_file_and_the_way_on():
    """The storage failure's one line: what the disk said, which file, that rows are whole, how to go on."""
    import errno

    from wfbench.domain.errors import STORAGE_ERRNOS, SweepStorageError

    error = SweepStorageError.of(OSError(errno.ENOSPC, "No space left on device", "/out/report.md"))
    assert (error.reason, error.path, error.errno, error.exit_code) == (
        "No space left on device",
        "/out/report.md",
        errno.ENOSPC,
        1,
    )
    assert str(error).startswith(
        "No space left on device (/out/report.md): the sweep directory cannot be written"
    )
    assert str(error).endswith("(free space, then continue with --resume DIR)")
    assert str(SweepStorageError("Read-only file system")).startswith("Read-only file system: the sweep")
    named = SweepStorageError.of(OSError(errno.EROFS, "Read-only file system", "/a"), path="/b")
    assert named.path == "/b"
    assert {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO} == STORAGE_ERRNOS
