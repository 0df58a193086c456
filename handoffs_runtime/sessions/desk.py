"""The operator desk: which sessions wait for a person, and which operator took each, for every server.

Its own protocol, apart from :class:`~handoffs_runtime.sessions.store.SessionStore`: only the web's
operator console needs it, so an agent or a custom store for agents never has to know of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class OperatorWait:
    """A session waiting for a person (an operator), as every web server on the store sees it.

    ``since`` is when it first asked (kept while the same person answers turn after turn); ``taken_by``
    names the operator who took it, ``None`` while it is on the waiting list.
    """

    session_id: str
    prompt: str
    since: float
    taken_by: str | None


@runtime_checkable
class OperatorDesk(Protocol):
    """The waiting list and the operators' claims, kept where every web server sees the same.

    Every method may raise :class:`~handoffs_runtime.errors.StoreError`.
    """

    async def wait_for_operator(self, session_id: str, prompt: str) -> OperatorWait:
        """Record that the session waits for an operator (kept as it is if it waits already)."""
        ...

    async def take_for_operator(self, session_id: str, operator: str) -> bool:
        """Give the waiting session to ``operator``, atomically: ``False`` when another has it or it
        does not wait (of two operators on two servers, exactly one gets it)."""
        ...

    async def release_operator(self, session_id: str, operator: str | None = None) -> None:
        """``operator`` lets go of the session, which goes back on the waiting list; without
        ``operator``, the session waits no more (handed back, answered, ended)."""
        ...

    async def operator_waits(self) -> list[OperatorWait]:
        """Every session waiting for an operator, the longest waiting first."""
        ...


def release_statement(p: str, session_id: str, operator: str | None) -> tuple[str, tuple[str, ...]]:
    """The statement (with ``p``, the driver's placeholder) and parameters that release a session from
    the desk: its wait deleted when ``operator`` is None, else handed back to the waiting list if that
    operator holds it. Both stores run it."""
    if operator is None:
        return f"DELETE FROM operator_waits WHERE session_id = {p}", (session_id,)
    untake = f"UPDATE operator_waits SET taken_by = NULL WHERE session_id = {p} AND taken_by = {p}"
    return untake, (session_id, operator)
