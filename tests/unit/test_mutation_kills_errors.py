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
