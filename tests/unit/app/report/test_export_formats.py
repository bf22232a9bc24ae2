"""The ATIF and Inspect exports as data: what each event becomes, what a cell's sample scores."""

from __future__ import annotations

import hashlib
import json

import attrs

from wfbench.adapters.store.memory_sweep import MemorySweepDirectory
from wfbench.app.report.atif import SessionInfo, trajectory
from wfbench.app.report.export import SweepSource, export_sweep
from wfbench.app.report.inspect_log import messages_of, quality_of
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep import layout

INFO = SessionInfo(agent="claude", agent_version="2.1.328", model="claude-sonnet-4-5", wfbench={"task": "t"})


def _lines(*events: object) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def _assistant(msg_id: str, *blocks: object, usage: dict[str, int] | None = None) -> dict[str, object]:
    message: dict[str, object] = {"id": msg_id, "model": "claude-sonnet-4-5", "content": list(blocks)}
    if usage is not None:
        message["usage"] = usage
    return {"type": "assistant", "message": message, "session_id": "s-1"}


def _result(call: str, text: str, *, error: bool = False) -> dict[str, object]:
    block = {"type": "tool_result", "tool_use_id": call, "content": text, "is_error": error}
    return {"type": "user", "message": {"content": [block]}}


CLAUDE = _lines(
    {
        "type": "system",
        "subtype": "init",
        "model": "claude-sonnet-4-5",
        "tools": ["Bash"],
        "session_id": "s-1",
    },
    _assistant(
        "m1",
        {"type": "thinking", "thinking": "look first"},
        usage={
            "input_tokens": 10,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 5,
            "output_tokens": 7,
        },
    ),
    _assistant("m1", {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "ls"}}),
    _result("c1", "a.py"),
    {"type": "user", "isSynthetic": True, "message": {"content": [{"type": "text", "text": "skill body"}]}},
    _assistant("m2", {"type": "text", "text": "Done."}),
    _result("c-unknown", "orphan", error=True),
    {
        "type": "result",
        "subtype": "success",
        "total_cost_usd": 0.5,
        "num_turns": 2,
        "usage": {"input_tokens": 1, "output_tokens": 2},
    },
)


def test_a_claude_message_split_over_events_is_one_agent_step_holding_its_tool_results():
    steps = trajectory(CLAUDE, INFO)["steps"]
    first = steps[1]
    assert first["source"] == "agent"
    assert first["reasoning_content"] == "look first"
    assert first["tool_calls"] == [
        {"tool_call_id": "c1", "function_name": "Bash", "arguments": {"command": "ls"}}
    ]
    assert first["observation"]["results"] == [{"content": "a.py", "source_call_id": "c1"}]


def test_claude_usage_becomes_metrics_with_cache_reads_inside_the_prompt_tokens():
    metrics = trajectory(CLAUDE, INFO)["steps"][1]["metrics"]
    assert metrics["prompt_tokens"] == 115
    assert metrics["cached_tokens"] == 100
    assert metrics["completion_tokens"] == 7


def test_injected_text_is_a_system_step_and_an_orphan_result_is_kept_as_a_system_observation():
    steps = trajectory(CLAUDE, INFO)["steps"]
    assert [s["source"] for s in steps] == ["system", "agent", "system", "agent", "system"]
    orphan = steps[-1]["observation"]["results"][0]
    assert "source_call_id" not in orphan
    assert orphan["extra"] == {"is_error": True}


def test_the_result_event_gives_the_final_metrics_and_the_steps_are_numbered_from_one():
    traj = trajectory(CLAUDE, INFO)
    assert traj["final_metrics"]["total_cost_usd"] == 0.5
    assert traj["final_metrics"]["total_steps"] == len(traj["steps"])
    assert [s["step_id"] for s in traj["steps"]] == list(range(1, len(traj["steps"]) + 1))
    assert traj["session_id"] == "s-1"
    assert traj["agent"]["version"] == "2.1.328"


def test_a_codex_command_is_a_tool_call_with_its_output_and_turn_usage_is_summed():
    data = _lines(
        {"type": "thread.started", "thread_id": "th-1"},
        {"type": "turn.started"},
        {
            "type": "item.completed",
            "item": {
                "id": "i1",
                "type": "command_execution",
                "command": "ls",
                "aggregated_output": "a.py\n",
                "exit_code": 1,
                "status": "failed",
            },
        },
        {"type": "item.completed", "item": {"id": "i2", "type": "agent_message", "text": "Done."}},
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 30, "cached_input_tokens": 10, "output_tokens": 4},
        },
    )
    traj = trajectory(data, INFO)
    call = traj["steps"][0]
    assert call["tool_calls"][0]["function_name"] == "command_execution"
    assert call["observation"]["results"][0] == {
        "content": "a.py\n",
        "extra": {"is_error": True},
        "source_call_id": "i1",
    }
    assert traj["steps"][1]["message"] == "Done."
    assert traj["final_metrics"]["total_prompt_tokens"] == 30
    assert traj["session_id"] == "th-1"


def test_an_unknown_stream_and_torn_lines_are_kept_and_said_not_dropped():
    traj = trajectory(b'{"type": "init", "x": 1}\n{"torn', INFO)
    assert traj["steps"][0]["source"] == "system"
    assert '"x": 1' in traj["steps"][0]["message"]
    assert "not one wfbench maps" in traj["notes"]
    assert "1 transcript line" in traj["notes"]


def test_a_gemini_cli_stream_is_kept_event_by_event_not_read_as_claudes():
    gemini = b'{"type": "init", "session_id": "s"}\n{"type": "result", "status": "success", "stats": {}}\n'
    traj = trajectory(gemini, INFO)
    assert [step["source"] for step in traj["steps"]] == ["system", "system"]
    assert '"status": "success"' in traj["steps"][1]["message"]
    assert "not one wfbench maps" in traj["notes"]


def test_an_empty_transcript_still_makes_a_trajectory_with_one_step():
    assert len(trajectory(b"", INFO)["steps"]) == 1


def _row(**fields: object) -> Row:
    return Row.from_mapping({"task": "t", "arm": "a", "run": 0, **fields})


def test_quality_is_the_oracle_reward_then_the_review_f1_then_a_clean_controls_pass():
    assert quality_of(_row(oracle_reward=0.25, review_weighted_f1=0.9)) == 0.25
    assert quality_of(_row(review_weighted_f1=0.9)) == 0.9
    assert quality_of(_row(review_clean_control=True, review_clean_pass=False)) == 0.0
    assert quality_of(_row(resolved=True)) is None


def test_tool_results_follow_their_assistant_message_in_the_inspect_messages():
    messages = messages_of(trajectory(CLAUDE, INFO))
    roles = [m["role"] for m in messages]
    assert roles[:3] == ["system", "assistant", "tool"]
    assert messages[2]["tool_call_id"] == "c1"
    assert messages[2]["function"] == "Bash"


def _sweep(rows: list[dict[str, object]], files: dict[str, bytes]) -> SweepSource:
    return SweepSource(
        rows=tuple(Row.from_mapping(r) for r in rows),
        directory=MemorySweepDirectory(files=dict(files)),
        name="s",
        manifest={"model": "m", "started_at": "2026-01-01T00:00:00+00:00"},
    )


def test_each_cell_is_one_sample_whose_epoch_is_its_run_and_whose_scores_are_the_rows():
    path = layout.cell_file("t", "a", 1, "transcripts/work-s-1.jsonl")
    artifact = {"path": path, "sha256": hashlib.sha256(CLAUDE).hexdigest()}
    row = {
        "task": "t",
        "arm": "a",
        "run": 1,
        "resolved": False,
        "cost_usd": 0.5,
        "transcript_artifacts": [artifact],
    }
    out = MemorySweepDirectory()
    result = export_sweep(_sweep([row], {path: CLAUDE}), fmt="inspect", out=out)
    sample = out.json("s.json")["samples"][0]
    assert (sample["id"], sample["epoch"], sample["metadata"]["run"]) == ("t/a", 2, 1)
    assert sample["scores"]["resolved"]["value"] == "I"
    assert sample["scores"]["cost"]["value"] == 0.5
    assert "quality" not in sample["scores"]
    assert result.sessions == 1


def test_a_transcript_whose_bytes_changed_or_that_lies_outside_its_cell_is_skipped_and_said():
    inside = layout.cell_file("t", "a", 0, "transcripts/work-s-1.jsonl")
    outside = layout.cell_file("t", "other", 0, "transcripts/work-s-2.jsonl")
    artifacts = [
        {"path": inside, "sha256": "0" * 64},
        {"path": outside, "sha256": hashlib.sha256(CLAUDE).hexdigest()},
    ]
    out = MemorySweepDirectory()
    result = export_sweep(
        _sweep(
            [{"task": "t", "arm": "a", "run": 0, "transcript_artifacts": artifacts}],
            {inside: CLAUDE, outside: CLAUDE},
        ),
        fmt="atif",
        out=out,
    )
    assert result.sessions == 0
    assert len(result.skipped) == 2
    assert out.json("index.json")["trajectories"] == []


def test_an_atif_export_writes_one_file_per_session_in_the_cells_layout():
    path = layout.cell_file("t", "a", 0, "transcripts/work-s-1.jsonl")
    row = {
        "task": "t",
        "arm": "a",
        "run": 0,
        "session_measurements": [{"phase": "work", "session_id": "s-1"}],
        "transcript_artifacts": [{"path": path, "sha256": hashlib.sha256(CLAUDE).hexdigest()}],
    }
    out = MemorySweepDirectory()
    export_sweep(_sweep([row], {path: CLAUDE}), fmt="atif", out=out)
    written = out.json("cells/t/a/run-0/work-s-1.json")
    assert written["extra"]["wfbench"]["phase"] == "work"
    assert written["schema_version"] == "ATIF-v1.6"


def test_the_prompt_is_the_first_user_step_after_the_init_and_the_steps_are_renumbered():
    traj = trajectory(CLAUDE, attrs.evolve(INFO, prompt="Fix the median."))
    steps = traj["steps"]
    assert [s["source"] for s in steps[:3]] == ["system", "user", "agent"]
    assert steps[1]["message"] == "Fix the median."
    assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
    assert traj["extra"]["wfbench"]["prompt"] == "Fix the median."


def test_a_session_without_a_recorded_prompt_shows_none_and_says_so():
    traj = trajectory(CLAUDE, INFO)
    assert "user" not in [s["source"] for s in traj["steps"][:2]]
    assert traj["extra"]["wfbench"]["prompt"] is None
    assert "no prompt was recorded" in traj["notes"]


def _prompted_cell(prompts: bytes | None) -> SweepSource:
    path = layout.cell_file("t", "a", 0, "transcripts/work-s-1.jsonl")
    row = {
        "task": "t",
        "arm": "a",
        "run": 0,
        "task_prompt_digest": "d" * 64,
        "session_measurements": [{"phase": "work", "session_id": "s-1"}],
        "transcript_artifacts": [{"path": path, "sha256": hashlib.sha256(CLAUDE).hexdigest()}],
    }
    files = {path: CLAUDE}
    if prompts is not None:
        files[layout.cell_file("t", "a", 0, layout.PROMPTS_NAME)] = prompts
    return _sweep([row], files)


PROMPTS = json.dumps(
    {"phases": [{"phase": "plan", "prompt": "Plan it."}, {"phase": "work", "prompt": "Do it."}]}
).encode()


def test_each_session_carries_its_own_phases_prompt_and_the_sample_input_is_the_first():
    atif, inspect = MemorySweepDirectory(), MemorySweepDirectory()
    export_sweep(_prompted_cell(PROMPTS), fmt="atif", out=atif)
    export_sweep(_prompted_cell(PROMPTS), fmt="inspect", out=inspect)
    steps = atif.json("cells/t/a/run-0/work-s-1.json")["steps"]
    assert steps[1] == {
        "step_id": 2,
        "source": "user",
        "message": "Do it.",
        "extra": {"wfbench_prompt": True},
    }
    sample = inspect.json("s.json")["samples"][0]
    assert sample["input"] == "Plan it."
    assert sample["metadata"]["prompt_recorded"] is True
    assert {"role": "user", "content": "Do it."} in sample["messages"]


def test_a_cell_without_prompts_json_gets_the_documented_placeholder_input_never_a_prompt():
    out = MemorySweepDirectory()
    export_sweep(_prompted_cell(None), fmt="inspect", out=out)
    sample = out.json("s.json")["samples"][0]
    assert (
        sample["input"]
        == f"[no prompt recorded: wfbench task t, prompt sha256 {'d' * 64}; the cell has no prompts.json]"
    )
    assert sample["metadata"]["prompt_recorded"] is False
