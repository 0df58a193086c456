"""``handoffs chat``: talk to a team in this terminal, in this process or through a gRPC host."""

from __future__ import annotations

import argparse
import asyncio
import uuid
from collections.abc import Coroutine
from typing import Any

from handoffs_runtime.channels.console import ConsoleChannel
from handoffs_runtime.channels.console_stream import StreamingConsoleChannel
from handoffs_runtime.cli import temporal
from handoffs_runtime.cli.options import (
    BUILT_IN_TEAMS,
    DEFAULT_TEAM,
    Subcommands,
    add_connect_timeout_option,
    add_credentials_option,
    add_engine_option,
    add_host_option,
    add_max_message_option,
    add_model_options,
    add_no_stream_option,
    add_store_option,
    add_team_option,
    add_turn_timeout_option,
    add_verbose_option,
    choose_model,
    open_store,
    team_from_option,
)
from handoffs_runtime.cli.process import interruptible, quiet_grpc
from handoffs_runtime.distributed.frontend import chat_remote
from handoffs_runtime.distributed.options import Address
from handoffs_runtime.errors import DistributedError, OtherTeamError, SessionTakenOverError
from handoffs_runtime.sessions.open import OpenedStore
from handoffs_runtime.team.chat import run_chat
from handoffs_runtime.team.spec import TeamSpec, streaming_team
from handoffs_runtime.telemetry.setup import add_trace_option, install_from_options
from handoffs_runtime.topics import check_session_id

OFFLINE_LINE = "model: offline (built-in and deterministic, not a language model; use --model for a real one)"


def add_parser(sub: Subcommands) -> None:
    chat = sub.add_parser("chat", help="talk to a team in this terminal")
    add_team_option(chat, left_out=f"{DEFAULT_TEAM}; with --host, the host's team if it is built in")
    add_model_options(chat)
    chat.add_argument("--session", help="start or resume the session with this id (default: a new random id)")
    chat.add_argument(
        "--take-over",
        action="store_true",
        help="open the session even if another live process holds it; that process stops writing to it",
    )
    add_store_option(chat)
    chat.add_argument("--no-colour", "--no-color", action="store_true", help="plain text even on a terminal")
    add_no_stream_option(chat, help_text="print replies whole, not as they are written")
    add_verbose_option(chat)
    add_trace_option(chat)
    add_host_option(chat, help_text="join a distributed team through this gRPC host")
    add_max_message_option(chat)
    add_turn_timeout_option(
        chat,
        default=60.0,
        help_text="with --host: give a turn up when no answer comes for S seconds (default: 60; a 'still "
        "waiting' notice comes after 10)",
    )
    add_connect_timeout_option(chat, when="with --host: ")
    add_credentials_option(chat, role="frontend")
    add_engine_option(chat)
    chat.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    team = team_from_option(args.team or DEFAULT_TEAM)
    if args.engine == "temporal":  # the workers call the models; this terminal only sends and shows
        return temporal.chat(args, team)
    if args.host:  # a front end: the workers call the models (and decide whether replies stream)
        channel = (ConsoleChannel if args.no_stream else StreamingConsoleChannel)(colour=_colour(args))
        _trace(args, channel)
        return _remote(args, team, channel)
    return _local(args, team)


def _trace(args: argparse.Namespace, channel: ConsoleChannel) -> None:
    """Telemetry as the options say; ``--trace console``'s trees go beside the conversation."""
    install_from_options(args, service_name="handoffs-chat", summary=channel.aside)


def _colour(args: argparse.Namespace) -> bool | None:
    """``None`` lets the console decide (colour on a terminal only)."""
    return False if args.no_colour else None


def _local(args: argparse.Namespace, team: TeamSpec) -> int:
    """The whole team in this process, on the model the options name."""
    choice = choose_model(args, team)
    model_line = OFFLINE_LINE if choice.label == "offline" else f"model: {choice.label}"
    channel = (StreamingConsoleChannel if choice.stream else ConsoleChannel)(colour=_colour(args))
    _trace(args, channel)
    team = streaming_team(choice.team, stream=True) if choice.stream else choice.team
    banner = f"handoffs · {team.title or team.name} · {model_line}"
    store = open_store(args.store)
    conversation = run_chat(
        team,
        model=choice.model,
        channel=channel,
        session_id=args.session,
        banner=banner,
        store=store,
        take_over=args.take_over,
    )
    return _converse(conversation, channel, store)


def _remote(args: argparse.Namespace, team: TeamSpec, channel: ConsoleChannel) -> int:
    """A front end of a gRPC host, of the host's team when ``--team`` is left out and the host serves a
    built-in one; another team is one line saying which the host serves."""
    try:
        return _front_end(args, team, channel)
    except OtherTeamError as exc:
        if args.team is None and exc.served in BUILT_IN_TEAMS:
            return _front_end(args, team_from_option(exc.served), channel)
        raise DistributedError(
            f"the host at {args.host} serves the team {exc.served!r}, not {team.name!r}: "
            "run with the --team the host was started with"
        ) from None


def _front_end(args: argparse.Namespace, team: TeamSpec, channel: ConsoleChannel) -> int:
    """A front end of a gRPC host: no model (and no API key) here, the workers call the models."""
    Address.parse(args.host)
    quiet_grpc(args)
    session = args.session or uuid.uuid4().hex[:12]
    try:
        check_session_id(session)
    except ValueError as exc:
        raise DistributedError(f"--session: {exc}") from exc
    store = open_store(args.store, session=session, take_over=args.take_over)
    conversation = chat_remote(
        team,
        args.host,
        channel,
        session_id=session,
        banner=f"handoffs · {team.title or team.name} · distributed",
        max_message_mb=args.max_message_mb,
        turn_timeout=args.turn_timeout,
        connect_timeout=args.connect_timeout,
        store=store,
        credentials=args.credentials,
    )
    return _converse(conversation, channel, store)


def _converse(conversation: Coroutine[Any, Any, object], channel: ConsoleChannel, store: OpenedStore) -> int:
    """Run the conversation until it ends or Ctrl-C; the store is closed either way."""
    interruptible()
    try:
        asyncio.run(conversation)
    except KeyboardInterrupt:
        channel.write("\nsession ended (interrupted)")
    finally:
        store.close_now()
    if isinstance(store.failure, SessionTakenOverError):
        channel.write("  (to take the session back to this terminal, run the same command with --take-over)")
    # The person was told why the session stopped (could not be saved, or was taken over); the exit
    # status tells a script.
    return 0 if store.failure is None else 2
