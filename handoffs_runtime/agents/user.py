"""``UserAgent``: the customer's side: it shows replies, asks for the next message and routes it.

The person's next message goes to whichever agent answered last (``reply_to_topic_type``): the active
agent is state, carried by the messages themselves. With a ``store``, everything is written there before
the person sees it, and a stored session resumes where it stopped (see
:mod:`handoffs_runtime.sessions.recording`).

A live conversation with a person (``AgentResponse.live``) keeps the customer's turn open: each customer
message goes to the person at once, and each of the person's lines joins the conversation where it
stands. The ``UserAgent`` orders both, so what is stored, shown and handed on is one conversation: when
the person hands it back (their ``HandoffEvent``), the ``UserAgent`` sends it on to the agent they chose,
and what the customer writes meanwhile waits for that agent's first reply.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from autogen_core import MessageContext, message_handler
from autogen_core.models import AssistantMessage, LLMMessage, UserMessage

from handoffs_runtime.agents.human import HANDOFF_COMMAND, hand_back_messages
from handoffs_runtime.agents.person import PersonChannel
from handoffs_runtime.agents.routing import SessionAgent
from handoffs_runtime.channels.base import Channel, is_exit
from handoffs_runtime.errors import SessionTakenOverError, StoreError
from handoffs_runtime.handoffs.returns import ReturnStack, after, hand_back
from handoffs_runtime.messages import (
    NO_LABELS,
    PROGRESS,
    RELAYED,
    USER_PROMPT,
    AgentResponse,
    HandoffEvent,
    Labels,
    Notice,
    PersonAnswer,
    PersonEvent,
    PersonQuestion,
    Reply,
    Undeliverable,
    UserLogin,
    UserTask,
    asked_as,
    goes_on_from,
    user_task,
)
from handoffs_runtime.runtime.release import SessionEndHook
from handoffs_runtime.sessions.leases import NOTHING_WRITTEN
from handoffs_runtime.sessions.recording import record_event, record_joined, record_reply, record_user, resume
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.topics import base_agent_type, session_topic
from handoffs_runtime.usage import Usage

_RELAYED = ", ".join(kind.__name__ for kind in RELAYED)
logger = logging.getLogger("handoffs_runtime")


@dataclass(frozen=True)
class UserAgentConfig:
    entry_agent: str
    channel: Channel
    name: str = "User"
    description: str = "The customer."
    on_session_end: SessionEndHook | None = None
    store: SessionStore | None = None
    team: str = ""
    resume_exchanges: int = 3
    agents: frozenset[str] = frozenset()
    """The agents a resumed session may continue with (empty: any)."""
    senders: frozenset[str] = frozenset()
    """The team's agents: the only senders whose replies, questions and events reach the person (empty:
    any sender). Across processes a message may come from anyone who can reach the host."""
    labels: Labels = field(default_factory=dict)
    """What people read for each agent (``TeamSpec.labels``): replies and handoff lines carry it."""
    greeting: str = ""
    """The team's greeting, shown as the entry agent's first words when a session starts (not stored:
    no model reads it)."""


def describe_undeliverable(message: Undeliverable, labels: Labels = NO_LABELS) -> str:
    """The line the console shows when a message could not reach its agent."""
    agent = labels.get(message.topic_type) or message.topic_type
    if message.reason:
        return f"⚠ {agent} did not get your last message: {message.reason}. Type 'exit' to leave"
    return (
        f"⚠ {agent} is not available right now (no worker serves it), so your last message was "
        "not delivered. Try again in a moment, or type 'exit' to leave."
    )


def store_notice(what: str, exc: StoreError) -> Notice:
    """``⚠ what``, with the store's own words (its path, the lease holder's pid and host) as the detail."""
    return Notice(text=f"⚠ {what}", detail=str(exc))


@dataclass
class _Next:
    """What the customer's next message continues: the conversation, the agent it goes to, and whether
    that agent is a person in a live conversation (then the customer may write again at once)."""

    context: list[LLMMessage]
    agent: str
    live: bool = False


class UserAgent(SessionAgent):
    """One per session; subscribed to the ``User`` topic and to handoff events."""

    def __init__(self, config: UserAgentConfig) -> None:
        super().__init__(config.description)
        self._config = config
        self._session = self.id.key
        self._usage = Usage.EMPTY  # the session's tokens so far
        # The channel shared with the agents of this process (``register_team`` builds one for all).
        shared = config.channel
        self._channel = shared if isinstance(shared, PersonChannel) else PersonChannel(shared, config.store)
        self._next: _Next | None = None
        self._asking = False
        """Whether the customer's turn is open (a question to them is under way)."""
        self._in_order = asyncio.Lock()
        """What the agents send and the customer writes is stored, shown and added to ``_next`` in the order
        it came: the runtime handles messages concurrently, and a handoff event whose write is slow must not
        land after the reply that followed it (nor after the session ended on that reply, when it could not
        be stored at all). Taken with ``acquire()`` and released in a ``finally``, as ``async with`` does it,
        without the two coroutines of its ``__aenter__`` and ``__aexit__``."""
        self._handover: asyncio.Event | None = None
        """Set (to a cleared event) while a live conversation is handed over: the customer's next message
        waits for it. ``None`` the rest of the time, so that a session in flight carries no event (and its
        queue of waiters) that nobody waits on."""
        self._returns: ReturnStack = ()
        """Who waits for the conversation to come back (see :mod:`handoffs_runtime.handoffs.returns`)."""

    @message_handler
    async def handle_login(self, message: UserLogin, ctx: MessageContext) -> None:
        config = self._config
        if config.store is None:
            await self._greet(config.entry_agent)
            await self._next_turn([], config.entry_agent)
            return
        try:
            resumed = await resume(
                config.store,
                self._session,
                entry_agent=config.entry_agent,
                team=config.team,
                show=config.resume_exchanges,
                agents=config.agents,
                labels=config.labels,
            )
        except StoreError as exc:
            await self._store_failed(exc, "the session could not be opened, so it stops")
            return
        self._usage = resumed.usage
        self._returns = resumed.returns
        for notice in resumed.notices:
            await self._channel.show(self._session, notice)
        if resumed.new:
            await self._greet(resumed.agent)
        await self._next_turn(resumed.context, resumed.agent)

    async def _greet(self, agent: str) -> None:
        """The team's greeting, in the words of the agent the person meets first."""
        greeting = self._config.greeting
        if greeting:
            await self._channel.show(self._session, self._reply(agent, greeting))

    def _reply(self, agent: str, text: str) -> Reply:
        return Reply(agent=agent, text=text, label=self._config.labels.get(agent, ""))

    def _vouched_for(self, message: object, ctx: MessageContext) -> bool:
        """Whether ``message`` is for this session and from one of the team's agents; if not, it is
        dropped and logged: it must neither reach the person's screen nor their stored conversation."""
        senders = self._config.senders
        sender = ctx.sender
        for_us = ctx.topic_id is None or ctx.topic_id.source == self._session
        from_team = not senders or (
            sender is not None and (sender.type in senders or base_agent_type(sender.type) in senders)
        )
        if for_us and from_team:
            return True
        logger.warning(
            "session %s dropped a %s from %s: %s",
            self._session,
            type(message).__name__,
            sender or "an unnamed sender",
            "it was for another session" if not for_us else "not one of the team's agents",
        )
        return False

    @message_handler
    async def handle_response(self, message: AgentResponse, ctx: MessageContext) -> None:
        if not self._vouched_for(message, ctx):
            return
        config = self._config
        agent = message.reply_to_topic_type
        last = message.context[-1] if message.context else None
        await self._in_order.acquire()
        try:
            joining = self._next if message.live and self._asking else None
            if joining is not None:  # the customer's turn is open: the person's line joins the conversation
                line = last if _said_by(last, agent) else None
                context = [*joining.context, line] if line is not None else joining.context
            else:
                line = last if not message.live or _said_by(last, agent) else None
                context = message.context
            back = None
            if self._returns and not message.live and _said_by(last, agent):  # someone waits for it
                said = last.content if last is not None and isinstance(last.content, str) else ""
                back = hand_back(self._returns, self._session, agent, said, done=message.part_done)
            if config.store is not None:
                try:
                    if joining is None:
                        usage = message.usage - self._usage
                        await record_reply(config.store, self._session, message, usage=usage, hand_back=back)
                    elif line is not None:
                        await record_joined(config.store, self._session, line, context, agent=agent)
                except StoreError as exc:
                    await self._store_failed(exc)
                    return
            if joining is None:
                self._usage = message.usage
            if line is not None:
                text = line.content if isinstance(line.content, str) else ""
                await self._channel.show(self._session, self._reply(agent, text))
            if back is not None:  # the part of a returning handoff is done: the caller answers next
                self._returns = after(self._returns, back)
                await self._channel.show(self._session, back.line(config.labels))
                agent = back.target
            self._continue(context, agent, live=message.live)  # before the lock goes: the next one joins it
        finally:
            self._in_order.release()
        await self._give_turn()

    @message_handler
    async def handle_event(self, message: HandoffEvent, ctx: MessageContext) -> None:
        if not self._vouched_for(message, ctx) or message.session_id != self._session:
            return
        # The line is marked before the first wait, so the next agent's questions wait for it.
        with self._channel.showing_line(self._session):
            await (
                self._in_order.acquire()
            )  # after the replies before it: a live conversation goes on complete
            try:
                handed = self._hand_on(message)
                if self._returns or message.returns:  # else the stack stays empty
                    self._returns = after(self._returns, message)
                await self._record_event(message)
            finally:
                self._in_order.release()
        if handed is not None:
            await self.publish_message(handed, topic_id=session_topic(message.target, self._session))

    def _hand_on(self, message: HandoffEvent) -> UserTask | None:
        """The task that sends a live conversation on, when ``message`` is its person handing it back."""
        turn = self._next
        if turn is None or not turn.live or message.source != turn.agent or message.tool != HANDOFF_COMMAND:
            return None
        context = [*turn.context, *hand_back_messages(message.source, message.target)]
        self._next = _Next(context, message.target)
        if self._handover is None:  # what the customer writes now waits for the new agent's first reply
            self._handover = asyncio.Event()
        return user_task(list(context), [message.source, message.target], self._usage)

    async def _record_event(self, message: HandoffEvent) -> None:
        if self._config.store is not None:
            try:
                await record_event(self._config.store, message)
            except StoreError as exc:  # the reply that follows fails too and ends the session
                await self._channel.show(self._session, store_notice("the session could not be saved", exc))
                return
        if message.said:  # what the agent wrote beside its handoff call, in its own words
            await self._channel.show(self._session, self._reply(message.source, message.said))
        await self._channel.show(self._session, message.line(self._config.labels))

    async def _store_failed(
        self, exc: StoreError, what: str = "the session could not be saved, so it stops"
    ) -> None:
        """Nothing unsaved is shown or sent: tell the person and end the session."""
        if isinstance(exc, SessionTakenOverError):  # not a failure: someone else has the session now
            what = "another chat took this session over, so this one stops here (nothing more is saved)"
            exc = SessionTakenOverError(str(exc).removesuffix(NOTHING_WRITTEN))
        await self._channel.show(self._session, store_notice(what, exc))
        self._ended()

    def _ended(self) -> None:
        if self._config.on_session_end is not None:
            self._config.on_session_end(self._session)

    @message_handler
    async def handle_undeliverable(self, message: Undeliverable, ctx: MessageContext) -> None:
        """Nobody serves the agent the conversation was sent to: say so, and let the person try again.

        After a host restart a process may send again what it cannot tell arrived, and the restarted
        host may refuse it: a refusal of a conversation the person has already gone on from is stale,
        and would turn their conversation back to it."""
        turn = self._next
        resent = not message.reason and bool(message.context)  # a size refusal carries no context
        if resent and turn is not None and goes_on_from(turn.context, message.context):
            logger.info(
                "dropped a refusal of an earlier message in session %s: the conversation went on past it",
                self._session,
            )
            return
        notice = Notice(text=describe_undeliverable(message, self._config.labels))
        await self._channel.show(self._session, notice)
        context = list(message.context)
        if context and isinstance(context[-1], UserMessage):  # the person will say it again
            context.pop()
        await self._next_turn(context, message.topic_type)

    @message_handler
    async def handle_question(self, message: PersonQuestion, ctx: MessageContext) -> PersonAnswer:
        """An agent on another process asks this session's person something (distributed mode)."""
        if not self._vouched_for(message, ctx):
            return PersonAnswer(text=None)
        with asked_as(message.id):  # the person answers the asker's question, by its id
            if message.on_record:  # a tool's question: kept in the transcript with its answer
                asker = base_agent_type(ctx.sender.type) if ctx.sender is not None else ""
                answer = await self._channel.ask_on_record(
                    self._session, message.prompt, person=message.person, asker=asker
                )
            else:
                answer = await self._channel.ask(self._session, message.prompt, person=message.person)
        return PersonAnswer(text=answer, question=message.id)

    @message_handler
    async def handle_person_event(self, message: PersonEvent, ctx: MessageContext) -> None:
        """A notice or progress of an agent on another process: shown, never stored. Anything else (a
        reply, a handoff line, a question) would skip the store or the question's answer, so it is
        dropped; progress goes only to a channel that shows it."""
        if not self._vouched_for(message, ctx):
            return
        event = message.event
        if not isinstance(event, RELAYED):
            logger.warning(
                "session %s dropped a relayed %s event: not one of %s", self._session, event.type, _RELAYED
            )
            return
        if isinstance(event, PROGRESS) and not self._channel.shows_progress:
            return
        await self._channel.show(self._session, event)

    async def _next_turn(self, context: list[LLMMessage], agent: str, *, live: bool = False) -> None:
        """Give the customer the turn; their message continues ``context`` with ``agent``."""
        await self._in_order.acquire()
        try:
            self._continue(context, agent, live=live)
        finally:
            self._in_order.release()
        await self._give_turn()

    def _continue(self, context: list[LLMMessage], agent: str, *, live: bool) -> None:
        """What the customer's next message continues (``_in_order`` held)."""
        self._next = _Next(context, agent, live)
        handover, self._handover = self._handover, None
        if handover is not None:
            handover.set()

    async def _give_turn(self) -> None:
        """Ask the customer, unless their turn is open already (a live conversation): the open turn
        continues whatever ``_next`` says when they answer."""
        if self._asking:
            return
        self._asking = True
        try:
            while await self._one_message():
                pass
        finally:
            self._asking = False

    async def _one_message(self) -> bool:
        """Ask the customer and send their message on; whether to ask again at once (a live turn)."""
        config = self._config
        session = self._session
        text = await self._channel.ask(session, USER_PROMPT)
        while text is not None and not text.strip():
            text = await self._channel.ask(session, USER_PROMPT)
        if is_exit(text) or text is None:
            if config.store is not None:
                try:
                    await config.store.end_session(session)
                except StoreError as exc:
                    await self._channel.show(
                        session, store_notice("the end of the session could not be saved", exc)
                    )
            await self._channel.show(session, Notice(text=f"session {session} ended"))
            self._ended()
            return False
        said = UserMessage(content=text, source=config.name)
        while True:  # a handover under way: the message waits for the agent that takes over
            handover = self._handover
            if handover is not None:  # else no wait, and no coroutine for it
                await handover.wait()
            await self._in_order.acquire()
            try:
                turn = self._next
                if turn is None:  # not reached: every turn is opened with what it continues
                    return False
                if self._handover is not None:  # a handover began while this waited for the lock
                    continue
                if config.store is not None:
                    try:
                        await record_user(config.store, session, said, agent=turn.agent)
                    except StoreError as exc:
                        await self._store_failed(exc)
                        return False
                context = turn.context = [*turn.context, said]  # a new list: nothing shared
                break
            finally:
                self._in_order.release()
        task = user_task(list(context), [turn.agent], self._usage)
        await self.publish_message(task, topic_id=session_topic(turn.agent, session))
        return turn.live


def _said_by(message: LLMMessage | None, agent: str) -> bool:
    """Whether ``message`` is words ``agent`` said (not a tool call, not someone else's)."""
    return (
        isinstance(message, AssistantMessage) and isinstance(message.content, str) and message.source == agent
    )
