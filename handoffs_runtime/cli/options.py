"""The options several commands share, each declared here once, and how their values are read.

A command calls ``add_team_option(parser)`` and later ``team_from_option(args.team)``; the wording, the
default and the checks of ``--team`` (and of every option here) are the same wherever it appears.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias
from urllib.parse import urlsplit

from autogen_core.models import ChatCompletionClient

from handoffs_runtime.distributed.options import DEFAULT_MAX_MESSAGE_MB
from handoffs_runtime.errors import HandoffsError, ModelConfigError, TeamConfigError
from handoffs_runtime.models.choice import model_from_options, model_label
from handoffs_runtime.sessions.open import OpenedStore, store_target
from handoffs_runtime.sessions.open import open_store as open_store_at
from handoffs_runtime.team.files import FILE_SUFFIXES, load_team
from handoffs_runtime.team.spec import TeamSpec, call_deadline, model_timeout_team, turn_deadline_team
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.teams.orchestrator import orchestrator_team
from handoffs_runtime.tokens import token_weakness

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What ``add_subparsers`` returns, to which each command adds its parser (a string: not subscriptable at
run time)."""

BUILT_IN_TEAMS: dict[str, Callable[[], TeamSpec]] = {"acme": acme_team, "orchestrator": orchestrator_team}
DEFAULT_TEAM = "acme"


def add_team_option(
    parser: argparse.ArgumentParser, *, purpose: str = "which team", left_out: str | None = None
) -> None:
    """``--team NAME``: a plain string, resolved by :func:`team_from_option` once the line is parsed, so
    that an unknown team is one line saying what to choose (and team files can join without new code
    here). ``left_out`` says what happens without it (then it defaults to ``None``), else it is ACME."""
    names = " or ".join(sorted(BUILT_IN_TEAMS))
    default = DEFAULT_TEAM if left_out is None else None
    parser.add_argument(
        "--team",
        metavar="TEAM",
        default=default,
        help=f"{purpose}: {names}, a team file (FILE.yaml, FILE.json), FILE.py defining `team`, or "
        f"module:attribute (default: {left_out or DEFAULT_TEAM})",
    )


def team_from_option(value: str) -> TeamSpec:
    """The team ``--team`` names; raises :class:`TeamConfigError` saying which teams there are."""
    build = BUILT_IN_TEAMS.get(value)
    if build is not None:
        return build()
    if value.endswith(FILE_SUFFIXES) or ":" in value or value.endswith(".py"):
        return load_team(value)
    names = ", ".join(sorted(BUILT_IN_TEAMS))
    raise TeamConfigError(
        f"--team: no team named {value!r}; the built-in teams are {names}, "
        "or give a team file (FILE.yaml, FILE.json, FILE.py) or module:attribute"
    )


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """``--model``, ``--base-url`` and ``--model-timeout``: which OpenAI-compatible model runs the agents,
    and how long one call may take (the API key comes from ``$OPENAI_API_KEY``, never the command line,
    where other users of the machine could read it)."""
    parser.add_argument(
        "--model",
        help="model name on an OpenAI-compatible endpoint (default: $HANDOFFS_MODEL, else the offline model)",
    )
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    parser.add_argument(
        "--model-timeout",
        type=float,
        metavar="S",
        help="seconds one model call may take, the whole reply included (default: the team's "
        "model_timeout, 45 unless its team file sets another); a streamed reply cut there is kept, "
        "marked as cut",
    )
    parser.add_argument(
        "--turn-deadline",
        type=float,
        metavar="S",
        help="seconds one turn may spend on model calls and tools, across handoffs; then no new call "
        "starts and the person is told the model is too slow (default: the team's turn_deadline, else "
        "twice the model timeout)",
    )


def model_from_args(args: argparse.Namespace, team: TeamSpec | None = None) -> ChatCompletionClient:
    """The model :func:`add_model_options` asked for; without one, the team's own (a team file's
    ``model``), else the built-in offline model (pass the team through ``model_timeout_team``)."""
    if args.model is None and not os.environ.get("HANDOFFS_MODEL") and team is not None and team.model:
        return team.model
    timeout = call_deadline(team, args.model_timeout)
    base_url = checked_base_url(args.base_url, "--base-url")
    checked_base_url(os.environ.get("OPENAI_BASE_URL") if base_url is None else None, "$OPENAI_BASE_URL")
    return model_from_options(args.model, base_url=base_url, timeout=timeout)


def checked_base_url(value: str | None, source: str) -> str | None:
    """``value`` if it is an http(s) URL; else a :class:`ModelConfigError` suggesting the URL meant
    (``localhost:11434`` → ``http://localhost:11434``), before any message is sent to it."""
    if not value:
        return value
    parsed = urlsplit(value)
    if parsed.scheme in ("http", "https") and parsed.netloc:
        return value
    if "://" in value:
        raise ModelConfigError(f"{source} {value}: the URL must start with http:// or https://")
    raise ModelConfigError(f"{source} {value}: the URL has no scheme; did you mean http://{value} ?")


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """What a command that runs agents here makes of :func:`add_model_options` and ``--no-stream``."""

    model: ChatCompletionClient
    team: TeamSpec
    """The team with ``--model-timeout`` and ``--turn-deadline`` applied (:func:`model_timeout_team`,
    :func:`turn_deadline_team`)."""
    label: str
    """What the model is called on screen (``offline`` for the built-in one)."""
    stream: bool
    """Whether replies stream: a real model, unless ``--no-stream``."""


def choose_model(args: argparse.Namespace, team: TeamSpec) -> ModelChoice:
    """The model the options name for ``team`` (see :func:`model_from_args`), and the team made for it."""
    model = model_from_args(args, team)
    label = model_label(model)
    timed = turn_deadline_team(model_timeout_team(team, args.model_timeout), args.turn_deadline)
    return ModelChoice(model, timed, label, stream=label != "offline" and not args.no_stream)


def add_verbose_option(parser: argparse.ArgumentParser) -> None:
    """``-v``/``-vv``: how much is logged to stderr (see ``handoffs_runtime.cli.main``)."""
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="log warnings (-v) or everything (-vv)"
    )


def add_no_stream_option(parser: argparse.ArgumentParser, *, help_text: str) -> None:
    """``--no-stream``: replies whole; ``help_text`` says who streams for this command."""
    parser.add_argument("--no-stream", action="store_true", help=help_text)


def add_host_option(parser: argparse.ArgumentParser, *, help_text: str, required: bool = False) -> None:
    """``--host HOST:PORT``: the gRPC host this process joins; ``help_text`` says in what role."""
    parser.add_argument("--host", metavar="HOST:PORT", required=required, help=help_text)


Role = Literal["host", "worker", "frontend"]

CREDENTIAL_FILES: dict[Role, str] = {
    "host": "TLS and tokens from DIR (host.pem, host.key, worker.token, frontend.token)",
    "worker": "TLS and the worker token from DIR (ca.pem, worker.token)",
    "frontend": "with --host: TLS and the frontend token from DIR (ca.pem, frontend.token)",
}
"""What each role of a deployment reads from ``--credentials DIR``."""


def add_credentials_option(parser: argparse.ArgumentParser, *, role: Role) -> None:
    """``--credentials DIR``: TLS and the token of ``role`` (a key of :data:`CREDENTIAL_FILES`)."""
    parser.add_argument(
        "--credentials", metavar="DIR", help=f"{CREDENTIAL_FILES[role]}; see `handoffs credentials`"
    )


def add_max_message_option(parser: argparse.ArgumentParser) -> None:
    """``--max-message-mb``: gRPC's limit on one message, which the full context must fit."""
    parser.add_argument(
        "--max-message-mb",
        type=float,
        default=DEFAULT_MAX_MESSAGE_MB,
        metavar="MiB",
        help=f"largest gRPC message (default: {DEFAULT_MAX_MESSAGE_MB}; the context grows every turn)",
    )


TEMPORAL_API_KEY_ENV = "TEMPORAL_API_KEY"
"""Where a Temporal cloud namespace's API key is read from: never a command-line argument."""


def add_address_option(
    parser: argparse.ArgumentParser, *, help_text: str, default: str | None = None, required: bool = False
) -> None:
    """``--address HOST:PORT``: where this command listens (``host``) or what it reaches (Temporal)."""
    parser.add_argument("--address", metavar="HOST:PORT", default=default, required=required, help=help_text)


def add_bind_option(parser: argparse.ArgumentParser) -> None:
    """``--bind ADDR``: the address this command's server listens on, loopback unless told."""
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")


def add_turn_timeout_option(parser: argparse.ArgumentParser, *, default: float, help_text: str) -> None:
    """``--turn-timeout S``: how long one turn of the team may take before the command gives it up."""
    parser.add_argument("--turn-timeout", type=float, default=default, metavar="S", help=help_text)


def add_port_option(parser: argparse.ArgumentParser, *, default: int, help_text: str) -> None:
    """``--port N``: the port this command's server listens on."""
    parser.add_argument("--port", type=int, default=default, help=help_text)


def add_server_options(parser: argparse.ArgumentParser, *, port: int) -> None:
    """What a command that serves the team over HTTP is told first: the team, its model, where to listen."""
    add_team_option(parser)
    add_model_options(parser)
    add_bind_option(parser)
    add_port_option(parser, default=port, help_text=f"port (default: {port}; 0 = any free port)")


def add_token_file_option(parser: argparse.ArgumentParser, flag: str, *, holds: str) -> None:
    """``flag FILE``: where the token a server asks for is kept (read by :func:`token_from_file`)."""
    help_text = f"file holding {holds} (default: a new token, printed at start)"
    parser.add_argument(flag, type=Path, help=help_text)


@contextmanager
def needs_extra(command: str, extra: str) -> Iterator[None]:
    """Imports in the block that fail say, in one line, which extra ``command`` needs installed."""
    try:
        yield
    except ImportError as exc:
        install = f"pip install 'handoffs-runtime[{extra}]'"
        raise HandoffsError(f"{command} needs the {extra} extra ({exc.name} is missing): {install}") from None


def token_from_file(path: Path | None, *, what: str) -> str:
    """The token in ``path`` (its first line), or a new random one; a short or guessable one is refused
    (a token is all that stands between a stranger and what it guards). ``what``: its name in errors."""
    if path is None:
        return secrets.token_urlsafe(24)
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise HandoffsError(f"cannot read the {what} file {path}: {exc.strerror}") from None
    if len(token) < 16:
        raise HandoffsError(f"the {what} in {path} is too short: use at least 16 characters")
    if (weakness := token_weakness(token)) is not None:
        raise HandoffsError(
            f"the {what} in {path} is too easy to guess ({weakness}): write a random one, e.g. "
            "the output of `python3 -c 'import secrets; print(secrets.token_urlsafe(24))'`"
        )
    return token


def add_agents_option(parser: argparse.ArgumentParser, *, none_allowed: bool = False) -> None:
    """``--agents A,B``: the agent types a worker serves."""
    none = "; '' for none" if none_allowed else ""
    parser.add_argument(
        "--agents", help=f"comma-separated agent names (default: every agent of the team{none})"
    )


def add_temporal_options(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    """``--address HOST:PORT``, ``--namespace``, ``--tls``: the Temporal cluster (key: the environment)."""
    add_address_option(parser, required=required, help_text="the Temporal server (with --engine temporal)")
    parser.add_argument("--namespace", default="default", help="the Temporal namespace (default: default)")
    parser.add_argument(
        "--tls",
        action="store_true",
        help=f"TLS to the Temporal server (on when ${TEMPORAL_API_KEY_ENV} is set)",
    )


def add_engine_option(parser: argparse.ArgumentParser) -> None:
    """``--engine``: which engine carries the session (with ``--address`` for Temporal)."""
    parser.add_argument(
        "--engine",
        choices=("in-process", "temporal"),
        default="in-process",
        help="in this process (default), or as a Temporal workflow (needs --address)",
    )
    add_temporal_options(parser)


def add_connect_timeout_option(parser: argparse.ArgumentParser, *, when: str = "") -> None:
    """``--connect-timeout S``: how long to look for the host at start; ``when`` prefixes the help."""
    parser.add_argument(
        "--connect-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help=f"{when}give up if no host answers within S seconds at start (default: 30)",
    )


def add_store_option(parser: argparse.ArgumentParser, *, help_text: str | None = None) -> None:
    """``--store PATH|URL``: a SQLite file (``:memory:`` keeps nothing) or a PostgreSQL URL; ``help_text``
    replaces the help of a command that uses the store for less than its sessions."""
    parser.add_argument(
        "--store",
        metavar="PATH|URL",
        help=help_text
        or "session store file (default: $HANDOFFS_STORE, else $XDG_DATA_HOME/handoffs-runtime/"
        "sessions.sqlite3, else ~/.local/share/...); ':memory:' keeps nothing; a postgresql://... URL "
        "shares the sessions with other front ends",
    )


def store_path(option: str | None) -> str:
    """The file or URL ``--store`` names, else ``$HANDOFFS_STORE``, else the default file."""
    return store_target(option)


def open_store(
    option: str | None, *, read_only: bool = False, session: str | None = None, take_over: bool = False
) -> OpenedStore:
    """The store ``--store`` names, holding ``session`` when given (taken over from a live holder only
    with ``take_over``); raises ``StoreError`` with what to do when it cannot be used."""
    store = open_store_at(store_path(option), read_only=read_only)
    if session is not None:
        try:
            asyncio.run(store.claim(session, take_over=take_over))
        except BaseException:
            store.close_now()
            raise
    return store
