"""The ``host`` and ``worker`` subcommands and ``chat --host``: thin wrappers that run the library."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import uuid
from collections.abc import Coroutine
from typing import Any

from ..channels import ConsoleChannel
from ..errors import DistributedError
from ..models import model_from_options
from ..sessions_cli import open_store
from ..team import TeamSpec
from ..topics import check_session_id
from .frontend import chat_remote
from .host import exposure_warning, serve
from .options import Address
from .runtime import Backoff
from .worker import parse_shard_option, start_worker


def _run_until_signal(main: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine until it ends or SIGINT/SIGTERM arrives; both end the process with status 0."""

    async def runner() -> None:
        task = asyncio.ensure_future(main)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(runner())


def run_host(args: argparse.Namespace) -> int:
    address = Address.parse(args.address)
    warning = exposure_warning(address)
    if warning is not None:
        print(f"warning: {warning}", file=sys.stderr)
    _run_until_signal(serve(address, max_message_mb=args.max_message_mb))
    return 0


def run_worker(args: argparse.Namespace, team: TeamSpec) -> int:
    agents = [a.strip() for a in args.agents.split(",") if a.strip()] if args.agents else None
    shard = parse_shard_option(args.shard)
    model = model_from_options(args.model, base_url=args.base_url)
    Address.parse(args.host)

    def connected(count: int) -> None:
        if count > 1:
            print(f"worker reconnected to {args.host} (connection {count})", flush=True)

    async def main() -> None:
        print(f"worker connecting to the host at {args.host}...", file=sys.stderr, flush=True)
        runtime, names = await start_worker(
            team,
            args.host,
            model=model,
            backoff=Backoff(give_up_after=args.connect_timeout),
            agents=agents,
            shard=shard,
            max_message_mb=args.max_message_mb,
            on_connected=connected,
            takeover_timeout=args.takeover_seconds,
        )
        where = f" as shard {shard[0]}/{shard[1]}" if shard else ""
        print(f"worker ready: {', '.join(names)}{where} on {args.host}", flush=True)
        try:
            await runtime.wait_closed()  # until a signal, or the host refuses us after a reconnection
        finally:
            if runtime.running:
                await asyncio.shield(runtime.stop())

    _run_until_signal(main())
    return 0


def run_remote_chat(args: argparse.Namespace, team: TeamSpec, channel: ConsoleChannel) -> int:
    Address.parse(args.host)
    session = args.session or uuid.uuid4().hex[:12]
    try:
        check_session_id(session)
    except ValueError as exc:
        raise DistributedError(f"--session: {exc}") from exc
    banner = f"handoffs · {team.title or team.name} · distributed"
    store = open_store(args.store, session=session, take_over=args.take_over)
    try:
        asyncio.run(
            chat_remote(
                team,
                args.host,
                channel,
                session_id=session,
                banner=banner,
                max_message_mb=args.max_message_mb,
                turn_timeout=args.turn_timeout,
                connect_timeout=args.connect_timeout,
                store=store,
            )
        )
    except KeyboardInterrupt:
        channel.write("\nsession ended (interrupted)")
    finally:
        store.close_now()
    return 0
