"""Which adapter runs an arm that names its agent: the run's own when it names the run's agent."""

from __future__ import annotations

from typing import Any, cast

from wfbench.app.corpus.arms import AgentChoice, Arm, TaskKind
from wfbench.cli.run.agents import arm_agents
from wfbench.domain.ports import ModelCLI


def test_an_arm_naming_the_runs_own_agent_gets_the_runs_adapter() -> None:
    """A mixed sweep's `agent: standin` arm in a stand-in run (it raised 'no agent adapter was built')."""
    run_adapter = cast(ModelCLI, cast(Any, object()))
    arms = [Arm("workflow_standin", TaskKind.IMPLEMENTATION, (), agent=AgentChoice("standin"))]

    adapters = arm_agents(arms, default="standin", default_adapter=run_adapter)

    assert adapters == {AgentChoice("standin").key: run_adapter}
