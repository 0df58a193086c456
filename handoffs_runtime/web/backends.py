"""Where the team of ``handoffs serve`` runs: in this process, or behind a gRPC host.

In this process (``LocalTeam``), or behind a gRPC host (``RemoteTeam``, ``--host``), where workers run
the agents and this process is the sessions' front end.

The hub needs only three things of either: start with its channel, open a session, stop. Either way
each session's ``UserAgent`` lives here, so the pages, the store and the operator console work alike.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Protocol

from autogen_core.models import ChatCompletionClient

from handoffs_runtime.channels.events import EventChannel
from handoffs_runtime.errors import HandoffsError
from handoffs_runtime.runtime.single_threaded import HandoffsRuntime
from handoffs_runtime.sessions.store import SessionStore
from handoffs_runtime.team.register import register_team, start_session
from handoffs_runtime.team.spec import TeamSpec

if TYPE_CHECKING:
    from handoffs_runtime.distributed.frontend import FrontEnd


class TeamBackend(Protocol):
    async def start(self, channel: EventChannel) -> None:
        """Start; every session that ends calls ``channel.ended``."""
        ...

    async def open(self, session_id: str) -> None:
        """Start (or resume from the store) a session; ``HandoffsError`` if it cannot."""
        ...

    async def stop(self) -> None: ...


class LocalTeam:
    """The team on a ``HandoffsRuntime`` in this process, calling ``model``."""

    def __init__(self, team: TeamSpec, model: ChatCompletionClient, store: SessionStore) -> None:
        self._team = team
        self._model = model
        self._store = store
        self.runtime = HandoffsRuntime()

    async def start(self, channel: EventChannel) -> None:
        await register_team(
            self.runtime,
            self._team,
            model=self._model,
            channel=channel,
            store=self._store,
            on_session_end=channel.ended,
            greet=True,
        )
        self.runtime.start()

    async def open(self, session_id: str) -> None:
        await start_session(self.runtime, session_id, user_topic=self._team.user_topic)

    async def stop(self) -> None:
        await self.runtime.stop()
        await self._model.close()


class RemoteTeam:
    """A front end of the gRPC host at ``host``: the workers run the agents (and decide on streaming).

    ``credentials``: the directory with ``ca.pem`` and ``frontend.token``, for a host started with them.
    A turn that hears nothing back for ``turn_timeout`` seconds is reported to the person.
    """

    def __init__(
        self,
        team: TeamSpec,
        host: str,
        store: SessionStore,
        *,
        credentials: str | os.PathLike[str] | None = None,
        turn_timeout: float | None = 60.0,
        connect_timeout: float | None = 30.0,
    ) -> None:
        self._team = team
        self._host = host
        self._store = store
        self._credentials = credentials
        self._turn_timeout = turn_timeout
        self._connect_timeout = connect_timeout
        self.front: FrontEnd | None = None

    async def start(self, channel: EventChannel) -> None:
        from handoffs_runtime.distributed import (  # gRPC is loaded only for a server that uses it
            Backoff,
            FrontEnd,
        )

        self.front = FrontEnd(
            self._team,
            self._host,
            channel,
            store=self._store,
            credentials=self._credentials,
            turn_timeout=self._turn_timeout,
            backoff=Backoff(give_up_after=self._connect_timeout),
            on_session_end=channel.ended,
            greet=True,
        )
        await self.front.start()

    async def open(self, session_id: str) -> None:
        if self.front is None:
            raise HandoffsError("the web server's front end is not started")
        await self.front.open(session_id)

    async def stop(self) -> None:
        if self.front is not None:
            await self.front.stop()
