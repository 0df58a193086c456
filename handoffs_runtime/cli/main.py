"""The ``handoffs`` command. Thin: it parses options and calls the library."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from handoffs_runtime import __version__
from handoffs_runtime.channels.console import ConsoleChannel
from handoffs_runtime.channels.console_stream import StreamingConsoleChannel
from handoffs_runtime.cli.serve import add_serve_parser, run_serve
from handoffs_runtime.cli.sessions import (
    add_sessions_parser,
    add_store_option,
    open_store,
    run_sessions_command,
)
from handoffs_runtime.errors import HandoffsError
from handoffs_runtime.models.choice import model_from_options, model_label
from handoffs_runtime.team.chat import run_chat
from handoffs_runtime.team.graph import team_mermaid
from handoffs_runtime.team.spec import TeamSpec, model_timeout_team, streaming_team
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.teams.orchestrator import orchestrator_team
from handoffs_runtime.telemetry.setup import add_trace_option, install_from_options
from handoffs_runtime.text import PrintableFormatter, printable

TEAMS: dict[str, Callable[[], TeamSpec]] = {"acme": acme_team, "orchestrator": orchestrator_team}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="handoffs", description="A multi-agent handoffs runtime on autogen-core."
    )
    parser.add_argument("--version", action="version", version=f"handoffs-runtime {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    chat = sub.add_parser("chat", help="talk to a team in this terminal")
    chat.add_argument("--team", choices=sorted(TEAMS), default="acme", help="which team (default: acme)")
    chat.add_argument(
        "--model",
        help="model name on an OpenAI-compatible endpoint (default: $HANDOFFS_MODEL, else the offline model)",
    )
    chat.add_argument(
        "--model-timeout",
        type=float,
        metavar="S",
        help="seconds one model call may take, the whole reply included (default: 30); a streamed reply "
        "cut there is kept, marked as cut",
    )
    chat.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    chat.add_argument("--session", help="start or resume the session with this id (default: a new random id)")
    chat.add_argument(
        "--take-over",
        action="store_true",
        help="open the session even if another live process holds it; that process stops writing to it",
    )
    add_store_option(chat)
    chat.add_argument("--no-colour", "--no-color", action="store_true", help="plain text even on a terminal")
    chat.add_argument("--no-stream", action="store_true", help="print replies whole, not as they are written")
    chat.add_argument(
        "-v", "--verbose", action="count", default=0, help="log warnings (-v) or everything (-vv)"
    )
    add_trace_option(chat)

    graph = sub.add_parser("graph", help="print the team's handoff graph as Mermaid")
    graph.add_argument("--team", choices=sorted(TEAMS), default="acme", help="which team (default: acme)")
    graph.set_defaults(verbose=0)
    add_sessions_parser(sub)
    add_serve_parser(sub, sorted(TEAMS))
    _add_distributed_commands(sub, chat)
    return parser


def _add_distributed_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], chat: argparse.ArgumentParser
) -> None:
    """``host``, ``worker`` and ``chat --host``: the team across processes (handoffs_runtime.distributed)."""
    from handoffs_runtime.distributed.options import DEFAULT_MAX_MESSAGE_MB

    size: dict[str, Any] = {
        "type": float,
        "default": DEFAULT_MAX_MESSAGE_MB,
        "metavar": "MiB",
        "help": f"largest gRPC message (default: {DEFAULT_MAX_MESSAGE_MB}; the context grows every turn)",
    }
    verbose: dict[str, Any] = {"action": "count", "default": 0, "help": "log warnings (-v) or all (-vv)"}
    chat.add_argument("--host", help="join a distributed team through its host at HOST:PORT")
    chat.add_argument("--max-message-mb", **size)
    chat.add_argument(
        "--turn-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="with --host: give a turn up when no answer comes for S seconds (default: 60; a 'still "
        "waiting' notice comes after 10)",
    )
    chat.add_argument(
        "--connect-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="with --host: give up if no host answers within S seconds at start (default: 30)",
    )

    host = sub.add_parser("host", help="run the gRPC host that workers and chat front ends join")
    host.add_argument(
        "--address",
        default="127.0.0.1:50051",
        help="HOST:PORT to listen on (default: 127.0.0.1:50051; port 0 = any free port)",
    )
    host.add_argument("--max-message-mb", **size)
    host.add_argument("-v", "--verbose", **verbose)

    worker = sub.add_parser("worker", help="serve some of the team's agents for a host")
    worker.add_argument("--host", required=True, help="the host's HOST:PORT")
    worker.add_argument("--agents", help="comma-separated agent names (default: every agent of the team)")
    worker.add_argument("--shard", metavar="i/N", help="serve the i-th (from 0) of N shares of the sessions")
    worker.add_argument("--team", choices=sorted(TEAMS), default="acme", help="which team (default: acme)")
    worker.add_argument("--model", help="model name on an OpenAI-compatible endpoint (default: offline)")
    worker.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    worker.add_argument("--max-message-mb", **size)
    worker.add_argument(
        "--no-stream",
        action="store_true",
        help="call the model without streaming (default: a real model streams its replies to the person)",
    )
    worker.add_argument(
        "--connect-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="give up if no host answers within S seconds at start (default: 30)",
    )
    worker.add_argument(
        "--takeover-seconds",
        type=float,
        default=10.0,
        metavar="S",
        help="retry an agent type still held by a crashed predecessor this long (default: 10)",
    )
    worker.add_argument("-v", "--verbose", **verbose)
    host.add_argument("--team", choices=sorted(TEAMS), default="acme", help="whose agents workers may serve")
    from handoffs_runtime.cli.distributed import add_security_options

    add_security_options(sub, chat=chat, host=host, worker=worker)
    add_trace_option(worker)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _configure_logging(getattr(args, "verbose", 0))
    try:
        if args.command in ("chat", "worker"):
            install_from_options(args, service_name=f"handoffs-{args.command}")
        if args.command == "chat":
            return _chat(args)
        if args.command == "graph":
            print(team_mermaid(TEAMS[args.team]()), end="")
            return 0

        if args.command == "sessions":
            return run_sessions_command(args)

        if args.command == "serve":
            return run_serve(args, TEAMS[args.team]())

        if args.command in ("host", "worker", "credentials"):
            from handoffs_runtime.cli.distributed import run_credentials, run_host, run_worker

            if args.command == "credentials":
                return run_credentials(args)
            team = TEAMS[args.team]()
            return run_host(args, team) if args.command == "host" else run_worker(args, team)
    except HandoffsError as exc:
        print(f"handoffs: {printable(str(exc))}", file=sys.stderr)
        return 2
    return 1


def _chat(args: argparse.Namespace) -> int:
    team = TEAMS[args.team]()
    if args.host:  # a front end: the workers call the models, so no model (and no API key) is needed here
        from handoffs_runtime.cli.distributed import run_remote_chat

        console = ConsoleChannel if args.no_stream else StreamingConsoleChannel  # the workers decide
        return run_remote_chat(args, team, console(colour=False if args.no_colour else None))
    model = model_from_options(args.model, base_url=args.base_url, timeout=args.model_timeout)
    if args.model_timeout is not None:
        team = model_timeout_team(team, args.model_timeout)
    label = model_label(model)
    if label == "offline":
        model_line = (
            "model: offline (built-in and deterministic, not a language model; use --model for a real one)"
        )
    else:
        model_line = f"model: {label}"
    stream = label != "offline" and not args.no_stream and not args.host
    console = StreamingConsoleChannel if stream else ConsoleChannel
    channel = console(colour=False if args.no_colour else None)
    if stream:
        team = streaming_team(team, stream=True)
    banner = f"handoffs · {team.title or team.name} · {model_line}"
    if args.host:
        from handoffs_runtime.cli.distributed import run_remote_chat

        return run_remote_chat(args, team, channel)
    store = open_store(args.store)
    try:
        asyncio.run(
            run_chat(
                team,
                model=model,
                channel=channel,
                session_id=args.session,
                banner=banner,
                store=store,
                take_over=args.take_over,
            )
        )
    except KeyboardInterrupt:
        channel.write("\nsession ended (interrupted)")
    finally:
        store.close_now()
    # The person was told why the session stopped; the exit status tells a script.
    return 0 if store.failure is None else 2


def _configure_logging(verbose: int) -> None:
    level = {0: logging.CRITICAL, 1: logging.WARNING}.get(verbose, logging.INFO)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    if verbose < 2:
        logging.getLogger("autogen_core").setLevel(logging.ERROR if verbose else logging.CRITICAL)


if __name__ == "__main__":
    sys.exit(main())
