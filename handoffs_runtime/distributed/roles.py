"""What each role may do at the host: register, subscribe, publish, call."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from handoffs_runtime.distributed.credentials import Role
from handoffs_runtime.distributed.serializers import type_name
from handoffs_runtime.messages import PersonEvent, Undeliverable, UserLogin, UserTask
from handoffs_runtime.topics import HANDOFF_EVENTS, USER, base_agent_type, check_session_id, parse_shard

# --- what each role may do -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RolePolicy:
    """Which role may register, subscribe, publish and call what. Each check returns the reason for a
    refusal, or ``None``; a caller without a role (no credentials) may do everything.

    ``agent_types``: the team's agents (``None``: any type that is not the person's side).
    """

    agent_types: frozenset[str] | None = None
    user_topic: str = USER

    def is_agent(self, topic_or_type: str) -> bool:
        name = base_agent_type(topic_or_type)
        if name in (self.user_topic, HANDOFF_EVENTS):
            return False
        return self.agent_types is None or name in self.agent_types

    def session_of(self, agent_type: str) -> str | None:
        """The session a front end's type ``User.session-<id>`` serves, else ``None``."""
        prefix = f"{self.user_topic}.session-"
        if not agent_type.startswith(prefix):
            return None
        try:
            return check_session_id(agent_type[len(prefix) :])
        except ValueError:
            return None

    def register(self, role: Role | None, agent_type: str) -> str | None:
        if role is None:
            return None
        if role == "frontend":
            if self.session_of(agent_type) is not None:
                return None
            return (
                f"a frontend credential may register only {self.user_topic}.session-<id> types, "
                f"not {agent_type}"
            )
        if agent_type == self.user_topic:
            return None  # a front end that serves every session: as trusted as a worker
        if self.session_of(agent_type) is not None:
            return f"a worker credential may not register {agent_type}: a front end's session type"
        if self.is_agent(agent_type) and (
            agent_type == base_agent_type(agent_type) or parse_shard(agent_type) is not None
        ):
            return None
        known = ", ".join(sorted(self.agent_types or ())) or "the team's agents"
        return (
            f"a worker credential may register only the team's agents ({known}) and their shards, "
            f"not {agent_type}"
        )

    def subscribe(
        self,
        role: Role | None,
        agent_type: str,
        topic: str,
        own_types: Collection[str],
        *,
        prefix: bool = False,
    ) -> str | None:
        """``topic`` is a topic type, or with ``prefix`` a topic-type prefix (autogen subscribes every agent
        type to ``<type>:`` for the messages sent to it directly)."""
        if agent_type not in own_types:
            return f"{agent_type} is not an agent type of this connection; register it first"
        if role != "frontend":
            return None
        if topic == f"{agent_type}:" if prefix else topic in (self.user_topic, HANDOFF_EVENTS):
            return None
        what = f"the topic prefix {topic}" if prefix else f"the {topic} topic"
        return (
            f"a frontend credential may subscribe only to the {self.user_topic} and {HANDOFF_EVENTS} "
            f"topics, not to {what}"
        )

    def publish(
        self,
        role: Role | None,
        topic_type: str,
        session: str,
        schema: str,
        sender_type: str,
        own_types: Collection[str],
    ) -> str | None:
        """``schema`` is the message's type name; ``sender_type`` the sender it claims."""
        refused = self._sender(sender_type, own_types) or self._progress(role, topic_type, schema)
        if refused is not None or role != "frontend":
            return refused
        if f"{self.user_topic}.session-{session}" not in own_types:
            return f"a frontend may publish only into its own sessions, not into session {session}"
        if topic_type == self.user_topic and schema in FRONTEND_OWN_MESSAGES:
            return None
        if self.is_agent(topic_type) and schema == USER_TASK:
            return None
        return f"a frontend may publish only a UserTask to the team's agents, not {schema} to {topic_type}"

    def request(
        self,
        role: Role | None,
        target_type: str,
        target_key: str,
        sender_type: str,
        own_types: Collection[str],
    ) -> str | None:
        refused = self._sender(sender_type, own_types)
        if refused is not None or role != "frontend":
            return refused
        if f"{self.user_topic}.session-{target_key}" in own_types and self.is_agent(target_type):
            return None
        return (
            f"a frontend may call only the team's agents of its own sessions, not {target_type}/{target_key}"
        )

    def _progress(self, role: Role | None, topic_type: str, schema: str) -> str | None:
        if role is None or schema != PERSON_EVENT or topic_type == self.user_topic:
            return None
        return f"{schema} goes only to the {self.user_topic} topic, not to {topic_type}"

    @staticmethod
    def _sender(sender_type: str, own_types: Collection[str]) -> str | None:
        if sender_type in ("", ANONYMOUS_SENDER) or sender_type in own_types:
            return None
        return f"a message may name as its sender only an agent type of its own connection, not {sender_type}"


ANONYMOUS_SENDER = "unknown"
USER_TASK = type_name(UserTask)
PERSON_EVENT = type_name(PersonEvent)
FRONTEND_OWN_MESSAGES = frozenset({type_name(UserLogin), type_name(Undeliverable)})
