"""``handoffs worker``: some of the team's agents, served for a gRPC host."""

from __future__ import annotations

import argparse
import asyncio

from handoffs_runtime.cli import options
from handoffs_runtime.cli.options import Subcommands
from handoffs_runtime.cli.process import quiet_grpc, run_until_signal
from handoffs_runtime.distributed.options import Address
from handoffs_runtime.distributed.worker import parse_shard_option, start_worker
from handoffs_runtime.distributed.worker_runtime import Backoff
from handoffs_runtime.team.oversight import operator_oversight
from handoffs_runtime.team.spec import streaming_team
from handoffs_runtime.telemetry.setup import add_trace_option, install_from_options


def add_parser(sub: Subcommands) -> None:
    worker = sub.add_parser("worker", help="serve some of the team's agents for a host")
    options.add_host_option(worker, help_text="the host to serve", required=True)
    options.add_agents_option(worker)
    worker.add_argument("--shard", metavar="i/N", help="serve the i-th (from 0) of N shares of the sessions")
    options.add_team_option(worker)
    options.add_model_options(worker)
    options.add_max_message_option(worker)
    options.add_no_stream_option(
        worker,
        help_text="call the model without streaming (default: a real model streams its replies to the "
        "person)",
    )
    options.add_connect_timeout_option(worker)
    worker.add_argument(
        "--operator-approves",
        action="store_true",
        help="have the operator approve every approval the team asks and each call of its irreversible and "
        "code tools, as handoffs serve does: for the workers of a serve --host front end",
    )
    worker.add_argument(
        "--takeover-seconds",
        type=float,
        default=10.0,
        metavar="S",
        help="retry an agent type still held by a crashed predecessor this long (default: 10)",
    )
    options.add_store_option(
        worker,
        help_text="the session store of the front ends (a SQLite file or a postgresql://... URL), for the "
        "effect ledger only: an irreversible tool's call survives this worker's crash and is not run again "
        "(default: no ledger)",
    )
    options.add_verbose_option(worker)
    options.add_credentials_option(worker, role="worker")
    add_trace_option(worker)
    worker.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    team = options.team_from_option(args.team)
    install_from_options(args, service_name="handoffs-worker")
    agents = [a.strip() for a in args.agents.split(",") if a.strip()] if args.agents else None
    shard = parse_shard_option(args.shard)
    choice = options.choose_model(args, team)
    team = streaming_team(choice.team, stream=choice.stream)
    if args.operator_approves:  # web customers are strangers: the operator console approves instead
        team = operator_oversight(team, approve_code=True)
    Address.parse(args.host)
    quiet_grpc(args)

    def connected(count: int) -> None:
        if count > 1:
            print(f"worker reconnected to {args.host} (connection {count})", flush=True)

    store = None if args.store is None else options.open_store(args.store)

    async def main() -> None:
        print(f"worker connecting to the host at {args.host}...", flush=True)
        runtime, names = await start_worker(
            team,
            args.host,
            model=choice.model,
            backoff=Backoff(give_up_after=args.connect_timeout),
            agents=agents,
            shard=shard,
            max_message_mb=args.max_message_mb,
            on_connected=connected,
            takeover_timeout=args.takeover_seconds,
            credentials=args.credentials,
            store=store,
        )
        where = f" as shard {shard[0]}/{shard[1]}" if shard else ""
        print(f"worker ready: {', '.join(names)}{where} on {args.host}", flush=True)
        try:
            await runtime.wait_closed()  # until a signal, or the host refuses us after a reconnection
        finally:
            if runtime.running:
                await asyncio.shield(runtime.stop())

    try:
        run_until_signal(main())
    finally:
        if store is not None:
            store.close_now()
    return 0
