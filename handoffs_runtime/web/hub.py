"""The sessions of ``handoffs serve``: one team, its customers' pages and its operators.

The team runs in this process or behind a gRPC host (see ``backends``). The hub is three roles over one
shared state (``state``): the customers' side (``customers``), the operators' (``operators``) and each
live session's pump (``pump``), which carries its events to the pages attached to it. Which session waits
and who took it is also kept in the store (``wait_for_operator``, ``take_for_operator``), so every server
on it sees the same and a take is decided there.
"""

from __future__ import annotations

import asyncio

from autogen_core.models import ChatCompletionClient

from handoffs_runtime.errors import HandoffsError
from handoffs_runtime.sessions.open import SharedStore
from handoffs_runtime.team.oversight import check_remote_oversight, operator_oversight
from handoffs_runtime.team.spec import TeamSpec
from handoffs_runtime.web.backends import LocalTeam, TeamBackend
from handoffs_runtime.web.customers import Customers
from handoffs_runtime.web.limits import Limits
from handoffs_runtime.web.operators import Operators
from handoffs_runtime.web.pump import Pump
from handoffs_runtime.web.state import HubState


class SessionHub(HubState):
    """Runs ``team`` for many web sessions at once. ``await start()`` before use, ``await stop()`` after.

    ``idle_seconds``: a session whose customer page has been gone this long ends (it stays in the store,
    and the same browser resumes it later); one the customer never wrote in ends sooner
    (``limits.unused_session_seconds``). ``max_sessions`` bounds the sessions live at once.
    ``backend``: where the team runs (default: in this process, calling ``model``; ``RemoteTeam`` for a
    front end of a gRPC host, which needs no model).

    Customers are strangers: every approval the team asks is the operator's, in the operator console,
    and code and irreversible tools are approved before each call
    (:func:`~handoffs_runtime.team.oversight.operator_oversight`); a team whose code would run with
    nobody's approval is refused unless ``approve_code``. A team run by a gRPC host's workers cannot be
    changed here: it must ask the operator already.
    """

    def __init__(
        self,
        team: TeamSpec,
        model: ChatCompletionClient | None,
        store: SharedStore,
        *,
        idle_seconds: float = 600.0,
        max_sessions: int = 1000,
        backend: TeamBackend | None = None,
        limits: Limits | None = None,
        approve_code: bool = False,
    ) -> None:
        if backend is None:
            if model is None:
                raise HandoffsError("SessionHub needs a model to run the team in this process, or a backend")
            team = operator_oversight(team, approve_code=approve_code)
            backend = LocalTeam(team, model, store)
        else:
            check_remote_oversight(team, approve_code=approve_code)
        super().__init__(team, store, limits or Limits())
        self.backend = backend
        self.pump = Pump(self)
        self.customers = Customers(
            self, self.pump, backend, idle_seconds=idle_seconds, max_sessions=max_sessions
        )
        self.operators = Operators(self)
        self.failure: HandoffsError | None = None
        """Why ``start`` failed (a host that cannot be reached, say), for the command to report."""

    async def start(self) -> None:
        try:
            await self.backend.start(self.channel)
        except HandoffsError as exc:
            self.failure = exc
            raise
        await self.reception.restore(self.store)  # who waited for a person when the server stopped

    async def stop(self) -> None:
        self.stop_announcing()
        for live in list(self.live.values()):  # questions still open get no answer; the sessions end
            self.channel.ended(live.session_id)
        pumps = [live.pump for live in self.live.values() if live.pump is not None]
        if pumps:
            await asyncio.wait(pumps, timeout=5)
        await self.backend.stop()

    def is_live(self, session_id: str) -> bool:
        """Whether the session is running (a page may attach to it) rather than ended or not started."""
        return session_id in self.live
