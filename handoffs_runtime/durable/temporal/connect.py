"""Reaching a Temporal server: the client options a production cluster takes, and one clear error.

An unreachable server is one line that names the address and what to do, never a traceback.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta

from temporalio.client import Client
from temporalio.service import RPCError, TLSConfig

from handoffs_runtime.errors import DistributedError


class TemporalUnreachableError(DistributedError):
    """No Temporal server answered at the address given."""


@dataclass(frozen=True, slots=True)
class Cluster:
    """Where the Temporal server is and how to talk to it (the Temporal client's own options)."""

    address: str
    namespace: str = "default"
    api_key: str | None = None
    tls: bool = False
    """On with an API key (a cloud namespace) or when asked for; off for a dev server on loopback."""
    connect_timeout: float = 5.0


async def connect(cluster: Cluster) -> Client:
    """A client of ``cluster``; :class:`TemporalUnreachableError` when nothing answers in time.

    A server that is starting (it listens, but its frontend is not healthy yet) is tried again until
    ``connect_timeout`` runs out.
    """
    tls: bool | TLSConfig = cluster.tls or cluster.api_key is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + cluster.connect_timeout
    while True:
        left = max(0.1, deadline - loop.time())
        try:
            return await Client.connect(
                cluster.address,
                namespace=cluster.namespace,
                api_key=cluster.api_key,
                tls=tls,
                connect_timeout=timedelta(seconds=left),
            )
        except (RuntimeError, RPCError, OSError) as exc:
            if loop.time() + 0.2 < deadline and "not healthy yet" in str(exc):
                await asyncio.sleep(0.2)
                continue
            raise TemporalUnreachableError(
                f"no Temporal server at {cluster.address} ({_first_line(exc)}); start one with "
                "'handoffs temporal dev' or check --address"
            ) from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__
