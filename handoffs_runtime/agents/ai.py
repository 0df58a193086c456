"""``AIAgent``: a specialist that answers with a model, runs its tools, and hands the conversation on.

One turn, as an explicit loop::

    model(system + context, tools + enabled handoffs)
      text            -> AgentResponse to the User topic (the person's next message comes back here)
      tool calls      -> run the regular ones (errors become tool results), then
                         one handoff call -> UserTask to the target's topic, same session; done
                         no handoff       -> ask the model again (at most ``max_tool_rounds`` times)

The loop itself is :class:`~handoffs_runtime.agents.toolloop.ToolLoop`, shared with ``WorkerAgent``. The
agent gives it a ``HandoffDecider`` for the turn (:class:`_TurnDecider`: one handoff per response, its
input checked, the loop guard) and reads how the turn ended with one ``match`` (:meth:`AIAgent._end_turn`).
Everything the model may get wrong (a malformed response, unknown tool, bad JSON, bad arguments, a tool
that raises, several handoffs, an empty reply, a model error or timeout) becomes a tool result or a clear
message; anything else that fails in a turn is logged and apologised for in ``handle_task``, so the
session goes on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, assert_never, get_args

from autogen_core import FunctionCall, MessageContext, message_handler
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    FunctionExecutionResult,
    LLMMessage,
    SystemMessage,
)
from autogen_core.tools import Tool
from pydantic import BaseModel, ValidationError

from handoffs_runtime.agents.routing import SessionAgent
from handoffs_runtime.agents.toolcalls import describe_validation, error_result, parse_arguments
from handoffs_runtime.agents.toolloop import ToolLoop
from handoffs_runtime.agents.trim import TRIMMED_NOTICE, newly_trimmed
from handoffs_runtime.agents.turn import (
    GuardStop,
    HandedOff,
    HandoffCalls,
    HandoffDecision,
    LoopStopped,
    ModelFailed,
    OutOfRounds,
    OutOfTime,
    OverBudget,
    Replied,
    Transfer,
    TurnEnd,
)
from handoffs_runtime.channels.base import Channel
from handoffs_runtime.handoffs.filters import nesting_filter
from handoffs_runtime.handoffs.handoff import Handoff, HandoffContext, HandoffInputData, call_maybe_async
from handoffs_runtime.handoffs.policy import LOOP_MESSAGE, TeamPolicy, loop_reason
from handoffs_runtime.messages import (
    HandoffEvent,
    HandoffOutcome,
    Notice,
    UserTask,
    agent_response,
    user_task,
)
from handoffs_runtime.models.failures import (
    SLOW_MODEL_REPLY,
    TURN_TIME_REPLY,
    ModelProblem,
    explain_model_error,
    missed_its_deadline,
)
from handoffs_runtime.private import constructed_model
from handoffs_runtime.tools.context import ToolContext, set_tool_context
from handoffs_runtime.topics import HANDOFF_EVENTS, USER, session_topic
from handoffs_runtime.usage import BUDGET_REPLY, Usage

logger = logging.getLogger("handoffs_runtime")

MODEL_ERROR_REPLY = "Sorry, I'm having trouble answering right now. Please try again in a moment."
EMPTY_REPLY = "Sorry, I could not get an answer from the model this time; the fault is on our side."
TOO_MANY_ROUNDS_REPLY = (
    "Sorry, I could not finish this: my tools did not get me any closer to an answer. The fault is on "
    "our side, not in what you said."
)
ONE_HANDOFF = "ignored: only one handoff per response is carried out"
MODEL_PROBLEM_NOTICE = "⚠ the language model could not answer"
"""The notice whose detail tells whoever runs the team what is wrong with the model (see
:class:`~handoffs_runtime.models.failures.ModelProblem`)."""


@dataclass(frozen=True)
class AIAgentConfig:
    """Everything an ``AIAgent`` of one type needs, built once per team and shared by all sessions."""

    name: str
    system_message: SystemMessage
    model: ChatCompletionClient
    tools: Mapping[str, Tool] = field(default_factory=dict)
    handoffs: Mapping[str, Handoff] = field(default_factory=dict)
    policy: TeamPolicy = field(default_factory=TeamPolicy)
    channel: Channel | None = None
    human_agent: str | None = None
    user_topic: str = USER
    description: str = ""
    """What the agent is for, as autogen describes the agent (a model learns it from its profile)."""
    label: str = ""
    """What people read for this agent (``AgentSpec.display_name``)."""
    loop: ToolLoop = field(init=False)
    """The model, tools, handoffs and the loop's rules (the loop is shared with ``WorkerAgent``)."""

    def __post_init__(self) -> None:
        loop = ToolLoop(
            self.name,
            self.system_message,
            self.model,
            self.tools,
            self.handoffs,
            self.policy,
            self.channel,
            self.label,
            shows_progress=True,
        )
        object.__setattr__(self, "loop", loop)  # the documented way to derive a field of a frozen dataclass


class AIAgent(SessionAgent):
    """A model-backed specialist subscribed to its own topic type. See the module docstring."""

    def __init__(self, config: AIAgentConfig) -> None:
        super().__init__(config.description or config.name)
        self._config = config
        self._session = self.id.key
        self._told: ModelProblem | None = None  # the model problem this session was last told about

    @message_handler
    async def handle_task(self, message: UserTask, ctx: MessageContext) -> None:
        """One turn: run the loop, then act on how it ended (:meth:`_end_turn`). The one guard of the
        turn: whatever fails in it is logged and apologised for. The loop is awaited here, not in a
        coroutine of its own: a session waiting for its model holds one frame fewer."""
        config = self._config
        tool_context = ToolContext(
            self._session, config.name, config.channel, runtime=self.runtime, agent_id=self.id
        )
        set_tool_context(tool_context)
        try:
            path = message.turn_path or [config.name]
            timed = config.loop.turn_deadline is not None  # else no clock is read: nothing to bound
            begun = time.monotonic() - message.turn_spent if timed else None  # carried across handoffs
            end = await config.loop.run(
                message.context,
                tool_context,
                ctx.cancellation_token,
                usage=message.usage,
                decider=_TurnDecider(self, path),
                begun=begun,
            )
            await self._end_turn(message, end, path, begun, tool_context)
        except Exception:
            logger.exception("turn of %s in session %s failed; apologising", config.name, self._session)
            spent = message.usage + tool_context.tally.usage  # what the turn spent before it failed
            await self._reply(message.context, (), MODEL_ERROR_REPLY, spent)

    async def _end_turn(
        self,
        message: UserTask,
        end: TurnEnd,
        path: list[str],
        begun: float | None,
        tool_context: ToolContext,
    ) -> None:
        """Act on how the turn ended: every kind of end is handled here, and only here."""
        config = self._config
        session = self._session
        history = end.history
        if newly_trimmed(message.context, end.history) and config.channel is not None:
            await config.channel.show(session, Notice(text=TRIMMED_NOTICE))
        match end:
            case Replied(text=text):
                if not text:
                    logger.warning("empty model reply from %s in session %s", config.name, session)
                # What ``isinstance(model, KnowsWhenDone)`` checks, without the protocol check's walk
                # over the class on every reply.
                part_done: Callable[[str], bool | None] | None = getattr(config.model, "part_done", None)
                done = part_done(session) if part_done is not None else None
                await self._reply(history, end.new, text or EMPTY_REPLY, end.usage, part_done=done)
            case HandedOff(transfer=transfer):
                spent = 0.0 if begun is None else time.monotonic() - begun - tool_context.tally.waited
                await self._hand_off(history, path, end.new, transfer, end.usage, spent)
            case LoopStopped(stop=stop):
                await self._stop_loop(path, [*history, *end.new], stop, end.usage)
            case OverBudget():
                await self._reply(history, end.new, BUDGET_REPLY, end.usage)
            case ModelFailed(exception=exception):
                await self._reply(history, end.new, await self._model_error_reply(exception), end.usage)
            case OutOfRounds():
                await self._out_of_rounds(path, [*history, *end.new], end.usage)
            case OutOfTime():
                await self._out_of_rounds(path, [*history, *end.new], end.usage, TURN_TIME_REPLY)
            case unreachable:
                assert_never(unreachable)

    async def _model_error_reply(self, exc: BaseException) -> str:
        """What is wrong with the model in plain words, said once in full; the generic apology for
        transient failures. The technical detail (endpoint, status, the server's words, credentials
        masked) goes to whoever runs the team, as a notice's detail, never into the reply."""
        if missed_its_deadline(exc):
            return SLOW_MODEL_REPLY
        problem = explain_model_error(exc)
        if problem is None:
            return MODEL_ERROR_REPLY
        if problem == self._told:
            return problem.again
        self._told = problem
        channel = self._config.channel
        if problem.detail:
            logger.warning("model problem in session %s: %s", self._session, problem.detail)
            if channel is not None:
                await channel.show(self._session, Notice(text=MODEL_PROBLEM_NOTICE, detail=problem.detail))
        return problem.first

    # --- outcomes ----------------------------------------------------------------------------------

    async def _hand_off(
        self,
        history: Sequence[LLMMessage],
        path: list[str],
        new: Sequence[LLMMessage],
        transfer: Transfer,
        usage: Usage,
        spent: float,
    ) -> None:
        """Carry the conversation to the handoff's target, with the turn's ``spent`` seconds."""
        config = self._config
        session = self._session
        handoff, call, data = transfer.handoff, transfer.call, transfer.data
        stage = "on_handoff"  # the user code that runs before the conversation moves: it may fail
        try:
            if handoff.on_handoff is not None:
                hctx = HandoffContext(session, config.name, handoff.target, [*history, *new])
                await call_maybe_async(handoff.on_handoff, *((hctx,) if data is None else (hctx, data)))
            stage = "input filter"
            context = await self._filtered(history, new, handoff, session)
        except Exception as exc:
            logger.exception("%s of %s failed", stage, handoff.tool_name)
            reason = f"{stage} failed: {type(exc).__name__}: {exc}"
            kind = f"{stage} failed: {type(exc).__name__}"
            await self._publish_event(handoff, call, "refused", len(path), reason, kind=kind)
            await self._reply(history, new, MODEL_ERROR_REPLY, usage)
            return
        payload = data.model_dump(mode="json") if data is not None else None
        await self._publish_event(handoff, call, "handoff", len(path), "", payload, transfer.said)
        task = user_task(context, [*path, handoff.target], usage, spent)
        await self.publish_message(task, topic_id=session_topic(handoff.target, session))

    async def _filtered(
        self, history: Sequence[LLMMessage], new: Sequence[LLMMessage], handoff: Handoff, session: str
    ) -> list[LLMMessage]:
        """What the target receives: the handoff's filter (else the team's), then nesting if asked for.

        As in the OpenAI Agents SDK, a filter replaces the team-wide nesting; a handoff that asks for
        nesting itself (``nest_handoff_history=True``) gets it after its filter.
        """
        policy = self._config.policy
        input_filter = handoff.input_filter if handoff.input_filter is not None else policy.input_filter
        nest = (
            policy.nest_handoff_history and input_filter is None
            if handoff.nest_handoff_history is None
            else handoff.nest_handoff_history
        )
        if input_filter is None and not nest:
            return [*history, *new]
        data = HandoffInputData(tuple(history), tuple(new), self._config.name, handoff.target, session)
        if input_filter is not None:
            data = await call_maybe_async(input_filter, data)
            if not isinstance(data, HandoffInputData):
                raise TypeError(f"the input filter returned {type(data).__name__}, not HandoffInputData")
        if nest:
            data = nesting_filter()(data)
        return data.all_items

    async def _stop_loop(
        self, path: list[str], conversation: list[LLMMessage], stop: GuardStop, usage: Usage
    ) -> None:
        """The loop guard refused a handoff: escalate to the human agent, or tell the person."""
        config = self._config
        session = self._session
        logger.warning("loop guard in session %s: %s", session, stop.reason)
        human = config.human_agent
        escalate = config.policy.on_loop == "escalate" and human is not None and human != config.name
        reason = stop.reason if not escalate else f"{stop.reason}; escalated to {human}"
        await self._publish_event(stop.handoff, stop.call, "loop_stopped", len(path), reason, kind=reason)
        if escalate and human is not None:
            task = user_task(conversation, [*path, human], usage)
            await self.publish_message(task, topic_id=session_topic(human, session))
            return
        await self._reply(conversation, (), LOOP_MESSAGE, usage)

    async def _out_of_rounds(
        self,
        path: list[str],
        conversation: list[LLMMessage],
        usage: Usage,
        text: str = TOO_MANY_ROUNDS_REPLY,
    ) -> None:
        """The tools got the turn nowhere (or its time is spent): the human agent takes over where the
        team escalates loops, else the person is told ``text`` plainly (never asked to say it again:
        they did nothing wrong)."""
        config = self._config
        human = config.human_agent
        if config.policy.on_loop == "escalate" and human is not None and human != config.name:
            logger.warning(
                "%s made no progress in session %s; handing to %s", config.name, self._session, human
            )
            task = user_task(conversation, [*path, human], usage)
            await self.publish_message(task, topic_id=session_topic(human, self._session))
            return
        await self._reply(conversation, (), text, usage)

    async def _reply(
        self,
        history: Sequence[LLMMessage],
        new: Sequence[LLMMessage],
        text: str,
        usage: Usage,
        *,
        part_done: bool | None = None,
    ) -> None:
        """Answer the person with ``text`` after the turn's ``new`` messages."""
        config = self._config
        context = [*history, *new, AssistantMessage(content=text, source=config.name)]
        response = agent_response(context, config.name, usage, part_done=part_done)
        await self.publish_message(response, topic_id=session_topic(config.user_topic, self._session))

    async def _publish_event(
        self,
        handoff: Handoff,
        call: FunctionCall,
        outcome: HandoffOutcome,
        hop: int,
        reason: str,
        arguments: dict[str, Any] | None = None,
        said: str | None = None,
        kind: str = "",
    ) -> None:
        """``kind`` is ``reason`` with nothing quoted from the conversation: what telemetry records."""
        session = self._session
        values = {
            "session_id": session,
            "source": self._config.name,
            "target": handoff.target,
            "tool": call.name,
            "outcome": outcome,
            "arguments": arguments,
            "hop": hop,
            "reason": reason,
            "kind": kind,
            "said": said or "",
            "returns": handoff.returns and outcome == "handoff",
        }
        await self.publish_message(handoff_event(values), topic_id=session_topic(HANDOFF_EVENTS, session))


class _TurnDecider:
    """The agent's :class:`~handoffs_runtime.agents.turn.HandoffDecider` for one turn: at most one
    handoff per response, its input checked, then the loop guard, which reads the turn's path (who held
    the conversation since the person last spoke). Refusals are published as handoff events."""

    __slots__ = ("_agent", "_path")  # built on every turn: a plain class is the cheapest

    def __init__(self, agent: AIAgent, path: list[str]) -> None:
        self._agent = agent
        self._path = path

    async def decide(self, request: HandoffCalls) -> HandoffDecision:
        """The first call is checked and, unless refused, carried out or stopped by the loop guard; any
        further one is refused. Every call gets a result."""
        agent = self._agent
        config = agent._config
        results: list[FunctionExecutionResult] = []
        ends_turn: Transfer | GuardStop | None = None
        for rank, call in enumerate(request.calls):
            if rank > 0:
                results.append(error_result(call, ONE_HANDOFF))
                continue
            checked = await self._check(call, request.enabled)
            if isinstance(checked, str):
                results.append(error_result(call, checked))
                continue
            handoff, data = checked
            reason = loop_reason(self._path, handoff.target, config.policy.handoff_budget)
            if reason is not None:
                ends_turn = GuardStop(handoff, call, reason)
                results.append(error_result(call, f"handoff refused: {reason}"))
                continue
            ends_turn = Transfer(handoff, call, data, request.said)
            done = f"Transferred to {handoff.target}. Adopt persona immediately."
            results.append(FunctionExecutionResult(call_id=call.id, name=call.name, content=done))
        await self._ignored(request.calls[1:])
        return HandoffDecision(results, ends_turn)

    async def _ignored(self, calls: Sequence[FunctionCall]) -> None:
        """The handoff calls after a response's first, refused in one event however many there are (a
        model that sends thousands must not send the person thousands of lines)."""
        if not calls:
            return
        first = calls[0]
        reason = ONE_HANDOFF if len(calls) == 1 else f"{ONE_HANDOFF} ({len(calls):,} calls ignored)"
        handoff = self._agent._config.handoffs[first.name]
        await self._agent._publish_event(handoff, first, "refused", 0, reason, kind=ONE_HANDOFF)

    async def _check(
        self, call: FunctionCall, enabled: frozenset[str]
    ) -> tuple[Handoff, BaseModel | None] | str:
        """The handoff and its validated input, or the reason it is refused (sent back as a tool result)."""
        agent = self._agent
        handoff = agent._config.handoffs[call.name]
        if call.name not in enabled:
            disabled = "handoff is disabled"
            await agent._publish_event(handoff, call, "refused", 0, disabled, kind=disabled)
            return f"{call.name} is not available right now; do not call it"
        args = parse_arguments(call)
        if isinstance(args, str):
            kind = "arguments are not valid JSON" if "not valid JSON" in args else "arguments not an object"
            await agent._publish_event(handoff, call, "refused", 0, args, kind=kind)
            return args
        try:
            data = handoff.validate_input(call.arguments)
        except ValidationError as exc:
            reason = f"invalid arguments for {call.name}: {describe_validation(exc)}"
            kind = f"validation failed: {_fields(exc, handoff)}"
            await agent._publish_event(handoff, call, "refused", 0, reason, kind=kind)
            return reason
        return handoff, data


_EVENT_FIELDS = tuple(HandoffEvent.model_fields)
_OUTCOMES = frozenset(get_args(HandoffOutcome))
_STR = frozenset((str,))


def handoff_event(values: dict[str, Any]) -> HandoffEvent:
    """``HandoffEvent(**values)``; without validation (it costs as much as the rest of building the event
    and publishing it) when ``values`` holds every field in order, each exactly of the type it declares:
    what an agent builds. Anything else is validated as before."""
    arguments = values["arguments"]
    texts = (values["session_id"], values["source"], values["target"], values["tool"], values["outcome"])
    if (
        tuple(values) == _EVENT_FIELDS
        and _STR.issuperset(map(type, (*texts, values["reason"], values["kind"], values["said"])))
        and values["outcome"] in _OUTCOMES
        and type(values["hop"]) is int
        and type(values["returns"]) is bool
        and (arguments is None or (type(arguments) is dict and _STR.issuperset(map(type, arguments))))
    ):
        return constructed_model(HandoffEvent, values)
    return HandoffEvent(**values)


def _fields(exc: ValidationError, handoff: Handoff) -> str:
    """The input type's fields that failed, without the values (another key the model sent is not named)."""
    declared = handoff.input_type.model_fields if handoff.input_type is not None else {}
    names = [str(e["loc"][0]) if e["loc"] and e["loc"][0] in declared else "other" for e in exc.errors()]
    return ", ".join(dict.fromkeys(names)) or "input"
