"""``UserAgent``: the customer's side of a session. Shows replies, asks for the next message, routes it.

The person's next message goes to whichever agent answered last (``reply_to_topic_type``): the active
agent is state, carried by the messages themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from autogen_core import MessageContext, RoutedAgent, message_handler
from autogen_core.models import LLMMessage, UserMessage

from ..channels import AgentReply, Channel, Notice, is_exit
from ..messages import (
    AgentResponse,
    HandoffEvent,
    PersonAnswer,
    PersonNotice,
    PersonQuestion,
    Undeliverable,
    UserLogin,
    UserTask,
)
from ..topics import session_topic

SessionEndHook = Callable[[str], None]


@dataclass(frozen=True)
class UserAgentConfig:
    entry_agent: str
    channel: Channel
    name: str = "User"
    description: str = "The customer."
    on_session_end: SessionEndHook | None = None


def describe_event(event: HandoffEvent) -> str:
    """The line the console shows for a handoff event."""
    if event.outcome == "handoff":
        return f"↪ {event.source} handed the conversation to {event.target}"
    if event.outcome == "loop_stopped":
        return f"⚠ handoff loop stopped at {event.source}: {event.reason}"
    return f"✗ {event.source} could not hand over to {event.target}: {event.reason}"


def describe_undeliverable(message: Undeliverable) -> str:
    """The line the console shows when a message could not reach its agent."""
    if message.reason:
        return f"⚠ {message.topic_type} did not get your last message: {message.reason}. Type 'exit' to leave"
    return (
        f"⚠ {message.topic_type} is not available right now (no worker serves it), so your last message was "
        "not delivered. Try again in a moment, or type 'exit' to leave."
    )


class UserAgent(RoutedAgent):
    """One per session; subscribed to the ``User`` topic and to handoff events."""

    def __init__(self, config: UserAgentConfig) -> None:
        super().__init__(config.description)
        self._config = config

    @message_handler
    async def handle_login(self, message: UserLogin, ctx: MessageContext) -> None:
        await self._next_turn([], self._config.entry_agent)

    @message_handler
    async def handle_response(self, message: AgentResponse, ctx: MessageContext) -> None:
        last = message.context[-1] if message.context else None
        text = last.content if last is not None and isinstance(last.content, str) else ""
        await self._config.channel.show(self.id.key, AgentReply(message.reply_to_topic_type, text))
        await self._next_turn(message.context, message.reply_to_topic_type)

    @message_handler
    async def handle_event(self, message: HandoffEvent, ctx: MessageContext) -> None:
        await self._config.channel.show(self.id.key, Notice(describe_event(message), event=message))

    @message_handler
    async def handle_undeliverable(self, message: Undeliverable, ctx: MessageContext) -> None:
        """Nobody serves the agent the conversation was sent to: say so, and let the person try again."""
        await self._config.channel.show(self.id.key, Notice(describe_undeliverable(message)))
        context = list(message.context)
        if context and isinstance(context[-1], UserMessage):  # the person will say it again
            context.pop()
        await self._next_turn(context, message.topic_type)

    @message_handler
    async def handle_question(self, message: PersonQuestion, ctx: MessageContext) -> PersonAnswer:
        """An agent on another process asks this session's person something (distributed mode)."""
        answer = await self._config.channel.ask(self.id.key, message.prompt, person=message.person)
        return PersonAnswer(text=answer)

    @message_handler
    async def handle_person_notice(self, message: PersonNotice, ctx: MessageContext) -> None:
        await self._config.channel.show(self.id.key, Notice(message.text))

    async def _next_turn(self, context: list[LLMMessage], agent: str) -> None:
        config = self._config
        session = self.id.key
        text = await config.channel.ask(session, "you")
        while text is not None and not text.strip():
            text = await config.channel.ask(session, "you")
        if is_exit(text) or text is None:
            await config.channel.show(session, Notice(f"session {session} ended"))
            if config.on_session_end is not None:
                config.on_session_end(session)
            return
        context.append(UserMessage(content=text, source=config.name))
        await self.publish_message(UserTask(context=context, turn_path=[agent]), topic_id=session_topic(agent, session))
