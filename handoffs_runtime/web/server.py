"""Running the web app on uvicorn, and the operator token."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from handoffs_runtime.errors import HandoffsError
from handoffs_runtime.tokens import token_weakness
from handoffs_runtime.web.connections import protocols
from handoffs_runtime.web.limits import Limits, networks
from handoffs_runtime.web.protocol import MAX_FRAME_BYTES


def operator_token(path: Path | None) -> str:
    """The token from ``path`` (first line), or a new random one."""
    if path is None:
        return secrets.token_urlsafe(24)
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise HandoffsError(f"cannot read the operator token file {path}: {exc.strerror}") from None
    if len(token) < 16:
        raise HandoffsError(f"the operator token in {path} is too short: use at least 16 characters")
    if (weakness := token_weakness(token)) is not None:
        raise HandoffsError(
            f"the operator token in {path} is too easy to guess ({weakness}): write a random one, e.g. "
            "the output of `python3 -c 'import secrets; print(secrets.token_urlsafe(24))'`"
        )
    return token


@asynccontextmanager
async def running(
    app: object,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    limits: Limits | None = None,
    stopped: asyncio.Event | None = None,
) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn until the block ends; yields the base URL (the real port for port 0).

    ``limits``: the connection caps and the request deadline (``web/connections``); with
    ``limits.trusted_proxies``, ``X-Forwarded-For`` from those proxies names the client, and from nobody
    else. ``stopped`` is set if the server stops by itself (uvicorn saw SIGINT or SIGTERM first).
    """
    import uvicorn

    limits = limits or Limits()
    http, ws = protocols(limits)
    config = uvicorn.Config(
        app,  # type: ignore[arg-type]
        host=host,
        port=port,
        http=http,
        ws=ws,
        ws_max_size=MAX_FRAME_BYTES,
        ws_per_message_deflate=False,  # small JSON messages: compressing each costs more than it saves
        limit_concurrency=limits.max_connections,
        timeout_graceful_shutdown=5,
        proxy_headers=bool(limits.trusted_proxies),
        forwarded_allow_ips=[str(n) for n in networks(limits.trusted_proxies)],  # "10.0.0.7/24" too
        log_level="warning",
        lifespan="on",
    )
    server = uvicorn.Server(config)
    task = asyncio.get_running_loop().create_task(server.serve())
    if stopped is not None:
        task.add_done_callback(lambda _: stopped.set())
    while not server.started:
        if task.done():
            task.result()
            raise HandoffsError(f"the web server could not start on {host}:{port}")
        await asyncio.sleep(0.02)
    bound = server.servers[0].sockets[0].getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    try:
        yield f"http://{shown}:{bound}"
    finally:
        server.should_exit = True
        await task
