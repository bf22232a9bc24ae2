"""``prompts.json`` in a cell's directory: what each phase's session was asked, as the harness built it.

The row keeps only ``task_prompt_digest``; the author of a skill wants the text itself (the
task prompt wrapped in the phase's template, the plan handed to the work phase, the review
output path), and which tools and skill the session was given. The file is rewritten whole
after each phase starts, so a cell cut short still shows the prompts it sent.
"""

from __future__ import annotations

import json

from wfbench.app.cell.context import CellContext
from wfbench.domain.session.records import SessionRequest

__all__ = ["save_prompt"]


def save_prompt(ctx: CellContext, rel: str, *, phase: str, role: str, request: SessionRequest) -> None:
    """Add one phase's prompt to the cell's ``prompts.json`` (``rel``) and rewrite the file."""
    ctx.prompts.append(
        {
            "phase": phase,
            "role": role,
            "prompt": request.prompt,
            "model": request.model,
            "expected_skill": request.expected_skill,
            "allowed_tools": list(request.allowed_tools),
            "disallowed_tools": list(request.disallowed_tools),
        }
    )
    body = json.dumps({"phases": ctx.prompts}, indent=2, ensure_ascii=False).encode() + b"\n"
    ctx.settings.directory.write(rel, body)
