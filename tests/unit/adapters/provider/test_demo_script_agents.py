"""The demo's provider script answers every implementation task's phases on every agent's protocol.

`wfbench run --agent codex|gemini|opencode` on the whole demo tells Claude Code's story only if
each phase of each task (plan, the candidate's concise plan, work, baseline) meets a rule of that
agent's protocol and tools — never Claude Code's rule (tools the agent lacks) or the default.
Requests are built as each agent sends them (pure, no server).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.demo_run import IMPL_TASKS
from wfbench.adapters.provider.records import select_turn
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.wire import Protocol
from wfbench.app.corpus.arms import preset_arms

DEMO = Path(str(resources.files("wfbench.demo")))
SCRIPT = ProviderScript.load(str(DEMO / "provider.yaml"))
PROMPTS = {t["id"]: t["prompt"] for t in yaml.safe_load((DEMO / "corpus.yaml").read_text())["tasks"]}
ARMS = preset_arms()
CONCISE = "---\nname: plan\n---\n# Plan (concise)\n\nKeep plans short: name the one file to change."
#: agent → (protocol, the tool that loads a skill)
AGENTS = {
    "codex": (Protocol.OPENAI_RESPONSES, "exec_command"),
    "gemini": (Protocol.GEMINI, "activate_skill"),
    "opencode": (Protocol.ANTHROPIC, "skill"),
}


def _prompt(arm: str, phase: int, task: str, plan: str = "docs/plans/x.md") -> str:
    return ARMS[arm].phases[phase].render(task=PROMPTS[task], plan=plan)


def _request(agent: str, prompt: str, skill_body: str | None = None) -> dict[str, Any]:
    """The agent's first request, or (``skill_body``) its second, after loading the plan skill."""
    if agent == "codex":
        items: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "input_text", "text": prompt}]}]
        if skill_body is not None:
            args = json.dumps({"cmd": "cat ~/.agents/skills/plan/SKILL.md"})
            items += [
                {"type": "function_call", "name": "exec_command", "arguments": args, "call_id": "c1"},
                {"type": "function_call_output", "call_id": "c1", "output": f"Output:\n{skill_body}"},
            ]
        return {"input": items}
    if agent == "gemini":
        contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": prompt}]}]
        if skill_body is not None:
            call = {"name": "activate_skill", "args": {"name": "plan"}}
            answer = {"name": "activate_skill", "response": {"output": f"<activated_skill>{skill_body}"}}
            contents += [
                {"role": "model", "parts": [{"functionCall": call}]},
                {"role": "user", "parts": [{"functionResponse": answer}]},
            ]
        return {"contents": contents}
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": prompt}]}]
    if skill_body is not None:
        use = {"type": "tool_use", "id": "t1", "name": "skill", "input": {"name": "plan"}}
        result = {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": f'<skill_content name="plan">{skill_body}',
        }
        messages += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    return {"messages": messages, "tools": [{"name": "todowrite"}, {"name": "skill"}]}


def _answer(agent: str, prompt: str, skill_body: str | None = None):  # type: ignore[no-untyped-def]
    protocol = AGENTS[agent][0]
    selection = select_turn(SCRIPT, _request(agent, prompt, skill_body), protocol)
    assert selection.rule is not None, f"{agent}: no rule answers {prompt[:60]!r}"
    assert SCRIPT.conversations[selection.rule].protocol == protocol.value
    return selection


@pytest.mark.parametrize("agent", sorted(AGENTS))
@pytest.mark.parametrize("task", IMPL_TASKS)
def test_every_phase_of_every_task_meets_a_rule_of_the_agents_own_protocol(agent: str, task: str) -> None:
    skill_tool = AGENTS[agent][1]
    for arm, phase in (("workflow", 0), ("workflow", 1)):
        first = _answer(agent, _prompt(arm, phase, task)).turn
        assert [call.name for call in first.tools] == [skill_tool]  # the skill is loaded first
    assert _answer(agent, _prompt("baseline", 0, task)).turn.tools  # the baseline works too


@pytest.mark.parametrize("agent", sorted(AGENTS))
@pytest.mark.parametrize("task", IMPL_TASKS)
def test_the_candidates_plan_follows_the_concise_skill_it_loaded(agent: str, task: str) -> None:
    prompt = _prompt("candidate_workflow", 0, task)
    incumbent = _answer(agent, prompt, skill_body="# Plan\n\nRead the code the task touches.")
    candidate = _answer(agent, prompt, skill_body=CONCISE)

    assert "Keep plans short" in SCRIPT.conversations[candidate.rule].when
    assert "Keep plans short" not in SCRIPT.conversations[incumbent.rule].when
    assert candidate.turn.usage.output_tokens < incumbent.turn.usage.output_tokens


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_add_clamps_work_follows_the_plan_path_the_concise_plan_was_written_to(agent: str) -> None:
    concise = _answer(agent, _prompt("workflow", 1, "add-clamp", plan="docs/plans/add-clamp.concise.md"))
    long = _answer(agent, _prompt("workflow", 1, "add-clamp", plan="docs/plans/add-clamp.md"))

    assert "docs/plans/add-clamp.concise.md" in SCRIPT.conversations[concise.rule].when
    assert concise.rule != long.rule


def test_only_the_output_of_a_command_that_read_a_skill_file_counts_as_user_text_for_codex() -> None:
    body = _request("codex", "Use the plan skill for: x", skill_body=CONCISE)
    other = json.loads(json.dumps(body))
    other["input"][1]["arguments"] = json.dumps({"cmd": "cat notes/SKILL.txt"})
    from wfbench.adapters.provider import wire

    assert "Keep plans short" in wire.user_text(body, Protocol.OPENAI_RESPONSES)
    assert "Keep plans short" not in wire.user_text(other, Protocol.OPENAI_RESPONSES)
