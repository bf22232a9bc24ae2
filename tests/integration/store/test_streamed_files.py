"""Files written piece by piece on a real directory: whole, all at once, or not at all (#18)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from wfbench.adapters.store.streamed_files import write_texts_atomic


def _pieces(*texts: str) -> Iterator[str]:
    yield from texts


def _failing(*texts: str) -> Iterator[str]:
    yield from texts
    raise RuntimeError("renderer bug")


def test_each_file_holds_its_pieces_joined_byte_for_byte(tmp_path: Path) -> None:
    """UTF-8, no newline translation, pieces of any size (one larger than the write buffer)."""
    big = "x" * (3 << 20)
    texts = ("# title\r\n", "ünïcode — ≥ ", "", big, "\n\n")
    md, html = tmp_path / "report.md", tmp_path / "report.html"

    write_texts_atomic([(md, _pieces(*texts)), (html, iter(["<p>", "ok</p>\n"]))])

    assert md.read_bytes() == "".join(texts).encode("utf-8")
    assert html.read_bytes() == b"<p>ok</p>\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.md"]
    assert (md.stat().st_mode & 0o777) == 0o644


def test_a_failure_in_the_second_file_leaves_both_old_files_and_no_temp_file(tmp_path: Path) -> None:
    """The first file is whole on disk by then, but nothing is renamed until every file is."""
    md, html = tmp_path / "report.md", tmp_path / "report.html"
    md.write_text("old md\n")
    html.write_text("old html\n")

    with pytest.raises(RuntimeError, match="renderer bug"):
        write_texts_atomic([(md, _pieces("new md\n")), (html, _failing("<p>half"))])

    assert md.read_text() == "old md\n"
    assert html.read_text() == "old html\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.md"]


def test_a_failure_in_the_first_file_creates_nothing(tmp_path: Path) -> None:
    """Positive control of the cleanup: the temp file existed (a piece was written) and is gone."""
    seen: list[list[str]] = []

    def watching() -> Iterator[str]:
        yield "a" * 100
        seen.append(sorted(p.name for p in tmp_path.iterdir()))
        raise RuntimeError("renderer bug")

    with pytest.raises(RuntimeError):
        write_texts_atomic([(tmp_path / "report.md", watching()), (tmp_path / "report.html", _pieces("x"))])

    (staged,) = seen[0]
    assert staged.startswith(".report.md.")
    assert staged.endswith(".tmp")
    assert list(tmp_path.iterdir()) == []


def test_text_that_is_not_utf8_encodable_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    """A lone surrogate fails as ``str.encode`` would; no file appears."""
    with pytest.raises(UnicodeEncodeError):
        write_texts_atomic([(tmp_path / "report.md", _pieces("ok", "\ud800"))])

    assert list(tmp_path.iterdir()) == []
