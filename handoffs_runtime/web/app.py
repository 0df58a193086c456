"""The ASGI application of ``handoffs serve``: three pages, their WebSockets and a small JSON API.

``/`` is the customer chat (WebSocket ``/ws``), ``/operator`` the operator console (``/ws/operator``),
``/sessions`` the stored sessions (``/api/sessions``). The pages are static files shipped in the package;
everything they show arrives over the socket or the API and is rendered as text, never as HTML.

Who may see what: a customer gets a new session id and a key only the servers of this store can make
(:func:`~handoffs_runtime.web.protocol.session_key`, under the store's :data:`KEY_SECRET`); the page keeps
both and needs both to resume, so knowing another session's id is not enough, and a restarted server or
another one on the same store resumes it. Operators and the sessions view need the operator token.
Only requests for this server's own host names are served (``web/hosts``), and each client gets its
share and no more (``web/limits``): a WebSocket opened too often is refused (429), one that sends a
malformed message, or nothing within ``request_seconds``, gets one error and is closed, and a customer's
socket quiet for ``quiet_socket_seconds`` is closed (its page reconnects when it is used again).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from handoffs_runtime.errors import UnknownSessionError
from handoffs_runtime.web.frames import Problem, SessionGiven, frame_json
from handoffs_runtime.web.hosts import AllowedHosts, HostGuard
from handoffs_runtime.web.hub import SessionHub
from handoffs_runtime.web.limits import ClientLimits, client_key
from handoffs_runtime.web.pages import HEADERS, page_routes
from handoffs_runtime.web.protocol import (
    Answer,
    Back,
    BadMessage,
    Dismiss,
    Earlier,
    HandBack,
    Hello,
    OperatorHello,
    Take,
    key_matches,
    parse_customer,
    parse_operator,
    session_key,
    token_matches,
)
from handoffs_runtime.web.sockets import (
    LATE,
    POLICY_VIOLATION,
    QUIET,
    TRY_AGAIN_LATER,
    Closing,
    SocketPeer,
    close,
    deny,
    parsed,
    receive_text,
    same_origin,
)
from handoffs_runtime.web.state import HubError, TryLater

logger = logging.getLogger("handoffs_runtime.web")

KEY_SECRET = "web-session-key"
"""The store's secret (:meth:`SharedSecrets.secret`) that signs customer session keys: made once, kept
with the sessions, so a restart, a crash or a second server on the same store resumes every customer."""

TOKEN_REQUIRED = "the operator token is required"
WRONG_TOKEN = "wrong operator token"


def create_app(
    hub: SessionHub,
    *,
    operator_token: str,
    secret: bytes | None = None,
    hosts: AllowedHosts | None = None,
) -> Starlette:
    """The application for ``hub``. ``secret`` signs customer session keys (default: the store's
    :data:`KEY_SECRET`, read when the application starts);
    ``hosts``: the host names it answers to (default: those of a server on loopback). Its limits are
    ``hub.limits``."""
    key_secret = secret
    clients = ClientLimits(hub.limits, max_sessions=hub.customers.max_sessions)
    hello_within = hub.limits.request_seconds
    quiet_for = hub.limits.quiet_socket_seconds

    def refused(request: Request) -> Response | None:
        """``None`` for a request with the operator token, else the 401 (429 for a client that guesses)
        that says what is wrong."""
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not given:
            return _json({"error": TOKEN_REQUIRED}, 401)
        client = client_key(request.client.host if request.client else None)
        if (problem := checked_token(client, given)) is None:
            return None
        status = 429 if problem == ClientLimits.TOO_MANY_GUESSES else 401
        return _json({"error": problem}, status, {"Retry-After": "60"} if status == 429 else {})

    def checked_token(client: str, given: str) -> str | None:
        """``None`` when ``given`` is the operator token, else what to tell ``client``; guesses are
        counted per client, and a client that guesses too often is not answered for a minute."""
        if not clients.may_try_token(client):
            return ClientLimits.TOO_MANY_GUESSES
        if token_matches(operator_token, given):
            return None
        clients.wrong_token(client)
        return WRONG_TOKEN

    async def list_sessions(request: Request) -> Response:
        if (refusal := refused(request)) is not None:
            return refusal
        sessions = await hub.store.list_sessions()
        rows = [
            {
                "session": s.session_id,
                "agent": s.active_agent,
                "status": s.status,
                "messages": s.messages,
                "label": hub.team.label(s.active_agent) if s.team == hub.team.name else s.active_agent,
                "team": s.team,
                "created": s.created_at,
                "updated": s.updated_at,
            }
            for s in sessions[:1000]
        ]
        return _json({"sessions": rows})

    async def show_session(request: Request) -> Response:
        if (refusal := refused(request)) is not None:
            return refusal
        session_id = request.path_params["session"]
        if len(session_id) > 200:
            return _json({"error": "unknown session"}, 404)
        try:
            state = await hub.store.get_session(session_id)
        except UnknownSessionError:
            return _json({"error": "unknown session"}, 404)
        items = [frame_json(item) for item in await hub.history(session_id)]
        label = hub.team.label(state.active_agent) if state.team == hub.team.name else state.active_agent
        return _json(
            {
                "session": session_id,
                "agent": state.active_agent,
                "label": label,
                "status": state.status,
                "items": items,
            }
        )

    async def opened(socket: WebSocket) -> str | None:
        """Accept the socket and return its client, or refuse it (``None``): a foreign page, too often."""
        if not same_origin(socket):
            await socket.close(POLICY_VIOLATION)
            return None
        client = client_key(socket.client.host if socket.client else None)
        if not clients.may_connect(client):
            await deny(socket, 429, "too many connections from your address; please wait a minute\n")
            return None
        await socket.accept()
        return client

    async def customer_socket(socket: WebSocket) -> None:
        if (client := await opened(socket)) is None:
            return
        peer = SocketPeer(socket)
        session: str | None = None
        try:
            while (raw := await receive_text(*quiet_or_late(socket, session))) is not None:
                try:
                    message = parsed(raw, parse_customer)
                    if isinstance(message, Hello):
                        if session is not None:
                            raise BadMessage("this connection is in a session already")
                        opening = _open(message)
                        if not hub.is_live(opening):
                            refused = clients.start_session(client, opening, hub.is_live)
                            if refused is not None:
                                raise Closing(refused, TRY_AGAIN_LATER)
                        session = opening
                        await peer.send(SessionGiven(session=session, key=session_key(signing(), session)))
                        await hub.customers.attach(session, peer)
                    elif session is None:
                        raise BadMessage("send hello first")
                    elif isinstance(message, Earlier):
                        await hub.customers.earlier(session, peer, message.before)
                    elif isinstance(message, Back):
                        await hub.customers.back_to_assistant(session)
                    else:
                        await hub.customers.says(session, message.text, message.question)
                except TryLater as exc:  # the page comes back by itself, a little later
                    raise Closing(str(exc), TRY_AGAIN_LATER) from None
                except (BadMessage, HubError) as exc:
                    await peer.send(Problem(message=str(exc)))
        except Closing as exc:
            await close(peer, exc)
        except WebSocketDisconnect:
            pass
        finally:
            peer.stop()
            if session is not None:
                hub.customers.detach(session, peer)

    def quiet_or_late(socket: WebSocket, session: str | None) -> tuple[WebSocket, float, str]:
        """How long a customer's socket may stay silent: a hello is due soon, a session's page may rest."""
        return (socket, quiet_for, QUIET) if session else (socket, hello_within, LATE)

    def _open(message: Hello) -> str:
        if message.session is None:
            return hub.customers.new_session_id()
        if message.key is None or not key_matches(signing(), message.session, message.key):
            raise Closing("unknown session, or not yours: start a new one")
        return message.session

    async def operator_socket(socket: WebSocket) -> None:
        if (client := await opened(socket)) is None:
            return
        peer = SocketPeer(socket)
        signed_in = False
        try:
            while (raw := await receive_text(socket, None if signed_in else hello_within)) is not None:
                message = parsed(raw, parse_operator)
                if not signed_in:  # an operator connection does nothing else before the token
                    if not isinstance(message, OperatorHello):
                        raise Closing(TOKEN_REQUIRED)
                    if (problem := checked_token(client, message.token)) is not None:
                        guessing = problem == ClientLimits.TOO_MANY_GUESSES
                        raise Closing(problem, TRY_AGAIN_LATER if guessing else POLICY_VIOLATION)
                    signed_in = True
                    await hub.operators.add(peer)
                    continue
                try:
                    if isinstance(message, Take):
                        await hub.operators.take(peer, message.session)
                    elif isinstance(message, Answer):
                        await hub.operators.says(peer, message.session, message.text, message.question)
                    elif isinstance(message, HandBack):
                        await hub.operators.hand_back(peer, message.session, message.agent)
                    elif isinstance(message, Dismiss):
                        await hub.operators.dismiss(message.session)
                    else:
                        raise BadMessage("signed in already")
                except (BadMessage, HubError) as exc:
                    await peer.send(Problem(message=str(exc)))
        except Closing as exc:
            await close(peer, exc)
        except WebSocketDisconnect:
            pass
        finally:
            peer.stop()
            if signed_in:
                await hub.operators.remove(peer)

    def signing() -> bytes:
        assert key_secret is not None, "the application signs keys only once started"
        return key_secret

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        nonlocal key_secret
        if key_secret is None:
            key_secret = await hub.secrets.secret(KEY_SECRET)
        await hub.start()
        try:
            yield
        finally:
            await hub.stop()

    routes: list[BaseRoute] = page_routes(hub.team.title or hub.team.name)
    routes += [
        Route("/api/sessions", list_sessions),
        Route("/api/sessions/{session}", show_session),
        WebSocketRoute("/ws", customer_socket),
        WebSocketRoute("/ws/operator", operator_socket),
    ]
    guard = Middleware(HostGuard, hosts=hosts or AllowedHosts("127.0.0.1"))
    return Starlette(routes=routes, lifespan=lifespan, middleware=[guard])


def _json(data: Mapping[str, Any], status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return JSONResponse(dict(data), status_code=status, headers={**HEADERS, **(headers or {})})
