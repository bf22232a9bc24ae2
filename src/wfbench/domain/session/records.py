"""Value objects of the ModelCLI port: one headless agent session asked for, and what it did.

``sum_sessions`` (folding the sessions of a multi-phase arm) lives in :mod:`wfbench.domain.session.outcome`.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from wfbench.domain.results.rows import ErrorKind


@attrs.frozen
class Usage:
    """The four main-loop usage fields; ``None`` means the agent did not report it (never 0)."""

    input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    output_tokens: int | None = None


@attrs.frozen
class SessionRequest:
    """One headless session to run (``claude -p``, ``codex exec`` or the stand-in agent).

    ``env`` holds the non-secret environment additions (base URL, feature flags); ``secrets``
    maps secret environment variable names to values: they reach only the agent CLI process,
    never an argv, a tool subprocess, a transcript or a row.
    """

    prompt: str
    model: str = "claude-sonnet-4-5"
    effort: str | None = None
    permission_mode: str = "dontAsk"
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    settings_json: str | None = None
    mcp_config_json: str | None = None
    strict_mcp_config: bool = True
    plugin_dirs: tuple[str, ...] = ()
    add_dirs: tuple[str, ...] = ()
    expected_skill: str | None = None
    #: The arm's skills as paths relative to the workspace (name → ``.claude/skills/<name>``),
    #: for agents that discover skills elsewhere (Codex: the adapter presents them in
    #: ``$HOME/.agents/skills``). Claude Code finds them in the workspace itself.
    skill_paths: Mapping[str, str] = attrs.field(factory=dict)
    timeout_s: float = 5400.0
    env: Mapping[str, str] = attrs.field(factory=dict)
    secrets: Mapping[str, str] = attrs.field(factory=dict)
    #: A label for the transcript (e.g. ``fix-median-workflow-run1-plan``).
    label: str = "session"
    #: Redacted from everything the session yields, never given to the agent (the real key
    #: behind the loopback key proxy).
    withheld: tuple[str, ...] = attrs.field(default=(), repr=False)


@attrs.frozen
class SessionRecord:
    """A parsed session: outcome, usage (None when unreported), cost, evidence, redacted transcript."""

    ok: bool
    error_kind: ErrorKind | None
    error_detail: str | None
    usage: Usage
    cost_usd: float | None
    num_turns: int | None
    duration_s: float | None
    session_id: str | None
    skill_invoked: bool | None
    transcript: bytes = b""
    transcript_sha256: str | None = None
    transcript_truncated: bool = False
    transcript_missing: bool = False
    evidence_diagnostics: tuple[str, ...] = ()
    tool_use_counts: Mapping[str, int] = attrs.field(factory=dict)
