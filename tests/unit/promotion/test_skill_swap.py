"""Applying a promoted overlay, the pure part: destinations, base digests, CAS and recovery."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wfbench.domain.errors import InputError
from wfbench.domain.promotion.skill_swap import (
    ABSENT,
    Direction,
    Journal,
    JournalState,
    Step,
    SwapEntry,
    base_digests,
    destinations,
    recovery,
    recovery_step,
    sha256_bytes,
    skill_roots,
    swap_conflicts,
)

PLAN = ".claude/skills/plan/SKILL.md"
OLD, NEW = sha256_bytes(b"old"), sha256_bytes(b"new")


def test_an_overlay_file_goes_to_the_canonical_location_and_every_mirror() -> None:
    """`.claude/skills/<skill>/<rest>` → itself and `<mirror>/<skill>/<rest>`, sorted."""
    files = [(PLAN, b"p"), (".claude/skills/work/refs/a.md", b"w")]

    assert destinations(files, ["plugin/skills", "cursor/skills"]) == (
        (".claude/skills/plan/SKILL.md", b"p"),
        (".claude/skills/work/refs/a.md", b"w"),
        ("cursor/skills/plan/SKILL.md", b"p"),
        ("cursor/skills/work/refs/a.md", b"w"),
        ("plugin/skills/plan/SKILL.md", b"p"),
        ("plugin/skills/work/refs/a.md", b"w"),
    )


def test_a_root_instruction_file_is_written_where_it_is_and_never_mirrored() -> None:
    """AGENTS.md at the root goes to the root only; a nested AGENTS.md is not a root file."""
    files = [("AGENTS.md", b"a"), (PLAN, b"p")]

    assert destinations(files, ["m"], root_files={"AGENTS.md"}) == (
        (PLAN, b"p"),
        ("AGENTS.md", b"a"),
        ("m/plan/SKILL.md", b"p"),
    )
    with pytest.raises(InputError):
        destinations([("AGENTS.md", b"a")])
    with pytest.raises(InputError):
        destinations([("docs/AGENTS.md", b"a")], root_files={"AGENTS.md", "docs/AGENTS.md"})


def test_without_mirrors_only_the_canonical_location_is_written() -> None:
    """No mirror: one destination per overlay file."""
    assert destinations([(PLAN, b"p")]) == ((PLAN, b"p"),)


@pytest.mark.parametrize(
    "mirror",
    [
        "/etc/skills",
        "../outside",
        "a/../../b",
        ".claude/skills",
        ".claude/skills/plan",
        ".claude",
        "",
        "a//b",
    ],
)
def test_a_mirror_outside_the_repository_or_overlapping_the_canonical_location_is_refused(
    mirror: str,
) -> None:
    """Absolute, escaping, empty or overlapping mirrors: InputError naming --mirror."""
    with pytest.raises(InputError) as caught:
        destinations([(PLAN, b"p")], [mirror])

    assert caught.value.field == "--mirror"


def test_a_mirror_given_twice_is_refused() -> None:
    """The same mirror twice would write every file twice."""
    with pytest.raises(InputError, match="overlaps"):
        destinations([(PLAN, b"p")], ["plugin/skills", "plugin/skills/"])


@pytest.mark.parametrize("path", ["docs/x.md", ".claude/skills/plan", ".claude/skills/../x.md", "/abs.md"])
def test_an_overlay_file_outside_a_skill_directory_is_refused(path: str) -> None:
    """Only `.claude/skills/<skill>/<file>` has a destination."""
    with pytest.raises(InputError):
        destinations([(path, b"x")])


def test_base_digests_bind_every_incumbent_file_and_mark_added_files_absent() -> None:
    """Files the overlay does not touch are bound too; a file it adds is `absent`."""
    incumbent: dict[str, bytes | None] = {PLAN: b"old", ".claude/skills/plan/notes.md": b"n"}

    assert base_digests(incumbent, [PLAN, ".claude/skills/plan/new.md"]) == {
        PLAN: OLD,
        ".claude/skills/plan/new.md": ABSENT,
        ".claude/skills/plan/notes.md": sha256_bytes(b"n"),
    }


def test_a_destination_known_to_be_missing_is_absent() -> None:
    """A committed-bytes lookup that found nothing (None) is `absent`, never the empty file's digest."""
    assert base_digests({PLAN: None}, [PLAN]) == {PLAN: ABSENT}
    assert base_digests({PLAN: b""}, [PLAN]) == {PLAN: hashlib.sha256(b"").hexdigest()}


def test_skill_roots_cover_each_touched_skill_at_each_location() -> None:
    """The directories whose every file is bound."""
    assert skill_roots(["work", "plan", "plan"], ["m"]) == (
        ".claude/skills/plan",
        ".claude/skills/work",
        "m/plan",
        "m/work",
    )


def test_the_swap_proceeds_only_when_every_bound_path_holds_its_recorded_bytes() -> None:
    """One conflict line per path that changed, vanished or appeared."""
    expected = {PLAN: OLD, "a.md": ABSENT, "b.md": OLD}

    assert swap_conflicts(expected, {PLAN: OLD, "a.md": ABSENT, "b.md": OLD}) == ()
    assert swap_conflicts(expected, {PLAN: NEW, "a.md": OLD, "b.md": ABSENT}) == (
        f"{PLAN} changed since the evidence was recorded (compare-and-swap refused)",
        "a.md changed since the evidence was recorded (compare-and-swap refused)",
        "b.md is absent since the evidence was recorded (compare-and-swap refused)",
    )
    assert swap_conflicts(expected, {PLAN: OLD, "a.md": ABSENT}) == (
        "b.md was removed or is unreadable since the evidence was recorded (compare-and-swap refused)",
    )


def _journal(state: JournalState = JournalState.PREPARED) -> Journal:
    entries = (SwapEntry(PLAN, OLD, NEW), SwapEntry("m/plan/SKILL.md", ABSENT, NEW))
    return Journal("t1", state, entries, created_dirs=("m", "m/plan"), message="promote")


@pytest.mark.parametrize("state", list(JournalState))
def test_a_journal_reads_back_what_it_wrote(state: JournalState) -> None:
    """to_mapping → from_mapping is the identity."""
    journal = _journal(state)

    assert Journal.from_mapping(journal.to_mapping()) == journal


@pytest.mark.parametrize(
    "mutate",
    [
        lambda raw: raw.update(schema=2),
        lambda raw: raw.update(state="half-done"),
        lambda raw: raw.update(txid=""),
        lambda raw: raw.update(entries="x"),
        lambda raw: raw["entries"][0].update(base="nothex"),
        lambda raw: raw["entries"][0].update(new=None),
        lambda raw: raw["entries"][0].update(path="../../etc/passwd"),
        lambda raw: raw.update(created_dirs=["/abs"]),
        lambda raw: raw.update(message=3),
    ],
)
def test_a_damaged_journal_is_refused(mutate: Any) -> None:
    """Recovery never acts on a journal it cannot fully read: wrong schema, state, entry or path."""
    raw = _journal().to_mapping()
    mutate(raw)

    with pytest.raises(InputError):
        Journal.from_mapping(raw)


def test_recovery_goes_forward_only_from_the_commit_point() -> None:
    """Prepared and rolling-back go back to the old bytes; committed goes forward."""
    assert recovery(_journal(JournalState.PREPARED)) is Direction.BACK
    assert recovery(_journal(JournalState.COMMITTED)) is Direction.FORWARD
    assert recovery(_journal(JournalState.ROLLING_BACK)) is Direction.BACK


@pytest.mark.parametrize(
    ("base", "current", "direction", "step"),
    [
        (OLD, OLD, Direction.FORWARD, Step.INSTALL_NEW),
        (OLD, NEW, Direction.FORWARD, Step.NOTHING),
        (ABSENT, ABSENT, Direction.FORWARD, Step.INSTALL_NEW),
        (OLD, NEW, Direction.BACK, Step.RESTORE_BASE),
        (OLD, OLD, Direction.BACK, Step.NOTHING),
        (ABSENT, NEW, Direction.BACK, Step.REMOVE),
        (ABSENT, ABSENT, Direction.BACK, Step.NOTHING),
        (OLD, sha256_bytes(b"edited"), Direction.FORWARD, Step.CONFLICT),
        (OLD, sha256_bytes(b"edited"), Direction.BACK, Step.CONFLICT),
        (OLD, ABSENT, Direction.BACK, Step.CONFLICT),
    ],
)
def test_each_destination_is_brought_to_its_side_or_reported(
    base: str, current: str, direction: Direction, step: Step
) -> None:
    """The recovery step for every (base, current, direction); bytes of neither side are a conflict."""
    assert recovery_step(SwapEntry(PLAN, base, NEW), current, direction) is step


@given(
    base=st.sampled_from([OLD, ABSENT]),
    start=st.sampled_from(["base", "new"]),
    direction=st.sampled_from(list(Direction)),
)
def test_recovery_is_idempotent(base: str, start: str, direction: Direction) -> None:
    """After the step, running recovery again does nothing: a crash during recovery is harmless."""
    entry = SwapEntry(PLAN, base, NEW)
    current = base if start == "base" else NEW
    step = recovery_step(entry, current, direction)
    after = {
        Step.NOTHING: current,
        Step.INSTALL_NEW: NEW,
        Step.RESTORE_BASE: base,
        Step.REMOVE: ABSENT,
    }[step]

    assert after == (NEW if direction is Direction.FORWARD else base)
    assert recovery_step(entry, after, direction) is Step.NOTHING
