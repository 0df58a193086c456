"""The ``host``, ``worker`` and ``credentials`` subcommands and ``chat --host``: thin wrappers that run
the library."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import uuid
from collections.abc import Coroutine
from typing import Any

from handoffs_runtime.channels.console import ConsoleChannel
from handoffs_runtime.cli.sessions import open_store
from handoffs_runtime.distributed.credentials import (
    ROLES,
    create_credentials,
    renew_host_certificate,
    rotate_token,
)
from handoffs_runtime.distributed.frontend import chat_remote
from handoffs_runtime.distributed.host import Host, serve
from handoffs_runtime.distributed.options import Address
from handoffs_runtime.distributed.worker import parse_shard_option, start_worker
from handoffs_runtime.distributed.worker_runtime import Backoff
from handoffs_runtime.errors import DistributedError
from handoffs_runtime.models.choice import model_from_options, model_label
from handoffs_runtime.team.spec import TeamSpec, streaming_team
from handoffs_runtime.topics import check_session_id


def add_security_options(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    *,
    chat: argparse.ArgumentParser,
    host: argparse.ArgumentParser,
    worker: argparse.ArgumentParser,
) -> None:
    """``--credentials`` on ``chat``, ``host`` and ``worker``; ``--insecure`` on ``host``; and
    ``handoffs credentials create|rotate``."""
    what = {
        chat: "with --host: TLS and the frontend token from DIR (ca.pem, frontend.token)",
        host: "TLS and tokens from DIR (host.pem, host.key, worker.token, frontend.token)",
        worker: "TLS and the worker token from DIR (ca.pem, worker.token)",
    }
    for parser, help_text in what.items():
        parser.add_argument("--credentials", metavar="DIR", help=f"{help_text}; see `handoffs credentials`")
    host.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --address without --credentials (anyone who reaches it can join)",
    )
    credentials = sub.add_parser("credentials", help="create or rotate the credentials of a deployment")
    actions = credentials.add_subparsers(dest="credentials_command", required=True)
    create = actions.add_parser(
        "create", help="write ca.pem, host.pem, host.key, worker.token, frontend.token (mode 0600) into DIR"
    )
    create.add_argument("directory", metavar="DIR")
    create.add_argument(
        "--host-name",
        action="append",
        default=[],
        metavar="NAME",
        help="a DNS name or IP address workers use to reach the host (repeatable; loopback is always in)",
    )
    rotate = actions.add_parser("rotate", help="replace one role's token in DIR (then restart who uses it)")
    rotate.add_argument("directory", metavar="DIR")
    rotate.add_argument("--role", choices=ROLES, required=True)
    renew = actions.add_parser("renew", help="a new host certificate from the same CA in DIR (tokens kept)")
    renew.add_argument("directory", metavar="DIR")
    renew.add_argument("--host-name", action="append", default=[], metavar="NAME", help="a name to add")
    for parser in (credentials, create, rotate, renew):
        parser.set_defaults(verbose=0)


def run_credentials(args: argparse.Namespace) -> int:
    if args.credentials_command == "create":
        written = create_credentials(args.directory, args.host_name)
        print(f"wrote {', '.join(p.name for p in written)} to {args.directory} (readable by you only)")
        print(
            "the host needs host.pem, host.key, worker.token and frontend.token; each worker ca.pem and "
            "worker.token; each chat front end ca.pem and frontend.token; keep ca.key safe (no process "
            "needs it) for `handoffs credentials renew`"
        )
        return 0
    if args.credentials_command == "renew":
        renew_host_certificate(args.directory, args.host_name)
        print(f"wrote a new host.pem and host.key to {args.directory}: restart the host (nothing else)")
        return 0
    path = rotate_token(args.directory, args.role)
    print(f"wrote a new {path.name}: restart the host and every {args.role} with it")
    return 0


def _quiet_grpc(args: argparse.Namespace) -> None:
    """gRPC's own log lines (a failed TLS handshake, ...) would bury the one line we print."""
    if getattr(args, "verbose", 0) < 2:
        os.environ.setdefault("GRPC_VERBOSITY", "NONE")


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


def run_host(args: argparse.Namespace, team: TeamSpec) -> int:
    _quiet_grpc(args)
    host = Host(
        Address.parse(args.address),
        max_message_mb=args.max_message_mb,
        user_topic=team.user_topic,
        credentials=args.credentials,
        insecure=args.insecure,
        agent_types=team.names,
    )
    if host.notice is not None:
        print(f"warning: {host.notice}", file=sys.stderr)
    _run_until_signal(serve(host))
    return 0


def run_worker(args: argparse.Namespace, team: TeamSpec) -> int:
    agents = [a.strip() for a in args.agents.split(",") if a.strip()] if args.agents else None
    shard = parse_shard_option(args.shard)
    model = model_from_options(args.model, base_url=args.base_url)
    team = streaming_team(team, stream=model_label(model) != "offline" and not args.no_stream)
    Address.parse(args.host)
    _quiet_grpc(args)

    def connected(count: int) -> None:
        if count > 1:
            print(f"worker reconnected to {args.host} (connection {count})", flush=True)

    async def main() -> None:
        print(f"worker connecting to the host at {args.host}...", flush=True)
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
            credentials=args.credentials,
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
    _quiet_grpc(args)
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
                credentials=args.credentials,
            )
        )
    except KeyboardInterrupt:
        channel.write("\nsession ended (interrupted)")
    finally:
        store.close_now()
    return 0 if store.failure is None else 2  # the session could not be saved (or was taken over)
