"""Topic-type names and helpers that build session-scoped topic ids.

An agent type subscribes to the topic type of the same name (``TypeSubscription``); the topic source is
the session id, so each session gets its own agent instance and sessions never see each other's messages.
"""

from __future__ import annotations

from autogen_core import TopicId

TRIAGE_AGENT = "TriageAgent"
SALES_AGENT = "SalesAgent"
ISSUES_AND_REPAIRS_AGENT = "IssuesAndRepairsAgent"
HUMAN_AGENT = "HumanAgent"
USER = "User"
HANDOFF_EVENTS = "HandoffEvents"
"""Observers subscribe to this topic type to receive every ``HandoffEvent``."""


def session_topic(topic_type: str, session_id: str) -> TopicId:
    """The topic of ``topic_type`` for one session, e.g. ``session_topic("SalesAgent", "s1")``."""
    return TopicId(topic_type, source=session_id)
