"""The tool loop that ``AIAgent`` and ``WorkerAgent`` share: one turn, classified, then acted on.

One turn::

    model(system + conversation, tools + enabled handoffs)   (at most ``policy.max_tool_rounds`` times)
      text        -> Replied
      tool calls  -> sorted (agents/replies.py): regular, handoff, unknown
                     regular: run (at once unless ``policy.concurrent_tool_calls`` is off)
                     unknown: an error result naming what was offered
                     handoff: the agent's HandoffDecider decides (a worker has none)
                     -> HandedOff or LoopStopped when the decision ends the turn, else ask again
      error       -> ModelFailed: the model raised or missed its deadline
    before each model call: OverBudget past the token budget; after the last round: OutOfRounds
    before each model call and before a response's tools run: OutOfTime once the turn's time
    (``policy.turn_deadline``) is spent; a call in flight finishes within its own deadline, and a
    handoff it chose still goes (its target ends the turn at once, and holds the conversation)
    a repeated call (same tool, same normalised arguments) is answered from memory; ``stalled_rounds``
    rounds in a row without a result not seen before: OutOfRounds at once (see :mod:`.progress`)
    an empty reply: asked once more with ``tool_choice="none"``; a reply that is just an offered tool's
    name (``functions.NAME:``) is that call (see :func:`~.replies.named_call`)

Every call gets a result, in call order, cut to the size cap. The ends are the closed union
:data:`~handoffs_runtime.agents.turn.TurnEnd`. The agents' message handlers keep the last guarantee:
whatever still goes wrong in a turn is logged and answered (an apology, a failed ``WorkerResult``),
never left to end the session silently.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    CreateResult,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    RequestUsage,
    SystemMessage,
)
from autogen_core.tools import Tool, ToolSchema

from handoffs_runtime.agents import turn
from handoffs_runtime.agents.ledgered import LedgerTurn
from handoffs_runtime.agents.once import OnceATurn
from handoffs_runtime.agents.person import PersonChannel
from handoffs_runtime.agents.progress import ProgressGuard
from handoffs_runtime.agents.proposals import answered, asks_first, refusal
from handoffs_runtime.agents.replies import (
    HeldWhileAName,
    Reply,
    ToolCalls,
    read_reply,
    sort_calls,
    too_many_calls,
)
from handoffs_runtime.agents.streaming import StreamReader, read_within
from handoffs_runtime.agents.toolcalls import capped, error_result, run_tool_call, unknown_tool_result
from handoffs_runtime.agents.trim import answer_trimmed
from handoffs_runtime.channels.base import Channel
from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.handoffs.handoff import Handoff, SessionContext, call_maybe_async
from handoffs_runtime.handoffs.policy import TeamPolicy
from handoffs_runtime.messages import Delta, ToolFinished, ToolStarted
from handoffs_runtime.models.capabilities import EndpointCapabilities
from handoffs_runtime.models.local import AnswersPromptly, ModelCall, model_call_scope
from handoffs_runtime.models.redaction import redact
from handoffs_runtime.sessions.effects import LedgerStore, ledger_of
from handoffs_runtime.text import well_formed
from handoffs_runtime.tools.context import ToolContext
from handoffs_runtime.tools.effects import irreversible_names
from handoffs_runtime.usage import Usage

logger = logging.getLogger("handoffs_runtime")

_NO_HANDOFFS: Mapping[str, Handoff] = {}
CONCURRENT_CALLS = 8
"""The most regular calls of one response that run at the same time; the others wait for a turn."""


@dataclass(frozen=True)
class ToolLoop:
    """One agent type's model, tools, handoffs and the rules of its loop; shared by all its instances."""

    name: str
    system_message: SystemMessage
    model: ChatCompletionClient
    tools: Mapping[str, Tool] = field(default_factory=dict)
    handoffs: Mapping[str, Handoff] = field(default_factory=dict)
    """By tool name; offered while enabled, decided on by the turn's ``HandoffDecider``."""
    policy: TeamPolicy = field(default_factory=TeamPolicy)
    channel: Channel | None = None
    label: str = ""
    """What people read for this agent (its display name), on its progress events."""
    shows_progress: bool = False
    """Whether text deltas and tool activity go to ``channel`` as they happen (an agent that talks to the
    person, on a channel that shows progress); a worker's do not."""
    irreversible: frozenset[str] = field(init=False)
    """The tools marked irreversible: each runs at most once a turn with the same arguments."""
    asking: frozenset[str] = field(init=False)
    """The tools whose calls are put to a person before they run (irreversible, or approved): a call of
    one is checked against the tool's types first (see :mod:`.proposals`)."""
    effects: LedgerStore | None = field(init=False)
    """The store that keeps the effect ledger, when the agent has irreversible tools and the channel's
    store keeps one: each of their calls goes through it (see :mod:`.ledgered`); else nothing does."""
    model_timeout: float | None = field(init=False)
    """The policy's per-call timeout, or ``None`` for a model that answers promptly (in-process)."""
    turn_deadline: float | None = field(init=False)
    """The seconds a turn may spend (:meth:`TeamPolicy.turn_limit`), or ``None``: no limit."""
    _progress: Channel | None = field(init=False)
    _schemas: tuple[ToolSchema, ...] = field(init=False)
    _static: tuple[tuple[ToolSchema, ...], frozenset[str]] | None = field(init=False)
    """Every schema and handoff name, when no handoff is enabled by a function: nothing to compute per
    call."""

    def __post_init__(self) -> None:
        set_field = object.__setattr__  # the documented way to derive fields of a frozen dataclass
        set_field(self, "irreversible", irreversible_names(self.tools.values()))
        set_field(self, "asking", frozenset(t.name for t in self.tools.values() if asks_first(t)))
        store = self.channel.store if isinstance(self.channel, PersonChannel) else None
        set_field(self, "effects", ledger_of(store) if self.irreversible else None)
        prompt = isinstance(self.model, AnswersPromptly) and self.model.answers_promptly is True
        set_field(self, "model_timeout", None if prompt else self.policy.model_timeout)
        set_field(self, "turn_deadline", self.policy.turn_limit(call_deadline=not prompt))
        channel = self.channel
        shows = self.shows_progress and channel is not None and channel.shows_progress
        set_field(self, "_progress", channel if shows else None)
        schemas = tuple(t.schema for t in self.tools.values())
        set_field(self, "_schemas", schemas)
        static = all(h.always_enabled for h in self.handoffs.values())
        every = (schemas + tuple(h.schema for h in self.handoffs.values()), frozenset(self.handoffs))
        set_field(self, "_static", every if static else None)
        _say_what_the_endpoint_can_do(self.model, self.policy)

    async def run(
        self,
        history: list[LLMMessage],
        context: ToolContext,
        cancellation_token: CancellationToken,
        *,
        usage: Usage = Usage.EMPTY,
        decider: turn.HandoffDecider | None = None,
        begun: float | None = None,
    ) -> turn.TurnEnd:
        """Ask the model, act on its calls, repeat until it answers, a decision ends the turn, or the
        rounds run out.

        ``context`` is the one the agent set for its tools; the turn's tokens (its model calls, the
        workers its tools create) are counted in ``context.tally.usage`` as they are spent. ``usage`` is
        the session's count before the turn; the end carries it with the turn's added. Past the policy's
        ``token_budget`` the loop ends (``OverBudget``) instead of calling the model again. Without a
        ``decider`` (a worker), calls to handoffs are calls to unknown tools.

        ``begun`` is when the turn began on :func:`time.monotonic`'s clock (earlier than now by what the
        agents before this one spent; now when ``None``): past ``turn_deadline`` from it, minus the time
        its tools waited for a person, no new model call or tool round starts (``OutOfTime``). The clock
        is read before each model call and before a response's tools run, nowhere else.
        """
        new: list[LLMMessage] = []  # handed to the end as it is: nothing changes it after
        tally = context.tally
        policy = self.policy
        once = self._once(context) if self.irreversible else None
        guard = ProgressGuard(policy.stalled_rounds) if self.tools else None  # else built if a round goes on
        ends = None
        if self.turn_deadline is not None:
            ends = (time.monotonic() if begun is None else begun) + self.turn_deadline
        for _ in range(policy.max_tool_rounds):
            if policy.token_budget is not None and (usage + tally.usage).over(policy.token_budget):
                return turn.OverBudget(history, new, usage + tally.usage)
            if ends is not None and self._out_of_time(ends, context):
                return turn.OutOfTime(history, new, usage + tally.usage)
            offer = self._static or await self._enabled_now(context.session_id, history + new)
            try:
                with self._scope(context, offer):
                    result = await self._answer(context, history + new, offer, cancellation_token)
            except Exception as exc:
                try:
                    result, history = await self._ask_trimmed(
                        exc, context, history, new, offer, cancellation_token
                    )
                except Exception as failure:
                    logger.exception("model call failed for %s in session %s", self.name, context.session_id)
                    failed = self._describe_failure(failure)
                    return turn.ModelFailed(history, new, usage + tally.usage, failed, failure)
            reply = self._read(result, context, offer[0])
            if ends is not None and _runs_tools(reply, offer[1]) and self._out_of_time(ends, context):
                return turn.OutOfTime(history, new, usage + tally.usage)  # too late for a tool round
            if reply == "" and offer[0]:
                if ends is not None and self._out_of_time(ends, context):
                    return turn.OutOfTime(history, new, usage + tally.usage)
                try:
                    reply = await self._in_words(context, history + new, offer, cancellation_token)
                except Exception as exc:
                    logger.exception("asking %s again in words failed in %s", self.name, context.session_id)
                    failed = self._describe_failure(exc)
                    return turn.ModelFailed(history, new, usage + tally.usage, failed, exc)
            if isinstance(reply, str):
                return turn.Replied(history, new, usage + tally.usage, reply)
            acting = self._act(reply, offer[1], context, decider, once, guard, cancellation_token)
            results, ending = await acting
            new.append(AssistantMessage(content=reply.calls, thought=reply.thought, source=self.name))
            new.append(FunctionExecutionResultMessage(content=results))
            match ending:
                case turn.Transfer():
                    return turn.HandedOff(history, new, usage + tally.usage, ending)
                case turn.GuardStop():
                    return turn.LoopStopped(history, new, usage + tally.usage, ending)
            if guard is None:
                guard = ProgressGuard(policy.stalled_rounds)
            if guard.stalled(results):
                logger.warning(
                    "%s made no progress in %d rounds in session %s; ending the turn",
                    self.name,
                    policy.stalled_rounds,
                    context.session_id,
                )
                break
        return turn.OutOfRounds(history, new, usage + tally.usage)

    def _out_of_time(self, ends: float, context: ToolContext) -> bool:
        """Whether the turn has spent its time (``ends``), the time its tools waited for a person not
        counted; logged when it has."""
        if time.monotonic() < ends + context.tally.waited:
            return False
        logger.warning(
            "%s spent the turn's %g s in session %s; no further model call or tool round starts",
            self.name,
            self.turn_deadline,
            context.session_id,
        )
        return True

    def _once(self, context: ToolContext) -> OnceATurn:
        """The turn's guard of its irreversible calls; through the effect ledger when there is one."""
        store = self.effects
        return OnceATurn() if store is None else OnceATurn(LedgerTurn(store, context))

    def _read(self, result: object, context: ToolContext, offered: Sequence[ToolSchema]) -> Reply:
        """The reply of a model call (see :func:`~.replies.read_reply`), the tokens it reported added to
        the turn's tally."""
        reported = getattr(result, "usage", None)  # the result is untrusted: it may be anything
        if isinstance(reported, RequestUsage) and (reported.prompt_tokens or reported.completion_tokens):
            context.tally.usage += Usage.reported(self.name, reported)
        return read_reply(result, self.policy.max_reply_chars, offered)

    async def _in_words(
        self,
        context: ToolContext,
        conversation: list[LLMMessage],
        offer: tuple[tuple[ToolSchema, ...], frozenset[str]],
        cancellation_token: CancellationToken,
    ) -> Reply:
        """An empty reply asked for once more, in words (``tool_choice="none"``): some servers answer
        nothing at all when tools are offered; the person did nothing wrong, so is not asked to."""
        logger.warning(
            "empty reply from %s in session %s; asking once more in words", self.name, context.session_id
        )
        with self._scope(context, offer):
            result = await self._answer(context, conversation, offer, cancellation_token, in_words=True)
        return self._read(result, context, offer[0])

    async def _ask_trimmed(
        self,
        failure: Exception,
        context: ToolContext,
        history: list[LLMMessage],
        new: list[LLMMessage],
        offer: tuple[tuple[ToolSchema, ...], frozenset[str]],
        cancellation_token: CancellationToken,
    ) -> tuple[object, list[LLMMessage]]:
        """After a model call failed with ``failure``: the answer to the history trimmed to fit, and that
        history, when the server said it is too long (see :func:`.trim.answer_trimmed`); else the failure.
        The first call is the loop's own, so that a turn that needs no trimming awaits no coroutine more."""
        if not self.policy.trim_context:
            raise failure
        fixed = len(self.system_message.content) + len(json.dumps(offer[0]))

        async def ask(conversation: list[LLMMessage]) -> object:
            with self._scope(context, offer):
                return await self._answer(context, conversation, offer, cancellation_token)

        return await answer_trimmed(failure, history, new, fixed, ask, context.session_id, self.name)

    async def _enabled_now(
        self, session: str, conversation: Sequence[LLMMessage]
    ) -> tuple[tuple[ToolSchema, ...], frozenset[str]]:
        """The tool schemas offered to the model now, and the names of the handoffs among them, when
        some handoff is enabled by a function of the conversation."""
        ctx = SessionContext(session_id=session, agent=self.name, conversation=conversation)
        enabled = [h for h in self.handoffs.values() if await _is_enabled(h, ctx)]
        return self._schemas + tuple(h.schema for h in enabled), frozenset(h.tool_name for h in enabled)

    async def _act(
        self,
        reply: ToolCalls,
        enabled: frozenset[str],
        context: ToolContext,
        decider: turn.HandoffDecider | None,
        once: OnceATurn | None,
        guard: ProgressGuard | None,
        cancellation_token: CancellationToken,
    ) -> tuple[list[FunctionExecutionResult], turn.Transfer | turn.GuardStop | None]:
        """A result per call, in call order and cut to the size cap, and the decision's end of the turn,
        if any. The regular calls run first; the decider sees the handoff calls after them, as the person
        does."""
        regular, handoffs, unknown, refused = sort_calls(
            reply.calls, self.tools, self.handoffs if decider is not None else _NO_HANDOFFS
        )
        results: list[FunctionExecutionResult | None] = [None] * len(reply.calls)
        for i, call in unknown:
            results[i] = unknown_tool_result(call, [*self.tools, *enabled])
        for i, call in refused:
            results[i] = error_result(call, too_many_calls(len(reply.calls)))
        if regular:  # calls of ``self.tools``: the turn built its guard
            assert guard is not None
            await self._run_regular(regular, results, context, once, guard, cancellation_token)
        ending: turn.Transfer | turn.GuardStop | None = None
        if handoffs and decider is not None:
            decision = await decider.decide(
                turn.HandoffCalls([call for _, call in handoffs], enabled, reply.thought)
            )
            for (i, _), result in zip(handoffs, decision.results, strict=True):
                results[i] = result
            ending = decision.ends_turn
        max_chars = self.policy.max_reply_chars
        return [capped(r, max_chars) for r in results if r is not None], ending

    async def _run_regular(
        self,
        runs: list[tuple[int, Tool, FunctionCall]],
        results: list[FunctionExecutionResult | None],
        context: ToolContext,
        once: OnceATurn | None,
        guard: ProgressGuard,
        cancellation_token: CancellationToken,
    ) -> None:
        """Fill in the results of the regular calls.

        Several regular calls of one response run at once, as in the OpenAI Agents SDK (their results
        stay in call order), at most ``CONCURRENT_CALLS`` at a time; ``policy.concurrent_tool_calls=False``
        runs them one at a time. Questions to the person are asked one at a time either way (see
        :func:`~handoffs_runtime.tools.context.ask_person`).
        """
        if len(runs) > 1 and self.policy.concurrent_tool_calls:
            slots = asyncio.Semaphore(CONCURRENT_CALLS)

            async def run_one(tool: Tool, call: FunctionCall) -> FunctionExecutionResult:
                async with slots:
                    return await self._run_one(tool, call, context, once, guard, cancellation_token)

            done = await asyncio.gather(*(run_one(t, c) for _, t, c in runs))
            for (i, _, _), result in zip(runs, done, strict=True):
                results[i] = result
        else:
            for i, tool, call in runs:
                results[i] = await self._run_one(tool, call, context, once, guard, cancellation_token)

    async def _run_one(
        self,
        tool: Tool,
        call: FunctionCall,
        context: ToolContext,
        once: OnceATurn | None,
        guard: ProgressGuard,
        cancellation_token: CancellationToken,
    ) -> FunctionExecutionResult:
        """One regular call; an irreversible one at most once a turn with the same arguments (see
        :mod:`.once`), any other answered from memory when repeated (see :mod:`.progress`). A call that
        asks a person first is checked against the tool's types before (see :mod:`.proposals`)."""
        run = self._run_shown
        if call.name in self.asking:
            refused = refusal(tool, call, self.name, context.session_id)
            if refused is not None:  # a repeat of it is answered from memory, as a failed call is
                return await guard.run(call, partial(answered, refused), ran=False)
        if once is not None and call.name in self.irreversible:
            return await once.run(tool, call, lambda: run(tool, call, context, cancellation_token))
        return await guard.run(call, lambda: run(tool, call, context, cancellation_token))

    async def _run_shown(
        self, tool: Tool, call: FunctionCall, context: ToolContext, cancellation_token: CancellationToken
    ) -> FunctionExecutionResult:
        """Run one call; a channel that shows progress is told when it starts and finishes."""
        progress = self._progress
        if progress is None:
            return await run_tool_call(tool, call, cancellation_token)
        await progress.show(context.session_id, ToolStarted.of(call, agent=self.name, label=self.label))
        result = await run_tool_call(tool, call, cancellation_token)
        await progress.show(context.session_id, ToolFinished.of(result, agent=self.name, label=self.label))
        return result

    def _describe_failure(self, exc: Exception) -> str:
        """What failed, for a worker's caller (a model) and the log: credentials masked."""
        if isinstance(exc, TimeoutError) and not str(exc):
            return f"TimeoutError: no answer within {self.model_timeout:g} s"
        return redact(f"{type(exc).__name__}: {exc}")

    def _scope(
        self, context: ToolContext, offer: tuple[tuple[ToolSchema, ...], frozenset[str]]
    ) -> model_call_scope:
        """The model call's scope: :func:`~handoffs_runtime.models.local.current_model_call` names the call
        (its agent, session and the handoffs among the ``offer``'s tools) while :meth:`_answer` is awaited."""
        return model_call_scope(ModelCall(self.name, context.session_id, offer[1]))

    def _answer(
        self,
        context: ToolContext,
        conversation: list[LLMMessage],
        offer: tuple[tuple[ToolSchema, ...], frozenset[str]],
        cancellation_token: CancellationToken,
        in_words: bool = False,
    ) -> Awaitable[object]:
        """The model's answer to ``conversation`` with the ``offer``'s tools (and handoffs among them),
        to await inside the call's :meth:`_scope`; ``in_words``: the tools are shown but may not be chosen
        (``tool_choice="none"``). A function, not a coroutine: a session waiting for its model awaits the
        model's own coroutine, one frame fewer."""
        tools = offer[0]
        messages = [self.system_message, *conversation]
        options: dict[str, Any] = {"tool_choice": "none"} if in_words else {}
        if self.policy.max_tokens is not None:
            options["extra_create_args"] = {"max_tokens": self.policy.max_tokens}
        if self.policy.stream:
            return self._read_stream(context, messages, tools, cancellation_token, options)
        create = self.model.create(messages, tools=tools, cancellation_token=cancellation_token, **options)
        if self.model_timeout is None:
            return create
        return _within(create, self.model_timeout)

    async def _read_stream(
        self,
        context: ToolContext,
        messages: list[LLMMessage],
        tools: Sequence[ToolSchema],
        cancellation_token: CancellationToken,
        options: Mapping[str, Any],
    ) -> CreateResult:
        """The streamed answer, read under the reply cap; a reply the deadline cuts is kept, marked as cut
        (see :mod:`.streaming`)."""
        progress = self._progress
        show = None
        if progress is not None:
            session, agent, label = context.session_id, self.name, self.label

            async def delta(text: str) -> None:  # a delta, shown as it arrives; the reply holds the whole
                await progress.show(session, Delta(agent=agent, text=well_formed(text), label=label))

            show = HeldWhileAName(delta, tools)  # a reply that is just a tool's name is a call, never shown

        reader = StreamReader(self.policy.max_reply_chars, show)
        stream = self.model.create_stream(
            messages, tools=tools, cancellation_token=cancellation_token, **options
        )
        return await read_within(reader, stream, self.model_timeout)


async def _within(answer: Awaitable[object], seconds: float) -> object:
    """``answer``, or :class:`TimeoutError` past ``seconds``."""
    async with asyncio.timeout(seconds):
        return await answer


def _runs_tools(reply: Reply, handoffs: frozenset[str]) -> bool:
    """Whether ``reply`` calls anything but the offered handoffs (a handoff is no tool round)."""
    return not isinstance(reply, str) and any(call.name not in handoffs for call in reply.calls)


def _say_what_the_endpoint_can_do(model: ChatCompletionClient, policy: TeamPolicy) -> None:
    """The policy's ``endpoint`` settings, given to the model's endpoint (an OpenAI-compatible one)."""
    endpoint = getattr(model, "endpoint", None)
    settings = {k: v for k, v in (policy.endpoint or {}).items() if v is not None}
    if settings and isinstance(endpoint, EndpointCapabilities):
        try:
            endpoint.update(**settings)
        except ValueError as exc:
            raise TeamConfigError(f"policy.endpoint: {exc}") from exc


async def _is_enabled(handoff: Handoff, ctx: SessionContext) -> bool:
    """Whether ``handoff`` is offered now; a callable that fails counts as disabled (and is logged)."""
    if handoff.is_enabled is True or handoff.is_enabled is False:
        return handoff.is_enabled
    try:
        return bool(await call_maybe_async(handoff.is_enabled, ctx))
    except Exception:
        logger.exception("is_enabled of %s failed; not offering it", handoff.tool_name)
        return False
