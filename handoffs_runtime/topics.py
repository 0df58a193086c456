"""Every naming scheme: topics, session and shard agent types, worker keys, agents offered as tools.

Names are how agents find each other, in one process or across a gRPC host, so each scheme is written
once, here. An agent type subscribes to the topic type of the same name (``TypeSubscription``); the
topic source is the session id, so each session gets its own agent instance and sessions never see each
other's messages. A team's own agent names belong to the team (``teams/``), not here.
"""

from __future__ import annotations

import hashlib
import re

from handoffs_runtime.private import agent_id_of, topic_id_checked_once

USER = "User"
HANDOFF_EVENTS = "HandoffEvents"
"""Observers subscribe to this topic type to receive every ``HandoffEvent``."""


session_topic = topic_id_checked_once
"""The topic of ``topic_type`` for one session, e.g. ``session_topic("SalesAgent", "s1")``.

``TopicId`` checks its type with a regular expression each time; a topic type is checked here once (an
invalid one fails as it does there), and a runtime makes several topics per message. The shortcut that
skips the check is fenced in ``private``, bound here as it is: no call in between."""

known_agent_id = agent_id_of
"""``AgentId(agent_type, key)`` for an ``agent_type`` known to be valid, without the constructor's regular
expression: a runtime makes several agent ids per message (the shortcut is fenced in ``private``)."""


# --- placement: which worker serves which session (distributed mode) ----------------------------------
#
# The gRPC host accepts each agent type from one worker only, so a type served by N workers is registered
# as N agent types, ``SalesAgent.shard-0-of-4`` ... ``SalesAgent.shard-3-of-4``, all subscribed to the
# ``SalesAgent`` topic type; a chat front end registers ``User.session-<id>`` for its own session. The
# host delivers a message on ``SalesAgent``/``s1`` only to the agent types that accept source ``s1``:
# the one shard that ``shard_of("s1", 4)`` names, the front end of session ``s1``. Publishers never
# need to know how a type is deployed.

_SHARD = re.compile(r"^(?P<name>.+)\.shard-(?P<index>\d+)-of-(?P<count>\d+)\Z")
_SESSION = re.compile(r"^(?P<name>.+)\.session-(?P<session>[\w\-.]+)\Z")


def shard_of(session_id: str, count: int) -> int:
    """The shard (0-based) that serves ``session_id`` among ``count``: stable across processes and runs."""
    if count < 1:
        raise ValueError(f"a shard count must be at least 1, got {count}")
    digest = hashlib.blake2b(session_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


def shard_agent_type(name: str, index: int, count: int) -> str:
    """The agent type of shard ``index`` of ``count`` of ``name``, e.g. ``SalesAgent.shard-1-of-4``."""
    if not 0 <= index < count:
        raise ValueError(f"shard index must be in 0..{count - 1} for {count} shards, got {index}")
    return f"{name}.shard-{index}-of-{count}"


_SESSION_ID = re.compile(r"[\w\-.]+\Z")
_RESERVED = (".session-", ".shard-")


def check_session_id(session_id: str) -> str:
    """``session_id`` if it can be placed across processes; a ``ValueError`` saying why not otherwise.

    Letters, digits, ``_``, ``-`` and ``.`` only, and neither ``.session-`` nor ``.shard-`` inside: the
    front end of session ``a.session-b`` would be named ``User.session-a.session-b`` and read as the
    front end of session ``b``, and receive that person's replies.
    """
    if not _SESSION_ID.match(session_id):
        raise ValueError(
            f"session id {session_id!r} cannot name a front end: use letters, digits, '_', '-' and '.' only"
        )
    for reserved in _RESERVED:
        if reserved in session_id:
            raise ValueError(
                f"session id {session_id!r} contains {reserved!r}, which names agent types across processes; "
                "pick an id without it"
            )
    return session_id


def session_agent_type(name: str, session_id: str) -> str:
    """The agent type that serves only ``session_id``, e.g. ``User.session-s1`` (a chat front end)."""
    return f"{name}.session-{check_session_id(session_id)}"


def parse_shard(agent_type: str) -> tuple[str, int, int] | None:
    """``(name, index, count)`` of a shard agent type, or ``None`` for any other agent type."""
    match = _SHARD.match(agent_type)
    if match is None:
        return None
    return match["name"], int(match["index"]), int(match["count"])


def base_agent_type(agent_type: str) -> str:
    """The team member an agent type stands for: ``SalesAgent.shard-1-of-4`` -> ``SalesAgent``."""
    match = _SHARD.match(agent_type) or _SESSION.match(agent_type)
    return match["name"] if match is not None else agent_type


def accepts(agent_type: str, session_id: str) -> bool:
    """Whether an agent type serves ``session_id``: a shard its share, a front end its session, others all."""
    shard = _SHARD.match(agent_type)
    if shard is not None:
        return shard_of(session_id, int(shard["count"])) == int(shard["index"])
    session = _SESSION.match(agent_type)
    if session is not None:
        return session["session"] == session_id
    return True


# --- workers: agents reached by a direct message, not by a topic -------------------------------------
#
# A worker is addressed as ``AgentId(<worker type>, <worker key>)``; an AI agent offered to another as a
# tool is served by a worker type of its own, ``<agent>.tool``, under the tool name ``ask_<agent>``.

TOOL_AGENT_SUFFIX = ".tool"
"""An AI agent offered as a tool is served by a worker type named ``<agent>.tool``."""


def worker_key(session_id: str, depth: int, slot: int) -> str:
    """The ``AgentId`` key of a worker: its session, nesting level and slot in the caller's turn.

    Workers keep no state between tasks, so a slot is reused turn after turn: a long-running runtime
    then holds at most ``max_depth * max_workers_per_turn`` worker instances per session and type,
    instead of one more for every task ever delegated.
    """
    return f"{session_id}.{depth}.{slot}"


def session_of_key(key: str) -> str:
    """The session an ``AgentId`` key belongs to: itself, or the session of a worker key.

    A session id that happens to end in ``.<n>.<n>`` is read as a worker key; that only makes its stateless
    instances count with the shorter id, which is harmless.
    """
    head, _, tail = key.rpartition(".")
    session, _, depth = head.rpartition(".")
    return session if session and depth.isdigit() and tail.isdigit() else key


def tool_agent_type(agent: str) -> str:
    """The worker type that serves ``agent`` when it is offered as a tool."""
    return agent + TOOL_AGENT_SUFFIX


def agent_tool_name(agent: str) -> str:
    """``ask_<snake_case agent>``: the tool name under which ``agent`` is offered to another agent."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", agent).lower()
    snake = re.sub(r"[^a-z0-9_]+", "_", snake).strip("_")
    return f"ask_{snake}"
