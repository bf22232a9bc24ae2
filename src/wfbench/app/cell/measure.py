"""What a cell measured, kept whatever happens to the cell afterwards.

A session that finished was paid for: its usage, cost and session id are a measurement even when
the cell is cancelled, or fails in the harness, after it (verify or the oracle killed by Ctrl-C,
a capture that raised). Two things keep them:

* every row carries ``session_measurements``: one entry per session the cell ran (phase, session
  id, how it ended, the four usage fields, cost, duration, turns), so a known cost survives even
  when the cell's sum is unknown because a later session was killed mid-stream (unknown is never
  zero, so the sum of known and unknown stays unknown);
* :func:`measured_fields` gives a failure row the sessions' sum, ids and transcripts, where it
  would otherwise have recorded nothing.

The sweep's spend (:mod:`wfbench.app.sweep.spend`) reads both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wfbench.domain.results.rows import USAGE_FIELDS
from wfbench.domain.session.outcome import sum_sessions
from wfbench.domain.session.records import SessionRecord

__all__ = ["measured_fields", "session_measurements"]


def session_measurements(sessions: Sequence[tuple[str, SessionRecord]]) -> list[dict[str, Any]]:
    """One JSON-ready entry per ``(phase, record)``, in session order."""
    return [
        {
            "phase": phase,
            "session_id": record.session_id,
            "ok": record.ok,
            "error_kind": None if record.error_kind is None else record.error_kind.value,
            **{name: getattr(record.usage, name) for name in USAGE_FIELDS},
            "cost_usd": record.cost_usd,
            "duration_s": record.duration_s,
            "num_turns": record.num_turns,
        }
        for phase, record in sessions
    ]


def measured_fields(
    sessions: Sequence[tuple[str, SessionRecord]], transcripts: Sequence[Any]
) -> dict[str, Any]:
    """Row fields for what the cell's finished sessions measured (empty when it ran none)."""
    if not sessions:
        return {}
    total = sum_sessions([record for _, record in sessions])
    usage = total.usage
    return {
        **{name: getattr(usage, name) for name in USAGE_FIELDS},
        "cost_usd": total.cost_usd,
        "duration_s": total.duration_s,
        "num_turns": total.num_turns,
        "session_ids": list(total.session_ids),
        "skill_invoked": total.skill_invoked,
        "tool_use_counts": dict(total.tool_use_counts),
        "transcript_artifacts": list(transcripts),
        "session_measurements": session_measurements(sessions),
    }
