"""Run one conversation with a team in this process: what ``handoffs chat`` does, usable from code."""

from __future__ import annotations

import uuid

from autogen_core.models import ChatCompletionClient

from handoffs_runtime.channels.base import Channel
from handoffs_runtime.messages import Notice
from handoffs_runtime.private import is_running
from handoffs_runtime.runtime.single_threaded import HandoffsRuntime
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.team.register import register_team, start_session
from handoffs_runtime.team.spec import TeamSpec


async def run_chat(
    team: TeamSpec,
    *,
    model: ChatCompletionClient,
    channel: Channel,
    session_id: str | None = None,
    banner: str = "",
    store: SessionStore | None = None,
    take_over: bool = False,
) -> str:
    """Talk to ``team`` through ``channel`` until the person leaves; returns the session id.

    A new session opens with the team's greeting. With a ``store``, a stored ``session_id`` is resumed
    with its active agent and context. The session is claimed first, so a session that another live
    process holds is refused with :class:`SessionBusyError` before anything is shown, unless
    ``take_over`` (that process then stops writing to it). A ``banner`` (none when empty) comes before
    the session's first line.
    """
    session = session_id or uuid.uuid4().hex[:12]
    if store is not None:
        try:
            taken = await store.claim(session, take_over=take_over)
        except BaseException:
            await model.close()
            raise
        if taken is not None:
            await channel.show(session, Notice(text=f"took session {session} over from {taken}"))
    runtime = HandoffsRuntime()
    await register_team(runtime, team, model=model, channel=channel, store=store, greet=True)
    if banner:
        await channel.show(session, Notice(text=banner))
    await channel.show(session, Notice(text=f"session {session} · type 'exit' to leave"))
    runtime.start()
    try:
        await start_session(runtime, session, user_topic=team.user_topic)
        await runtime.stop_when_idle()
    finally:
        if is_running(runtime):  # stopped early (Ctrl-C, cancellation)
            await runtime.stop()
        await model.close()
    return session
