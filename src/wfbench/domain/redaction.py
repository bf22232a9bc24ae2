"""Redacting secrets out of text that will be stored or shown (pure).

Applied in order: every explicit secret value (and its JSON-escaped form) becomes the marker;
then well-known credential shapes (``sk-ant-…``, GitHub tokens, ``Authorization: Bearer …``,
URL user-info) are masked even when nobody declared them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[REDACTED]"
#: Explicit secrets shorter than this are not searched for (they would redact ordinary words).
MIN_SECRET_CHARS = 4
_PATTERNS = (
    (re.compile(r"sk-ant-[A-Za-z0-9_-]{8,}"), REDACTED),
    (re.compile(r"gh[pousr]_[A-Za-z0-9_]{8,}"), REDACTED),
    (re.compile(r"(?i)(authorization\s*[:=]\s*(?:bearer\s+)?)[^\s\"',;]+"), rf"\1{REDACTED}"),
    (re.compile(r"(?i)(x-api-key\s*[:=]\s*)[^\s\"',;]+"), rf"\1{REDACTED}"),
    (re.compile(r"(https?://)[^/\s@\"']+@"), rf"\1{REDACTED}@"),
)


def secret_forms(secrets: Iterable[str]) -> tuple[str, ...]:
    """The strings to search for: each secret and its JSON-escaped spelling, longest first."""
    forms: set[str] = set()
    for secret in secrets:
        if len(secret) < MIN_SECRET_CHARS:
            continue
        forms.add(secret)
        escaped = secret.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
        forms.add(escaped)
    return tuple(sorted(forms, key=len, reverse=True))


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret value and credential-shaped token replaced by the marker."""
    for form in secret_forms(secrets):
        text = text.replace(form, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def contains_secret(text: str, secrets: Iterable[str]) -> bool:
    """True when any secret (or its JSON-escaped spelling) occurs in ``text``."""
    return any(form in text for form in secret_forms(secrets))


#: Characters that change how a terminal or a rendered document shows *other* text: C0/C1
#: controls (ESC, BEL, CR, backspace…), DEL, line/paragraph separators, bidi overrides and
#: isolates ("Trojan Source"), and lone surrogates (undecodable bytes of a file name).
_CONTROLS = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every control character escaped (``\\x1b``, ``\\u202e``…); tab kept.

    For agent-chosen strings (file names, error details, CLI stderr) on their way to a terminal,
    ``report.md`` or a log line: an ESC sequence, a carriage return or a bidi override can no
    longer repaint or reorder what the reader sees. A newline is escaped too (one line stays one).
    """
    return _CONTROLS.sub(_escape, text)
