"""The file sweep directory (adapters/store/sweep_files.py): a directory that refuses writes is named so."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from wfbench.adapters.store import sweep_files
from wfbench.domain.errors import SweepStorageError


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO])
def test_a_directory_that_refuses_writes_raises_the_sweeps_storage_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    def refused(path: str, data: bytes) -> None:
        raise OSError(code, "refused", path)

    monkeypatch.setattr(sweep_files, "write_bytes_atomic", refused)
    with pytest.raises(SweepStorageError) as raised:
        sweep_files.FileSweepDirectory(str(tmp_path)).write("report.md", b"x")
    assert raised.value.errno == code
    assert raised.value.path == str(tmp_path / "report.md")


def test_any_other_write_failure_stays_an_os_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(path: str, data: bytes) -> None:
        raise PermissionError(errno.EACCES, "denied", path)

    monkeypatch.setattr(sweep_files, "write_bytes_atomic", denied)
    with pytest.raises(PermissionError):
        sweep_files.FileSweepDirectory(str(tmp_path)).write("report.md", b"x")
