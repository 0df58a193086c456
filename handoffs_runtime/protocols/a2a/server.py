"""A team's A2A app: its Agent Card, JSON-RPC and streaming, behind a bearer token and a size limit.

The card's skills are the team's AI agents (their display names, descriptions and examples). Every call
but the card's needs ``Authorization: Bearer <token>``; a body over the limit is refused before it is read
whole. Sessions live in the team's store, so a restarted server resumes each context where it stopped.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from importlib.metadata import version
from typing import Any

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, PROTOCOL_VERSION_1_0, TransportProtocol
from starlette.applications import Starlette

from handoffs_runtime.protocols.a2a.executor import TeamExecutor
from handoffs_runtime.team.spec import TeamSpec

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

RPC_PATH = "/"


def agent_card(team: TeamSpec, url: str) -> AgentCard:
    """The team's card: one skill per AI agent, JSON-RPC at ``url``, a bearer token required."""
    skills = [
        AgentSkill(
            id=agent.name,
            name=agent.label,
            description=agent.description or agent.label,
            tags=[team.name],
            examples=list(agent.examples),
        )
        for agent in team.agents
        if agent.kind == "ai"
    ]
    return AgentCard(
        name=team.title or team.name,
        description=team.greeting or f"The {team.name} team.",
        supported_interfaces=[
            AgentInterface(
                url=url.rstrip("/") + RPC_PATH,
                protocol_binding=TransportProtocol.JSONRPC.value,
                protocol_version=PROTOCOL_VERSION_1_0,
            )
        ],
        version=version("handoffs-runtime"),
        capabilities=AgentCapabilities(streaming=True),
        security_schemes={
            "bearer": SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
        },
        security_requirements=[SecurityRequirement(schemes={"bearer": StringList()})],
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=skills,
    )


class CardAddress:
    """Where the server is reached, known once it listens (port 0 picks one): the card says it."""

    def __init__(self, url: str = "http://127.0.0.1") -> None:
        self.url = url


def create_a2a_app(
    team: TeamSpec,
    executor: TeamExecutor,
    *,
    token: str,
    address: CardAddress | None = None,
) -> ASGIApp:
    """The ASGI app: the card (public), JSON-RPC (bearer token), bodies bounded by the executor's
    limits."""
    where = address or CardAddress()
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=agent_card(team, where.url)
    )

    async def addressed(_: AgentCard) -> AgentCard:
        return agent_card(team, where.url)

    routes = [
        *create_agent_card_routes(agent_card(team, where.url), card_modifier=addressed),
        *create_jsonrpc_routes(handler, RPC_PATH),
    ]
    app = Starlette(routes=routes)
    return _guarded(app, token, executor.limits.request_bytes)


def _guarded(app: ASGIApp, token: str, max_bytes: int) -> ASGIApp:
    """``app`` behind the bearer token (the card excepted) and a bound on the request body."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") == AGENT_CARD_WELL_KNOWN_PATH:
            await app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        if not hmac.compare_digest(headers.get(b"authorization", b""), expected):
            await _refuse(send, 401, "a bearer token is required (Authorization: Bearer <token>)")
            return
        declared = headers.get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > max_bytes:
            await _refuse(send, 413, f"the request is over {max_bytes:,} bytes")
            return
        read = 0

        async def bounded() -> Message:
            nonlocal read
            message = await receive()
            read += len(message.get("body", b""))
            if read > max_bytes:
                raise ValueError(f"request body over {max_bytes} bytes")
            return message

        await app(scope, bounded, send)

    return guarded


async def _refuse(send: Send, status: int, why: str) -> None:
    body = json.dumps({"error": why}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
