"""``HumanAgent``: a person (the operator) who takes over a conversation the AI agents cannot handle.

The operator is reached through the team's channel (``person="operator"``), never through ``input()``,
so a session waiting for the operator holds up nobody else. The operator answers the customer by typing,
or hands the conversation back to an AI agent with ``/handoff AGENT``; the prompt says so (with the
choices) when the operator takes a conversation over, and ``/help`` says it again. An empty answer
asks again; only an operator who has gone (no answer at all) leaves the customer a message that nobody
is there.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from autogen_core import FunctionCall, MessageContext, message_handler
from autogen_core.models import AssistantMessage, FunctionExecutionResult, FunctionExecutionResultMessage

from handoffs_runtime.agents.routing import SessionAgent
from handoffs_runtime.channels.base import Channel
from handoffs_runtime.handoffs.handoff import snake_case
from handoffs_runtime.messages import HandoffEvent, UserTask, agent_response, user_task
from handoffs_runtime.topics import HANDOFF_EVENTS, USER, session_topic

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
    """Agents the operator may hand the conversation to with ``/handoff AGENT``."""


HANDOFF_COMMAND = "/handoff"
HELP_COMMAND = "/help"
_COMMANDS = (HANDOFF_COMMAND, HELP_COMMAND)


def way_back_hint(targets: frozenset[str]) -> str:
    """``/handoff AGENT hands the conversation back (AGENT: A, B)``, for the operator's prompt."""
    if not targets:
        return "no agent to hand the conversation back to"
    return f"{HANDOFF_COMMAND} AGENT hands the conversation back (AGENT: {', '.join(sorted(targets))})"


class HumanAgent(SessionAgent):
    """Shows the conversation to the operator and sends their answer to the customer."""

    def __init__(self, config: HumanAgentConfig) -> None:
        super().__init__(config.description)
        self._config = config

    @message_handler
    async def handle_task(self, message: UserTask, ctx: MessageContext) -> None:
        config = self._config
        session = self.id.key
        prompt = f"{config.name} input"
        handed_over = message.context and isinstance(message.context[-1], FunctionExecutionResultMessage)
        if handed_over:  # the operator takes the conversation over: say how to give it back
            prompt = f"{prompt} ({way_back_hint(config.handoff_targets)})"
        answer = await config.channel.ask(session, prompt, person="operator")
        while answer is not None and (not answer.strip() or answer.strip().startswith(_COMMANDS)):
            command, _, target = answer.strip().partition(" ")
            target = target.strip()
            if not command:  # an empty Enter says nothing; the customer is not sent an empty answer
                answer = await config.channel.ask(session, prompt, person="operator")
                continue
            if command == HANDOFF_COMMAND and target in config.handoff_targets:
                await self._hand_back(message, target)
                return
            problem = f"unknown agent {target!r}; " if command == HANDOFF_COMMAND else ""
            answer = await config.channel.ask(
                session,
                f"{problem}{way_back_hint(config.handoff_targets)}; {config.name} input",
                person="operator",
            )
        text = answer.strip() if answer is not None else OPERATOR_AWAY_REPLY
        context = [*message.context, AssistantMessage(content=text, source=config.name)]
        response = agent_response(context, config.name, message.usage)  # a person spends no tokens
        await self.publish_message(response, topic_id=session_topic(config.user_topic, session))

    async def _hand_back(self, message: UserTask, target: str) -> None:
        """Hand over as an AI agent would: the transfer is in the context as a call and its result."""
        session = self.id.key
        name = self._config.name
        tool = f"transfer_to_{snake_case(target)}"
        call = FunctionCall(id=f"{HANDOFF_COMMAND[1:]}_{uuid.uuid4().hex[:12]}", name=tool, arguments="{}")
        result = FunctionExecutionResult(
            call_id=call.id, name=tool, content=f"Transferred to {target}. Adopt persona immediately."
        )
        context = [
            *message.context,
            AssistantMessage(content=[call], source=name),
            FunctionExecutionResultMessage(content=[result]),
        ]
        event = HandoffEvent(session_id=session, source=name, target=target, tool=HANDOFF_COMMAND)
        await self.publish_message(event, topic_id=session_topic(HANDOFF_EVENTS, session))
        task = user_task(context, [name, target], message.usage)
        await self.publish_message(task, topic_id=session_topic(target, session))
