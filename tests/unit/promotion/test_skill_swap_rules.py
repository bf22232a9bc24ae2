"""The apply transaction's pure rules, one by one: paths, destinations, the journal's reader, recovery.

``wfbench promote apply`` refuses with one line naming what is wrong, and ``promote recover``
acts only on a journal it can read whole. These tests pin each refusal's exact text and field,
the normalisation of paths, the order of what is written, and the journal's JSON.
"""

from __future__ import annotations

from typing import Any

import pytest

from wfbench.domain.errors import InputError
from wfbench.domain.promotion.skill_swap import (
    ABSENT,
    CANONICAL_SKILLS_DIR,
    Direction,
    Journal,
    JournalState,
    Step,
    SwapEntry,
    base_digests,
    destinations,
    recovery_step,
    sha256_bytes,
    skill_roots,
    swap_conflicts,
)

PLAN = ".claude/skills/plan/SKILL.md"
OLD, NEW = sha256_bytes(b"old"), sha256_bytes(b"new")


def _refusal(call: Any) -> InputError:
    with pytest.raises(InputError) as caught:
        call()
    return caught.value


def test_the_names_the_transaction_records_are_stable() -> None:
    """The journal's words and the digest format are on disk: they must not drift."""
    assert (ABSENT, CANONICAL_SKILLS_DIR) == ("absent", ".claude/skills")
    assert [state.value for state in JournalState] == ["prepared", "committed", "rolling-back"]
    assert [d.value for d in Direction] == ["forward", "back"]
    assert [s.value for s in Step] == ["nothing", "install-new", "restore-base", "remove", "conflict"]
    assert sha256_bytes(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


# --------------------------------------------------------------------------- paths and destinations


def test_a_mirror_is_normalised_before_it_is_used() -> None:
    """Trailing slashes are dropped: `m/` writes `m/<skill>/…`, never `m//<skill>`."""
    assert destinations([(PLAN, b"p")], ["m/skills/"]) == ((PLAN, b"p"), ("m/skills/plan/SKILL.md", b"p"))
    assert skill_roots(["plan"], ["m/skills/"]) == (".claude/skills/plan", "m/skills/plan")
    assert skill_roots(["plan"]) == (".claude/skills/plan",)
    assert destinations([(".claude/skills/X/X", b"x")], ["XmX/"]) == (
        (".claude/skills/X/X", b"x"),
        ("XmX/X/X", b"x"),
    )


@pytest.mark.parametrize(
    ("mirror", "message"),
    [
        ("/etc/skills", "--mirror: must be a relative path inside the repository: '/etc/skills'"),
        ("", "--mirror: must be a relative path inside the repository: ''"),
        ("a/./b", "--mirror: must be a relative path inside the repository: 'a/./b'"),
        ("a/../b", "--mirror: must be a relative path inside the repository: 'a/../b'"),
        (".", "--mirror: must be a relative path inside the repository: '.'"),
        ("a/\x00b", "--mirror: must be a relative path inside the repository: 'a/\\x00b'"),
        ("/", "--mirror: must be a relative path inside the repository: '/'"),
        (".claude/skills", "--mirror: overlaps another skill location: .claude/skills"),
        (".claude", "--mirror: overlaps another skill location: .claude"),
        (".claude/skills/x", "--mirror: overlaps another skill location: .claude/skills/x"),
    ],
)
def test_each_bad_mirror_is_refused_with_its_reason(mirror: str, message: str) -> None:
    """Escaping, empty, dotted or overlapping mirrors: one message naming --mirror and the path."""
    assert _refusal(lambda: destinations([(PLAN, b"p")], [mirror])).message == message


def test_mirrors_overlap_only_along_whole_path_segments() -> None:
    """`a` and `a/b` overlap (either order); `a` and `ab` do not; nor do two siblings."""
    assert _refusal(lambda: destinations([(PLAN, b"p")], ["a", "a/b"])).message == (
        "--mirror: overlaps another skill location: a/b"
    )
    assert _refusal(lambda: destinations([(PLAN, b"p")], ["a/b", "a"])).message == (
        "--mirror: overlaps another skill location: a"
    )
    assert [dest for dest, _ in destinations([(PLAN, b"p")], ["a", "ab", "c/a"])] == [
        PLAN,
        "a/plan/SKILL.md",
        "ab/plan/SKILL.md",
        "c/a/plan/SKILL.md",
    ]
    assert _refusal(lambda: skill_roots(["plan"], ["../x"])).field == "--mirror"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("docs/x.md", "overlay: is not under .claude/skills/<skill>/: docs/x.md"),
        (".claude/skills/SKILL.md", "overlay: is not under .claude/skills/<skill>/: .claude/skills/SKILL.md"),
        (
            ".claude/skillsX/plan/a.md",
            "overlay: is not under .claude/skills/<skill>/: .claude/skillsX/plan/a.md",
        ),
        (
            ".claude/skills/plan/../a.md",
            "overlay: must be a relative path inside the repository: '.claude/skills/plan/../a.md'",
        ),
        (
            "/.claude/skills/plan/a.md",
            "overlay: must be a relative path inside the repository: '/.claude/skills/plan/a.md'",
        ),
    ],
)
def test_an_overlay_file_outside_a_skill_directory_is_refused_naming_it(path: str, message: str) -> None:
    """Only `.claude/skills/<skill>/<file>` has a destination; the refusal names the file."""
    assert _refusal(lambda: destinations([(path, b"x")])).message == message


def test_a_deep_file_keeps_its_path_under_the_skill_at_every_location() -> None:
    """`<skill>/refs/deep/a.md` is `<mirror>/<skill>/refs/deep/a.md`; a trailing slash is dropped."""
    assert destinations([(".claude/skills/plan/refs/deep/a.md/", b"d")], ["m"]) == (
        (".claude/skills/plan/refs/deep/a.md", b"d"),
        ("m/plan/refs/deep/a.md", b"d"),
    )


def test_two_overlay_files_for_one_destination_are_refused() -> None:
    """The same file twice (with different bytes) would make the result depend on order."""
    files = [(PLAN, b"1"), (PLAN + "/", b"2")]

    assert (
        _refusal(lambda: destinations(files)).message
        == "overlay: two overlay files map to the same destination"
    )
    assert (
        _refusal(
            lambda: destinations([("AGENTS.md", b"1"), ("AGENTS.md", b"2")], root_files={"AGENTS.md"})
        ).field
        == "overlay"
    )


def test_a_root_file_is_recognised_only_at_the_root() -> None:
    """`AGENTS.md/` is the root file; a root file beside skill files counts once, not per mirror."""
    assert destinations([("AGENTS.md/", b"a"), (PLAN, b"p")], ["m", "n"], root_files={"AGENTS.md"}) == (
        (PLAN, b"p"),
        ("AGENTS.md", b"a"),
        ("m/plan/SKILL.md", b"p"),
        ("n/plan/SKILL.md", b"p"),
    )


def test_base_digests_are_sorted_by_path_and_an_empty_file_is_not_absent() -> None:
    """The map a sweep records (its order is the evidence's order); b'' exists, None does not."""
    digests = base_digests({"b.md": b"", "a.md": None}, ["c.md", "a.md"])

    assert list(digests.items()) == [
        ("a.md", ABSENT),
        ("b.md", sha256_bytes(b"")),
        ("c.md", ABSENT),
    ]


def test_conflicts_are_listed_in_path_order_and_unbound_paths_are_ignored() -> None:
    """Only the recorded paths are compared; a path that is there now but was not bound is not a conflict."""
    expected = {"z.md": OLD, "a.md": OLD}

    assert swap_conflicts(expected, {"z.md": NEW, "a.md": NEW, "other.md": NEW}) == (
        "a.md changed since the evidence was recorded (compare-and-swap refused)",
        "z.md changed since the evidence was recorded (compare-and-swap refused)",
    )
    assert swap_conflicts({}, {"other.md": NEW}) == ()


# --------------------------------------------------------------------------- the journal


def _journal() -> Journal:
    entries = (SwapEntry(PLAN, OLD, NEW), SwapEntry("m/plan/SKILL.md", ABSENT, NEW))
    return Journal("tx-1", JournalState.COMMITTED, entries, created_dirs=("m", "m/plan"), message="promote x")


def test_the_journal_writes_this_json() -> None:
    """Schema, id, state, every entry's path and digests, the created directories, the message."""
    assert _journal().to_mapping() == {
        "schema": 1,
        "txid": "tx-1",
        "state": "committed",
        "entries": [
            {"path": PLAN, "base": OLD, "new": NEW},
            {"path": "m/plan/SKILL.md", "base": ABSENT, "new": NEW},
        ],
        "created_dirs": ["m", "m/plan"],
        "message": "promote x",
    }


def test_a_journal_without_directories_or_message_reads_back() -> None:
    """No created directory, no commit message, a removal (new is absent)."""
    journal = Journal("t", JournalState.ROLLING_BACK, (SwapEntry("a/b.md", OLD, ABSENT),))

    assert Journal.from_mapping(journal.to_mapping()) == journal
    assert Journal.from_mapping({**journal.to_mapping(), "entries": []}).entries == ()


def test_the_journal_reader_normalises_paths() -> None:
    """A trailing slash in an entry or a directory is dropped, as when the transaction was planned."""
    raw = _journal().to_mapping()
    raw["entries"][0]["path"] = PLAN + "/"
    raw["created_dirs"] = ["m/", "m/plan"]

    journal = Journal.from_mapping(raw)

    assert journal.entries[0].path == PLAN
    assert journal.created_dirs == ("m", "m/plan")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda raw: raw.update(schema=2), "journal: is not a wfbench apply journal (schema 1)"),
        (lambda raw: raw.pop("schema"), "journal: is not a wfbench apply journal (schema 1)"),
        (lambda raw: raw.update(txid=""), "journal: has no transaction id or a bad state"),
        (lambda raw: raw.update(txid=7), "journal: has no transaction id or a bad state"),
        (lambda raw: raw.pop("txid"), "journal: has no transaction id or a bad state"),
        (lambda raw: raw.update(state="done"), "journal: has no transaction id or a bad state"),
        (lambda raw: raw.pop("state"), "journal: has no transaction id or a bad state"),
        (lambda raw: raw.update(entries={}), "journal: must list entries and created_dirs"),
        (lambda raw: raw.pop("entries"), "journal: must list entries and created_dirs"),
        (lambda raw: raw.update(created_dirs="m"), "journal: must list entries and created_dirs"),
        (lambda raw: raw.pop("created_dirs"), "journal: must list entries and created_dirs"),
        (lambda raw: raw["entries"].append("x"), "journal.entries: has a malformed entry"),
        (lambda raw: raw["entries"][1].pop("path"), "journal.entries: has a malformed entry"),
        (lambda raw: raw["entries"][1].update(base=None), "journal.entries: has a malformed entry"),
        (lambda raw: raw["entries"][1].update(new=1), "journal.entries: has a malformed entry"),
        (
            lambda raw: raw["entries"][0].update(base=OLD.upper()),
            "journal.entries: has a malformed base digest",
        ),
        (lambda raw: raw["entries"][0].update(base=OLD[:-1]), "journal.entries: has a malformed base digest"),
        (
            lambda raw: raw["entries"][0].update(base=OLD + "0"),
            "journal.entries: has a malformed base digest",
        ),
        (lambda raw: raw["entries"][0].update(new="Absent"), "journal.entries: has a malformed new digest"),
        (lambda raw: raw["entries"][0].update(new=NEW + "\n"), "journal.entries: has a malformed new digest"),
        (
            lambda raw: raw["entries"][0].update(path="/etc/passwd"),
            "journal.entries: must be a relative path inside the repository: '/etc/passwd'",
        ),
        (
            lambda raw: raw.update(created_dirs=["m", ".."]),
            "journal.created_dirs: must be a relative path inside the repository: '..'",
        ),
        (lambda raw: raw.update(created_dirs=["m", 3]), "journal: has malformed created_dirs or message"),
        (lambda raw: raw.update(message=["x"]), "journal: has malformed created_dirs or message"),
    ],
)
def test_each_journal_refusal_names_its_field(mutate: Any, message: str) -> None:
    """Recovery never acts on a journal it cannot fully read; the message says which part is bad."""
    raw = _journal().to_mapping()
    mutate(raw)

    assert _refusal(lambda: Journal.from_mapping(raw)).message == message


@pytest.mark.parametrize("raw", [None, [], "journal"])
def test_a_journal_that_is_not_an_object_is_refused(raw: Any) -> None:
    """Not a JSON object at all."""
    assert (
        _refusal(lambda: Journal.from_mapping(raw)).message
        == "journal: is not a wfbench apply journal (schema 1)"
    )


# --------------------------------------------------------------------------- recovery


def test_going_forward_over_a_removal_removes_the_file() -> None:
    """An entry whose new side is absent: forward from the base removes it, back from absent restores it."""
    removal = SwapEntry(PLAN, OLD, ABSENT)

    assert recovery_step(removal, OLD, Direction.FORWARD) is Step.REMOVE
    assert recovery_step(removal, ABSENT, Direction.FORWARD) is Step.NOTHING
    assert recovery_step(removal, ABSENT, Direction.BACK) is Step.RESTORE_BASE
    assert recovery_step(removal, NEW, Direction.BACK) is Step.CONFLICT
