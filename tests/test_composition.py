"""Composition by role: one agent type alone, the customer side alone, local models that know their agent."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pytest
from autogen_core import (
    AgentId,
    SingleThreadedAgentRuntime,
)
from autogen_core.models import AssistantMessage, LLMMessage, UserMessage
from autogen_core.tools import ToolSchema

import handoffs_runtime
from handoffs_runtime import (
    AgentProfile,
    AgentResponse,
    OfflineModel,
    QueueChannel,
    TeamConfigError,
    register_agents,
    register_customer_side,
    session_topic,
)
from handoffs_runtime.agents.ai import AIAgentConfig
from handoffs_runtime.agents.human import HumanAgentConfig
from handoffs_runtime.agents.toolloop import ToolLoop
from handoffs_runtime.agents.worker import WorkerAgentConfig
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.distributed import FrontEnd, Host
from handoffs_runtime.messages import user_task
from handoffs_runtime.models.local import LocalModel
from handoffs_runtime.models.scripted import ScriptedModel
from handoffs_runtime.team.build import plan_team
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.teams.orchestrator import orchestrator_team

from .distributed_support import FAST, TIMEOUT
from .support import listen


class _Profiled(LocalModel):
    """Records the profile each agent's model is given; every copy shares the record."""

    def __init__(self, given: list[AgentProfile] | None = None) -> None:
        super().__init__()
        self.given = given if given is not None else []
        self.profile: AgentProfile | None = None

    def for_agent(self, profile: AgentProfile) -> _Profiled:
        model = _Profiled(self.given)
        model.profile = profile
        self.given.append(profile)
        return model

    def respond(self, messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> str:
        assert self.profile is not None
        return f"This is {self.profile.label or self.profile.name}."


async def test_one_agent_type_runs_a_turn_alone_with_no_customer_side_and_no_model_for_the_others() -> None:
    runtime = SingleThreadedAgentRuntime()
    team = acme_team()
    sales = team.agents[1].name
    model = ScriptedModel(["Anvils are on sale."])
    await register_agents(runtime, team, only=[sales], models={sales: model}, channel=QueueChannel())
    customer_side = await listen(runtime, team.user_topic)  # stands where the customer side would
    runtime.start()
    task = user_task([UserMessage(content="what is on sale?", source="User")], [sales])
    await runtime.publish_message(task, topic_id=session_topic(sales, "s1"))
    await runtime.stop_when_idle()
    [reply] = customer_side.of(AgentResponse)
    assert reply.reply_to_topic_type == sales
    assert reply.context[-1] == AssistantMessage(content="Anvils are on sale.", source=sales)
    model.assert_done()
    for absent in (team.entry, team.user_topic):  # neither the other agents nor the person's side
        with pytest.raises(LookupError):
            await runtime.get(absent, "s1", lazy=False)


async def test_a_model_is_needed_only_by_the_agents_registered_and_its_absence_names_the_agent() -> None:
    team = acme_team()
    human = team.human
    assert human is not None
    await register_agents(SingleThreadedAgentRuntime(), team, only=[human], channel=QueueChannel())
    with pytest.raises(TeamConfigError, match=f"agent {team.entry!r} needs a model"):
        await register_agents(SingleThreadedAgentRuntime(), team, only=[team.entry], channel=QueueChannel())


async def test_the_customer_side_registers_with_no_model_and_nothing_else() -> None:
    runtime = SingleThreadedAgentRuntime()
    team = acme_team()
    await register_customer_side(runtime, team, channel=ScriptedChannel.for_sessions({"s1": []}))
    assert await runtime.get(team.user_topic, "s1", lazy=False) == AgentId(team.user_topic, "s1")
    with pytest.raises(LookupError):
        await runtime.get(team.entry, "s1", lazy=False)


async def test_a_grpc_front_end_registers_and_serves_a_session_with_no_model_at_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_model(*args: object, **kwargs: object) -> None:
        raise AssertionError("a front end built a model")

    monkeypatch.setattr(LocalModel, "__init__", no_model)
    channel = QueueChannel()
    async with (
        Host("127.0.0.1:0") as host,
        FrontEnd(acme_team(), str(host.address), channel, backoff=FAST) as front,
    ):
        await front.open("s1")
        await channel.leave("s1")
        await asyncio.wait_for(front.wait("s1"), TIMEOUT)
        assert front.ended("s1")


def test_a_plan_per_agent_type_each_finished_and_listening_where_its_role_does() -> None:
    team = orchestrator_team()
    plans = plan_team(team, channel=QueueChannel(), model=ScriptedModel([])).plans
    roles = {plan.agent_type: (type(plan.config), plan.topic) for plan in plans}
    for spec in team.agents:
        kind = {"ai": AIAgentConfig, "human": HumanAgentConfig, "worker": WorkerAgentConfig}[spec.kind]
        assert roles[spec.name] == (kind, None if spec.kind == "worker" else spec.name)
    assert len(plans) == len(team.agents) + sum(1 for plan in plans if plan.agent_type.endswith(".tool"))


async def test_each_agent_gets_its_own_model_knowing_its_profile() -> None:
    team = acme_team()
    model = _Profiled()
    channel = ScriptedChannel.for_sessions({"s1": ["hello"]})
    runtime = SingleThreadedAgentRuntime()
    await handoffs_runtime.register_team(runtime, team, model=model, channel=channel)
    runtime.start()
    await handoffs_runtime.start_session(runtime, "s1")
    await runtime.stop_when_idle()
    profiles = {profile.name: profile for profile in model.given}
    assert set(profiles) == {a.name for a in team.agents if a.kind == "ai"}
    entry = profiles[team.entry]
    assert entry.description == team.agent(team.entry).description
    assert set(entry.handoffs) == set(entry.targets)
    assert {label for label, _ in entry.targets.values()} >= {team.label(team.agents[1].name)}
    assert model.calls == []  # every call went to an agent's own model
    assert [reply.text for reply in channel.replies("s1")] == [f"This is {team.label(team.entry)}."]


def test_the_tool_loop_keeps_nothing_only_the_offline_model_reads() -> None:
    kept = {field.name for field in dataclasses.fields(ToolLoop)}
    assert kept.isdisjoint({"description", "examples", "targets"})
    assert {f.name for f in dataclasses.fields(handoffs_runtime.ModelCall)} == {
        "agent",
        "session_id",
        "handoff_tools",
    }


def test_the_offline_model_lives_in_its_own_package() -> None:
    assert OfflineModel.__module__ == "handoffs_runtime.models.offline.model"
    models = Path(handoffs_runtime.__file__).parent / "models"
    assert sorted(path.name for path in models.glob("offline*.py")) == []
    assert isinstance(OfflineModel().for_agent(AgentProfile("A")), OfflineModel)
