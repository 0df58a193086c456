"""``HumanAgent``: a person (the operator) who takes over a conversation the AI agents cannot handle.

The operator is reached through the team's channel (``person="operator"``), never through ``input()``,
so a session waiting for the operator holds up nobody else. The operator answers the customer by typing,
or hands the conversation back to an AI agent: a :class:`~handoffs_runtime.channels.handback.HandBack`
from the channel (a console reads it from ``/handoff AGENT``); the prompt says so (with the choices) when
the operator takes a conversation over, and ``/help`` says it again. An empty line says nothing: the
operator is asked again.

How the two take turns depends on the channel. On a console, one keyboard for both, the operator answers
once per customer message. On a channel whose operator is a person apart
(:class:`~handoffs_runtime.channels.base.OperatorApart`: the web), the conversation is live: the
customer's turn opens as soon as a person is asked for and the operator's question stays open until they
hand the conversation back, so each writes as often as they like. The customer's side (``UserAgent``)
puts both in one order: it joins each of the operator's lines to the conversation as it stands, and sends
the conversation on when the operator hands it back (this agent only announces the handoff).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from autogen_core import FunctionCall, MessageContext, message_handler
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
)

from handoffs_runtime.agents.routing import SessionAgent
from handoffs_runtime.channels.base import Channel, operator_apart
from handoffs_runtime.channels.handback import HANDOFF_COMMAND as HANDOFF_COMMAND
from handoffs_runtime.channels.handback import HandBack, ask_operator
from handoffs_runtime.handoffs.handoff import snake_case
from handoffs_runtime.messages import HandoffEvent, UserTask, agent_response, user_task
from handoffs_runtime.topics import HANDOFF_EVENTS, USER, session_topic
from handoffs_runtime.usage import Usage

OPERATOR_AWAY_REPLY = (
    "No human operator is available right now. Please leave your message and we will get back to you."
)


@dataclass(frozen=True)
class HumanAgentConfig:
    name: str
    channel: Channel
    user_topic: str = USER
    description: str = "A human operator."
    handoff_targets: frozenset[str] = frozenset()
    """Agents the operator may hand the conversation back to."""


HELP_COMMAND = "/help"
_COMMANDS = (HANDOFF_COMMAND, HELP_COMMAND)


def hand_back_messages(name: str, target: str) -> list[LLMMessage]:
    """The transfer, as an AI agent's handoff appears in the context: a call and its result."""
    tool = f"transfer_to_{snake_case(target)}"
    call = FunctionCall(id=f"{HANDOFF_COMMAND[1:]}_{uuid.uuid4().hex[:12]}", name=tool, arguments="{}")
    result = FunctionExecutionResult(
        call_id=call.id, name=tool, content=f"Transferred to {target}. Adopt persona immediately."
    )
    return [AssistantMessage(content=[call], source=name), FunctionExecutionResultMessage(content=[result])]


def hand_back_event(session: str, name: str, target: str) -> HandoffEvent:
    return HandoffEvent(session_id=session, source=name, target=target, tool=HANDOFF_COMMAND)


def way_back_hint(targets: frozenset[str]) -> str:
    """``/handoff AGENT hands the conversation back (AGENT: A, B)``, for the operator's prompt."""
    if not targets:
        return "no agent to hand the conversation back to"
    return f"{HANDOFF_COMMAND} AGENT hands the conversation back (AGENT: {', '.join(sorted(targets))})"


@dataclass
class _Conversation:
    """A live conversation under way: the conversation as it stands, and the session's tokens so far."""

    context: list[LLMMessage]
    usage: Usage


class HumanAgent(SessionAgent):
    """Shows the conversation to the operator and sends their answers to the customer."""

    def __init__(self, config: HumanAgentConfig) -> None:
        super().__init__(config.description)
        self._config = config
        self._live: _Conversation | None = None
        self._handed_back = False
        """A live conversation was handed back; the customer's side sent it on, with everything said."""

    @message_handler
    async def handle_task(self, message: UserTask, ctx: MessageContext) -> None:
        from_customer = message.turn_path == [self._config.name]
        if self._live is not None:  # the customer wrote: the operator's next line follows their message
            self._live.context = list(message.context)
            self._live.usage = message.usage
        elif self._handed_back and from_customer:
            return  # written as the operator handed back: it went on with the rest of the conversation
        elif operator_apart(self._config.channel):
            self._handed_back = False
            await self._converse(message)
        else:
            await self._answer_once(message)

    async def _answer_once(self, message: UserTask) -> None:
        """One answer to the customer's message, or the conversation handed back."""
        prompt = f"{self._config.name} input"
        handed_over = message.context and isinstance(message.context[-1], FunctionExecutionResultMessage)
        if handed_over:  # the operator takes the conversation over: say how to give it back
            prompt = f"{prompt} ({way_back_hint(self._config.handoff_targets)})"
        line = await self._next_line(prompt)
        if isinstance(line, HandBack):
            await self._hand_back(message.context, message.usage, line.agent)
            return
        text = line if line is not None else OPERATOR_AWAY_REPLY
        await self._reply([*message.context, self._said(text)], message.usage)

    async def _converse(self, message: UserTask) -> None:
        """A live conversation, until the operator hands it back or the session ends."""
        live = self._live = _Conversation(list(message.context), message.usage)
        name = self._config.name
        try:
            await self._reply(live.context, live.usage, live=True)  # nothing said yet: the customer's turn
            prompt = f"{name} input ({way_back_hint(self._config.handoff_targets)})"
            while (line := await self._next_line(prompt)) is not None:  # None: the session is over
                if isinstance(line, HandBack):  # announced here, sent on by the customer's side
                    self._handed_back = True
                    event = hand_back_event(self.id.key, name, line.agent)
                    await self.publish_message(event, topic_id=session_topic(HANDOFF_EVENTS, self.id.key))
                    return
                live.context = [*live.context, self._said(line)]
                await self._reply(live.context, live.usage, live=True)
                prompt = f"{name} input"
        finally:
            self._live = None

    async def _next_line(self, prompt: str) -> str | HandBack | None:
        """The operator's next words, their hand back, or ``None`` when they are gone. Empty lines and
        ``/help`` ask again; a hand back to an agent that is not a choice says why and asks again."""
        config = self._config
        while True:
            line = await ask_operator(config.channel, self.id.key, prompt)
            if line is None:
                return None
            if isinstance(line, HandBack):
                if line.agent in config.handoff_targets:
                    return line
                problem = f"unknown agent {line.agent!r}; "
            elif not (text := line.strip()):
                continue
            elif not text.startswith(_COMMANDS):
                return text
            else:
                problem = ""
            prompt = f"{problem}{way_back_hint(config.handoff_targets)}; {config.name} input"

    def _said(self, text: str) -> AssistantMessage:
        return AssistantMessage(content=text, source=self._config.name)

    async def _reply(self, context: list[LLMMessage], usage: Usage, *, live: bool = False) -> None:
        response = agent_response(context, self._config.name, usage, live=live)  # a person spends no tokens
        await self.publish_message(response, topic_id=session_topic(self._config.user_topic, self.id.key))

    async def _hand_back(self, context: list[LLMMessage], usage: Usage, target: str) -> None:
        """Hand over as an AI agent would: the transfer is in the context as a call and its result."""
        session = self.id.key
        name = self._config.name
        event = hand_back_event(session, name, target)
        await self.publish_message(event, topic_id=session_topic(HANDOFF_EVENTS, session))
        task = user_task([*context, *hand_back_messages(name, target)], [name, target], usage)
        await self.publish_message(task, topic_id=session_topic(target, session))
