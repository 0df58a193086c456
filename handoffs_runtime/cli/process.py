"""What the long-running commands (``host``, ``worker``, ``chat``) share as processes.

They end cleanly on a signal, and gRPC's own log lines stay out of the way; the servers (``serve``,
``a2a serve``) stop on a signal the same way and close their store."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Coroutine
from typing import Any

from handoffs_runtime.sessions.open import OpenedStore


def quiet_grpc(args: argparse.Namespace) -> None:
    """gRPC's own log lines (a failed TLS handshake, ...) would bury the one line we print."""
    if getattr(args, "verbose", 0) < 2:
        os.environ.setdefault("GRPC_VERBOSITY", "NONE")


def interruptible() -> None:
    """SIGINT ends a conversation (``session ended (interrupted)``) even when the process started with it
    ignored, as a script's background job does: a ``kill -INT`` sent on purpose is obeyed, as the servers
    obey it (:func:`stop_on_signals`). Only from the main thread, where signals are handled."""
    if (
        signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        and threading.current_thread() is threading.main_thread()
    ):
        signal.signal(signal.SIGINT, signal.default_int_handler)


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


def stop_on_signals(stopped: asyncio.Event) -> None:
    """SIGINT and SIGTERM set ``stopped``, whatever the process inherited (a script's background job
    starts with SIGINT ignored). Installed over uvicorn's own handlers, which stop the server but then
    raise the signal again as inherited: ignored (the process never ends), or SIGTERM's default (it dies
    before letting go of its sessions). A second signal changes nothing: the shutdown is under way."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopped.set)


def serve_until_stopped(main: Coroutine[Any, Any, None], store: OpenedStore) -> None:
    """Run a server's coroutine to its end (an interrupt ends it too), say so, and close its store."""
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(main)
        print("stopped", file=sys.stderr)
    finally:
        store.close_now()
