"""Oracle declaration rules and digests pinned exactly.

Kills surviving mutants of wfbench.domain.workspace.oracle.
"""

from __future__ import annotations

import hashlib

from wfbench.domain.workspace.oracle import (
    OracleBundle,
    OracleFile,
    OracleFileSpec,
    OracleLimits,
    declaration_problems,
)


def _frames(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


def test_the_bundle_digest_is_sha256_over_8_byte_big_endian_length_frames():
    """H is the documented framing: an 8-byte big-endian length, then the bytes, per part."""
    bundle = OracleBundle((OracleFile.of("t.py", b"payload"),))
    assert bundle.digest("cmd") == _frames(b"cmd", b"t.py", b"payload")


def test_the_bundle_digest_without_a_command_frames_an_empty_command():
    """The default command is the empty string (one empty frame), not absent."""
    bundle = OracleBundle((OracleFile.of("t.py", b"x"),))
    assert bundle.digest() == _frames(b"", b"t.py", b"x") == bundle.digest("")


def test_the_manifest_digest_frames_target_hash_and_decimal_size():
    """The manifest covers (target, sha256 hex, decimal size) of each file."""
    item = OracleFile.of("t.py", b"abc")
    want = _frames(b"t.py", hashlib.sha256(b"abc").hexdigest().encode(), b"3")
    assert OracleBundle((item,)).manifest_digest == want


def test_exactly_the_file_limit_is_allowed_and_one_more_is_refused_with_the_count():
    """max_files entries pass; max_files + 1 is one problem with an empty path and both numbers."""
    limits = OracleLimits(max_files=2)
    two = [OracleFileSpec(f"s{i}", f"t{i}") for i in range(2)]
    assert declaration_problems(two, limits) == ()
    three = [*two, OracleFileSpec("s2", "t2")]
    assert declaration_problems(three, limits) == (("", "oracle declares 3 files, more than the limit of 2"),)


def test_an_unsafe_source_and_an_unsafe_target_name_their_role():
    """The reason says whether the source or the target is the unsafe path."""
    assert declaration_problems([OracleFileSpec("../s", "/abs")], OracleLimits()) == (
        ("../s", "oracle source: path has an empty, '.' or '..' component"),
        ("/abs", "oracle target: path is absolute"),
    )


def test_a_target_named_git_itself_is_refused_and_a_look_alike_is_not():
    """``.git`` and paths below it are refused; ``.github`` is an ordinary directory."""
    assert declaration_problems([OracleFileSpec("s", ".git")], OracleLimits()) == (
        (".git", "oracle target may not be under .git"),
    )
    assert declaration_problems([OracleFileSpec("s", ".github/x")], OracleLimits()) == ()
