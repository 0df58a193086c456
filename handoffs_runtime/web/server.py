"""Running the web app on uvicorn."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from handoffs_runtime.errors import HandoffsError
from handoffs_runtime.web.connections import protocols
from handoffs_runtime.web.limits import Limits, networks
from handoffs_runtime.web.protocol import MAX_FRAME_BYTES


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
