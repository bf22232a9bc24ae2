"""Redaction rules pinned exactly (each test kills mutants of wfbench.domain.redaction that survived)."""

from __future__ import annotations

import pytest

from wfbench.domain.redaction import MIN_SECRET_CHARS, REDACTED, contains_secret, redact_text, secret_forms


def test_a_secret_of_exactly_the_minimum_length_is_searched_for_and_a_shorter_one_is_not():
    """Four characters are a secret; three are ordinary text left alone."""
    assert MIN_SECRET_CHARS == 4
    assert secret_forms(["abcd"]) == ("abcd",)
    assert secret_forms(["abc"]) == ()
    assert redact_text("abc abcd", ["abc", "abcd"]) == f"abc {REDACTED}"


def test_every_json_escape_of_a_secret_is_a_form_of_its_own():
    """Backslash, quote, newline and tab are escaped as JSON spells them; both spellings are forms."""
    secret = 'a\\b"c\nd\te'
    escaped = 'a\\\\b\\"c\\nd\\te'
    assert secret_forms([secret]) == (escaped, secret)


@pytest.mark.parametrize(
    ("secret", "escaped"),
    [("pa\\ss", "pa\\\\ss"), ('pa"ss', 'pa\\"ss'), ("pa\nss", "pa\\nss"), ("pa\tss", "pa\\tss")],
    ids=["backslash", "quote", "newline", "tab"],
)
def test_a_json_escaped_secret_is_redacted_and_detected(secret: str, escaped: str):
    """A secret written inside a JSON string (escaped) is still found and masked."""
    text = '{"key": "' + escaped + '"}'
    assert contains_secret(text, [secret])
    assert redact_text(text, [secret]) == '{"key": "' + REDACTED + '"}'


def test_forms_are_searched_longest_first_so_no_tail_of_a_longer_secret_survives():
    """A secret that contains a shorter one is masked whole, not as marker plus leftover."""
    assert secret_forms(["abcd", "abcdefgh"]) == ("abcdefgh", "abcd")
    assert redact_text("<abcdefgh>", ["abcd", "abcdefgh"]) == f"<{REDACTED}>"


def test_contains_secret_is_false_when_no_form_occurs():
    """Negative control: unrelated text, and secrets below the minimum length, are not found."""
    assert not contains_secret("nothing here", ["secret-value"])
    assert not contains_secret("abc", ["abc"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key sk-ant-abcdEFGH_-12 end", f"key {REDACTED} end"),
        ("key sk-ant-abcdefg end", "key sk-ant-abcdefg end"),
        ("t ghp_abcdefgh1 t", f"t {REDACTED} t"),
        ("t ghs_abcdefgh t", f"t {REDACTED} t"),
        ("t ghx_abcdefgh t", "t ghx_abcdefgh t"),
        ("t ghp_abcdefg t", "t ghp_abcdefg t"),
        ("Authorization: Bearer abc.def", f"Authorization: Bearer {REDACTED}"),
        ("AUTHORIZATION=tok123;rest", f"AUTHORIZATION={REDACTED};rest"),
        ('authorization : "quoted"', 'authorization : "quoted"'),
        ("X-Api-Key: k-123, next", f"X-Api-Key: {REDACTED}, next"),
        ("x-api-key=abc'd", f"x-api-key={REDACTED}'d"),
        ("see https://user:pw@host/x", f"see https://{REDACTED}@host/x"),
        ("see http://tok@host", f"see http://{REDACTED}@host"),
        ("see https://host/a@b", "see https://host/a@b"),
        ("mail me@host.example", "mail me@host.example"),
    ],
)
def test_credential_shapes_are_masked_exactly_and_look_alikes_are_not(text: str, expected: str):
    """Each well-known shape is replaced by the marker (keeping its prefix); near misses stay."""
    assert redact_text(text) == expected
