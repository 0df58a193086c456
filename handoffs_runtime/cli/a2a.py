"""``handoffs a2a serve``: the team as an A2A agent, for other vendors' agents and clients."""

from __future__ import annotations

import argparse
import asyncio

from handoffs_runtime.cli import options
from handoffs_runtime.cli.options import Subcommands
from handoffs_runtime.cli.process import serve_until_stopped, stop_on_signals
from handoffs_runtime.errors import HandoffsError


def add_parser(sub: Subcommands) -> None:
    a2a = sub.add_parser("a2a", help="speak A2A: serve the team as an A2A agent")
    commands = a2a.add_subparsers(dest="a2a_command", required=True)
    serve = commands.add_parser("serve", help="serve the team over A2A (JSON-RPC and streaming)")
    options.add_server_options(serve, port=8100)
    options.add_token_file_option(serve, "--token-file", holds="the bearer token clients must send")
    options.add_turn_timeout_option(
        serve,
        default=120.0,
        help_text="a request waits at most S seconds for the team's turn; then its task fails (default: 120)",
    )
    options.add_store_option(serve)
    options.add_verbose_option(serve)
    serve.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """What ``handoffs a2a serve`` does; returns when interrupted."""
    team = options.team_from_option(args.team)
    with options.needs_extra("handoffs a2a serve", "a2a"):
        from handoffs_runtime.protocols.a2a.executor import A2ALimits
        from handoffs_runtime.protocols.a2a.serving import serving_team
        from handoffs_runtime.web.limits import Limits
        from handoffs_runtime.web.server import running
    if not args.turn_timeout > 0:
        raise HandoffsError(f"--turn-timeout must be positive, not {args.turn_timeout}")
    token = options.token_from_file(args.token_file, what="token")
    choice = options.choose_model(args, team)
    limits = A2ALimits(turn_seconds=args.turn_timeout)
    store = options.open_store(args.store)

    async def serve() -> None:
        stopped = asyncio.Event()
        async with (
            serving_team(choice.team, model=choice.model, store=store, token=token, limits=limits) as it,
            running(it.app, host=args.bind, port=args.port, limits=Limits(), stopped=stopped) as url,
        ):
            it.address.url = url
            stop_on_signals(stopped)
            print(f"handoffs a2a · {team.title or team.name} · model: {choice.label}", flush=True)
            print(f"A2A endpoint: {url}/ (card: {url}/.well-known/agent-card.json)", flush=True)
            given = f"the token {token}" if args.token_file is None else f"the token in {args.token_file}"
            print(f"clients send Authorization: Bearer with {given}", flush=True)
            await stopped.wait()

    serve_until_stopped(serve(), store)
    return 0
