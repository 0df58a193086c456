"""``handoffs host``: the gRPC host that workers and chat front ends join."""

from __future__ import annotations

import argparse
import sys

from handoffs_runtime.cli import options
from handoffs_runtime.cli.options import Subcommands
from handoffs_runtime.cli.process import quiet_grpc, run_until_signal
from handoffs_runtime.distributed.host import Host, serve
from handoffs_runtime.distributed.options import Address


def add_parser(sub: Subcommands) -> None:
    host = sub.add_parser("host", help="run the gRPC host that workers and chat front ends join")
    options.add_address_option(
        host,
        default="127.0.0.1:50051",
        help_text="HOST:PORT to listen on (default: 127.0.0.1:50051; port 0 = any free port)",
    )
    options.add_max_message_option(host)
    options.add_verbose_option(host)
    options.add_team_option(host, purpose="whose agents workers may serve")
    options.add_credentials_option(host, role="host")
    host.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --address without --credentials (anyone who reaches it can join)",
    )
    host.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    team = options.team_from_option(args.team)
    quiet_grpc(args)
    host = Host(
        Address.parse(args.address),
        max_message_mb=args.max_message_mb,
        user_topic=team.user_topic,
        credentials=args.credentials,
        insecure=args.insecure,
        agent_types=team.names,
        team=team.name,
    )
    if host.notice is not None:
        print(f"warning: {host.notice}", file=sys.stderr)
    run_until_signal(serve(host))
    return 0
