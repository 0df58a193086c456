"""``HumanAgent``: a person (the operator) who takes over a conversation the AI agents cannot handle.

The operator is reached through the team's channel (``person="operator"``), never through ``input()``,
so a session waiting for the operator holds up nobody else.
"""

from __future__ import annotations

from dataclasses import dataclass

from autogen_core import MessageContext, message_handler
from autogen_core.models import AssistantMessage

from ..channels import Channel, Notice
from ..messages import AgentResponse, UserTask
from ..topics import USER, session_topic
from .routing import SessionAgent

OPERATOR_AWAY_REPLY = (
    "No human operator is available right now. Please leave your message and we will get back to you."
)


@dataclass(frozen=True)
class HumanAgentConfig:
    name: str
    channel: Channel
    user_topic: str = USER
    description: str = "A human operator."


class HumanAgent(SessionAgent):
    """Shows the conversation to the operator and sends their answer to the customer."""

    def __init__(self, config: HumanAgentConfig) -> None:
        super().__init__(config.description)
        self._config = config

    @message_handler
    async def handle_task(self, message: UserTask, ctx: MessageContext) -> None:
        config = self._config
        session = self.id.key
        if len(message.turn_path) > 1:  # handed over just now, not a follow-up message
            await config.channel.show(session, Notice(f"{config.name} (a person) is joining the conversation"))
        answer = await config.channel.ask(session, f"{config.name} input", person="operator")
        text = answer.strip() if answer and answer.strip() else OPERATOR_AWAY_REPLY
        context = [*message.context, AssistantMessage(content=text, source=config.name)]
        await self.publish_message(
            AgentResponse(context=context, reply_to_topic_type=config.name),
            topic_id=session_topic(config.user_topic, session),
        )
