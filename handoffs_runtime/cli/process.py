"""What the long-running commands (``host``, ``worker``, ``chat --host``) share as processes.

They end
cleanly on a signal, and gRPC's own log lines stay out of the way."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
from collections.abc import Coroutine
from typing import Any


def quiet_grpc(args: argparse.Namespace) -> None:
    """gRPC's own log lines (a failed TLS handshake, ...) would bury the one line we print."""
    if getattr(args, "verbose", 0) < 2:
        os.environ.setdefault("GRPC_VERBOSITY", "NONE")


def run_until_signal(main: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine until it ends or SIGINT/SIGTERM arrives; both end the process with status 0."""

    async def runner() -> None:
        task = asyncio.ensure_future(main)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(runner())
