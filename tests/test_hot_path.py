"""The hot-path shortcuts give the same objects and the same checks as the plain constructors."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import FrozenInstanceError
from typing import Any

import pytest
from autogen_core import AgentId, MessageContext, RoutedAgent, TopicId, TypeSubscription, message_handler
from autogen_core.models import AssistantMessage, LLMMessage, UserMessage
from pydantic import TypeAdapter, ValidationError

from handoffs_runtime import AgentResponse, HandoffEvent, UserLogin, UserTask, private
from handoffs_runtime.agents import AIAgent, UserAgent
from handoffs_runtime.agents.ai import handoff_event
from handoffs_runtime.agents.routing import SessionAgent
from handoffs_runtime.messages import agent_response, user_task
from handoffs_runtime.models.local import ModelCall
from handoffs_runtime.runtime.release import release_session
from handoffs_runtime.runtime.single_threaded import HandoffsRuntime
from handoffs_runtime.sessions.store import NewEntry
from handoffs_runtime.tools.context import ToolContext, TurnTally
from handoffs_runtime.topics import known_agent_id, session_topic
from handoffs_runtime.usage import Usage

CONTEXT: list[LLMMessage] = [
    UserMessage(content="hi", source="User"),
    AssistantMessage(content="hello", source="Triage"),
]


def test_user_task_from_messages_equals_the_validated_one() -> None:
    fast = user_task(list(CONTEXT), ["Triage", "Sales"])
    assert fast == UserTask(context=list(CONTEXT), turn_path=["Triage", "Sales"])
    assert fast.model_dump() == UserTask(context=list(CONTEXT), turn_path=["Triage", "Sales"]).model_dump()


def test_agent_response_from_messages_equals_the_validated_one() -> None:
    fast = agent_response(list(CONTEXT), "Sales")
    assert fast == AgentResponse(context=list(CONTEXT), reply_to_topic_type="Sales")


def test_every_kind_of_conversation_message_takes_the_shortcut(monkeypatch: pytest.MonkeyPatch) -> None:
    call = {"id": "c1", "name": "look_up", "arguments": "{}"}
    every = TypeAdapter(list[LLMMessage]).validate_python(
        [
            {"type": "SystemMessage", "content": "Be brief."},
            {"type": "UserMessage", "content": "hi", "source": "User"},
            {"type": "AssistantMessage", "content": [call], "source": "Triage"},
            {
                "type": "FunctionExecutionResultMessage",
                "content": [{"call_id": "c1", "name": "look_up", "content": "ok"}],
            },
        ]
    )
    assert {type(m).__name__ for m in every} == {
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "FunctionExecutionResultMessage",
    }
    monkeypatch.setattr(UserTask, "__init__", None)  # the validating constructor is never reached
    assert user_task(every, ["Triage"]).context is every


def test_anything_else_is_validated_as_before() -> None:
    converted = user_task([{"type": "UserMessage", "content": "hi", "source": "User"}], ["Triage"])  # type: ignore[list-item]
    assert converted.context == [UserMessage(content="hi", source="User")]
    with pytest.raises(ValidationError):
        user_task([{"content": "no type"}], ["Triage"])  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        user_task(list(CONTEXT), [3])  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        agent_response(["not a message"], "Sales")  # type: ignore[list-item]


def test_the_shortcuts_know_every_required_field() -> None:
    """If this fails, a field was added: pass it in user_task()/agent_response() too."""
    required = {name for name, f in UserTask.model_fields.items() if f.is_required()}
    optional = {"trace", "usage"}  # set after construction; defaults in the shortcuts as in the constructors
    task_fields = {"context", "turn_path", "turn_spent", *optional}
    assert required == {"context"} and set(UserTask.model_fields) == task_fields
    assert set(AgentResponse.model_fields) == {
        "context",
        "reply_to_topic_type",
        "live",
        "part_done",
        *optional,
    }
    for built in (user_task(list(CONTEXT), ["Triage"]), agent_response(list(CONTEXT), "Triage")):
        assert (built.trace, built.usage) == (None, Usage.EMPTY)
    assert agent_response(list(CONTEXT), "Triage", live=True).live
    assert agent_response(list(CONTEXT), "Triage", part_done=True).part_done


def test_session_agents_share_one_routing_table_per_class() -> None:
    class Extra(SessionAgent):
        def __init__(self) -> None:
            super().__init__("extra")

        @message_handler
        async def on_login(self, message: UserLogin, ctx: MessageContext) -> None: ...

    class MoreExtra(Extra):
        @message_handler
        async def on_event(self, message: HandoffEvent, ctx: MessageContext) -> None: ...

    a, b, c = Extra(), Extra(), MoreExtra()
    assert a._handlers is b._handlers
    assert set(a._handlers) == {UserLogin}
    assert set(c._handlers) == {UserLogin, HandoffEvent}
    assert a._description == "extra"
    assert issubclass(AIAgent, SessionAgent) and issubclass(UserAgent, SessionAgent)


def test_session_topics_and_known_agent_ids_equal_the_checked_ones() -> None:
    for _ in range(2):  # the first call checks the topic type, the next ones skip the check
        topic = session_topic("SalesAgent", "s1")
        assert topic == TopicId("SalesAgent", "s1") and hash(topic) == hash(TopicId("SalesAgent", "s1"))
        assert (topic.type, topic.source, str(topic)) == ("SalesAgent", "s1", "SalesAgent/s1")
    with pytest.raises(FrozenInstanceError):
        topic.source = "s2"  # type: ignore[misc]
    for _ in range(2):
        with pytest.raises(ValueError, match="Invalid topic type"):
            session_topic("not a topic type", "s1")
    agent_id = known_agent_id("SalesAgent", "s1")
    assert agent_id == AgentId("SalesAgent", "s1") and hash(agent_id) == hash(AgentId("SalesAgent", "s1"))
    assert (agent_id.type, agent_id.key, repr(agent_id)) == (
        "SalesAgent",
        "s1",
        repr(AgentId("SalesAgent", "s1")),
    )


def test_a_known_agent_id_and_a_stock_one_find_each_others_entries() -> None:
    """The runtime keys its agents by known ids; a stock id from a program's own code (``send_message``,
    ``agent_save_state``) must find them, and a known id what a stock one stored, without the stock
    ``__hash__`` call a known id saves."""
    known, stock = known_agent_id("SalesAgent", "s1"), AgentId("SalesAgent", "s1")
    assert {known: "agent"}[stock] == "agent" and {stock: "agent"}[known] == "agent"
    assert known != AgentId("SalesAgent", "s2") and AgentId("TriageAgent", "s1") != known
    assert str(known) == "SalesAgent/s1" and f"{known}" == str(stock)
    kind: Any = type(known)
    assert kind.__hash__ is tuple.__hash__ and kind.__eq__ is tuple.__eq__  # C, not Python


class _Counter(RoutedAgent):
    def __init__(self) -> None:
        super().__init__("counts what it gets")
        self.got = 0

    @message_handler
    async def on_login(self, message: UserLogin, ctx: MessageContext) -> None:
        self.got += 1


async def test_an_agent_built_for_a_known_id_answers_a_stock_id() -> None:
    runtime = HandoffsRuntime()
    await _Counter.register(runtime, "Counter", _Counter)
    await runtime.add_subscription(TypeSubscription("Counter", "Counter"))
    runtime.start()
    await runtime.publish_message(UserLogin(), session_topic("Counter", "s1"))
    await runtime.stop_when_idle()
    (built,) = private.runtime_state(runtime)[0]
    assert type(built) is private.KnownAgentId
    agent = await runtime.try_get_underlying_agent_instance(AgentId("Counter", "s1"), _Counter)
    assert agent.got == 1 and len(private.runtime_state(runtime)[0]) == 1  # found, not built again
    assert release_session(runtime, "s1") == 1 and not private.runtime_state(runtime)[0]


def test_the_shortcuts_build_what_model_construct_builds() -> None:
    """``user_task`` and ``agent_response`` set a model's state directly: exactly what ``model_construct``
    sets for models without aliases, extra fields, private attributes or a post-init hook."""
    for model in (UserTask, AgentResponse):
        assert model.model_config.get("extra") != "allow" and not model.__private_attributes__
        assert not model.__pydantic_post_init__ and not model.__pydantic_root_model__
        assert all(f.alias is None and f.validation_alias is None for f in model.model_fields.values())
    usage = Usage.EMPTY
    pairs = [
        (
            user_task(list(CONTEXT), ["Triage"], usage),
            UserTask.model_construct(
                context=list(CONTEXT), turn_path=["Triage"], trace=None, usage=usage, turn_spent=0.0
            ),
        ),
        (
            agent_response(list(CONTEXT), "Sales", usage, live=True),
            AgentResponse.model_construct(
                reply_to_topic_type="Sales",
                context=list(CONTEXT),
                trace=None,
                usage=usage,
                live=True,
                part_done=None,
            ),
        ),
    ]
    for fast, constructed in pairs:
        assert fast == constructed and repr(fast) == repr(constructed)
        assert fast.model_fields_set == constructed.model_fields_set
        assert (fast.__pydantic_extra__, fast.__pydantic_private__) == (None, None)
        assert fast.model_dump_json() == constructed.model_dump_json()


def test_models_built_by_the_shortcut_share_one_fields_set_that_assignment_leaves_alone() -> None:
    """The shortcut gives every model of a class the same set of all its fields (a set per message is
    memory a session in flight carries): assigning a field, pydantic's one change to it, changes nothing."""
    first, second = user_task(list(CONTEXT), ["Triage"]), user_task(list(CONTEXT), ["Sales"])
    assert first.model_fields_set is second.model_fields_set
    first.turn_path = ["Triage", "Sales"]
    assert second.model_fields_set == set(UserTask.model_fields) and second.turn_path == ["Sales"]


def test_a_model_call_is_built_as_the_dataclass_would_build_it() -> None:
    """``ModelCall`` writes its fields itself (one is built per model call), and stays frozen."""
    fields = [f.name for f in dataclasses.fields(ModelCall)]
    assert list(inspect.signature(ModelCall).parameters) == fields
    call = ModelCall("Sales", "s1", frozenset({"transfer_to_triage"}))
    assert dataclasses.astuple(call) == ("Sales", "s1", frozenset({"transfer_to_triage"}))
    assert call == ModelCall("Sales", "s1", frozenset({"transfer_to_triage"})) and hash(call) == hash(
        ModelCall("Sales", "s1", frozenset({"transfer_to_triage"}))
    )
    with pytest.raises(FrozenInstanceError):
        call.agent = "Triage"  # type: ignore[misc]


def test_a_tool_context_is_built_as_the_dataclass_would_build_it() -> None:
    """``ToolContext`` writes its fields itself (one is built per turn): its parameters are the dataclass's
    fields, in order, with their defaults, and it stays frozen."""
    assert list(inspect.signature(ToolContext).parameters) == [
        f.name for f in dataclasses.fields(ToolContext)
    ]
    context = ToolContext("s1", "Sales", None)
    assert (context.runtime, context.agent_id, context.depth) == (None, None, 0)
    assert context.tally == TurnTally() and context.tally is not ToolContext("s1", "Sales", None).tally
    assert dataclasses.replace(context, depth=1) == ToolContext("s1", "Sales", None, depth=1)
    values = ("s2", "Triage", None, None, AgentId("Triage", "s2"), 2, TurnTally(workers=1))
    given = ToolContext(*values)  # each value lands in its own field
    assert tuple(getattr(given, f.name) for f in dataclasses.fields(ToolContext)) == values
    with pytest.raises(FrozenInstanceError):
        context.depth = 1  # type: ignore[misc]


def test_a_new_entry_is_built_as_the_dataclass_would_build_it() -> None:
    """``NewEntry`` writes its fields itself (several are made per turn): its parameters are the
    dataclass's fields, in order, the message is left out of equality, and it stays frozen."""
    assert list(inspect.signature(NewEntry).parameters) == [f.name for f in dataclasses.fields(NewEntry)]
    said = UserMessage(content="hi", source="user")
    entry = NewEntry("Triage", "user", {"content": "hi"}, said)
    assert (entry.agent, entry.kind, entry.body, entry.message) == ("Triage", "user", {"content": "hi"}, said)
    assert (
        entry == NewEntry("Triage", "user", {"content": "hi"}) and NewEntry("a", "notice", {}).message is None
    )
    with pytest.raises(FrozenInstanceError):
        entry.agent = "Sales"  # type: ignore[misc]


def test_a_handoff_event_from_an_agent_equals_the_validated_one() -> None:
    values: dict[str, Any] = {
        "session_id": "s1",
        "source": "Triage",
        "target": "Sales",
        "tool": "transfer_to_sales",
        "outcome": "handoff",
        "arguments": {"reason": "buy"},
        "hop": 1,
        "reason": "",
        "kind": "",
        "said": "Passing you on.",
        "returns": False,
    }
    fast = handoff_event(dict(values))
    assert fast == HandoffEvent(**values) and fast.model_fields_set == HandoffEvent(**values).model_fields_set
    assert fast.model_dump() == HandoffEvent(**values).model_dump()
    assert tuple(values) == tuple(HandoffEvent.model_fields)  # if this fails, a field was added: pass it
    with pytest.raises(ValidationError):  # anything else is validated as before
        handoff_event({**values, "outcome": "sideways"})
    assert handoff_event({**values, "hop": True}).hop == 1
