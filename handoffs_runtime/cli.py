"""The ``handoffs`` command. Thin: it parses options and calls the library."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Sequence

from . import __version__
from .channels import ConsoleChannel
from .chat import run_chat
from .errors import HandoffsError
from .graph import team_mermaid
from .models import model_from_options, model_label
from .sessions_cli import add_sessions_parser, add_store_option, open_store, run_sessions_command
from .team import TeamSpec
from .tools.acme import acme_team
from .tools.orchestrator import orchestrator_team

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
    chat.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    chat.add_argument("--session", help="start or resume the session with this id (default: a new random id)")
    add_store_option(chat)
    chat.add_argument("--no-colour", "--no-color", action="store_true", help="plain text even on a terminal")
    chat.add_argument(
        "-v", "--verbose", action="count", default=0, help="log warnings (-v) or everything (-vv)"
    )

    graph = sub.add_parser("graph", help="print the team's handoff graph as Mermaid")
    graph.add_argument("--team", choices=sorted(TEAMS), default="acme", help="which team (default: acme)")
    graph.set_defaults(verbose=0)
    add_sessions_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _configure_logging(getattr(args, "verbose", 0))
    try:
        if args.command == "chat":
            return _chat(args)
        if args.command == "graph":
            print(team_mermaid(TEAMS[args.team]()), end="")
            return 0

        if args.command == "sessions":
            return run_sessions_command(args)
    except HandoffsError as exc:
        print(f"handoffs: {exc}", file=sys.stderr)
        return 2
    return 1


def _chat(args: argparse.Namespace) -> int:
    model = model_from_options(args.model, base_url=args.base_url)
    team = TEAMS[args.team]()
    label = model_label(model)
    if label == "offline":
        model_line = (
            "model: offline (built-in and deterministic, not a language model; use --model for a real one)"
        )
    else:
        model_line = f"model: {label}"
    channel = ConsoleChannel(colour=False if args.no_colour else None)
    banner = f"handoffs · {team.title or team.name} · {model_line}"
    store = open_store(args.store)
    try:
        asyncio.run(
            run_chat(team, model=model, channel=channel, session_id=args.session, banner=banner, store=store)
        )
    except KeyboardInterrupt:
        channel.write("\nsession ended (interrupted)")
    finally:
        store.close_now()
    return 0


def _configure_logging(verbose: int) -> None:
    level = {0: logging.CRITICAL, 1: logging.WARNING}.get(verbose, logging.INFO)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if verbose < 2:
        logging.getLogger("autogen_core").setLevel(logging.ERROR if verbose else logging.CRITICAL)


if __name__ == "__main__":
    sys.exit(main())
