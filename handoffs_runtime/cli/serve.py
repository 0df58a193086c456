"""``handoffs serve``: the web chat and operator console."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import sys
from pathlib import Path

from handoffs_runtime.cli.options import (
    Subcommands,
    add_credentials_option,
    add_host_option,
    add_model_options,
    add_no_stream_option,
    add_store_option,
    add_team_option,
    add_verbose_option,
    model_from_args,
    open_store,
    team_from_option,
)
from handoffs_runtime.errors import HandoffsError
from handoffs_runtime.models.choice import model_label
from handoffs_runtime.team.spec import model_timeout_team, streaming_team
from handoffs_runtime.web.server import operator_token, running


def add_parser(sub: Subcommands) -> None:
    serve = sub.add_parser("serve", help="serve the web chat (/) and the operator console (/operator)")
    add_team_option(serve)
    add_model_options(serve)
    serve.add_argument("--bind", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0 = any free port)")
    serve.add_argument(
        "--operator-token-file",
        type=Path,
        help="file holding the operator token (default: a new token, printed at start)",
    )
    serve.add_argument(
        "--approve-code",
        action="store_true",
        help="have an operator approve, in the operator console, each run of the team's code tools "
        "(a team with code tools does not start without it, unless its team file asks the operator)",
    )
    add_no_stream_option(serve, help_text="show replies whole, not as they are written")
    add_host_option(
        serve,
        help_text="run as a front end of this gRPC host: its workers run the agents (and decide "
        "whether replies stream); --model, --base-url and --no-stream do not apply",
    )
    add_credentials_option(serve, role="frontend")
    serve.add_argument(
        "--idle-minutes",
        type=float,
        default=10.0,
        help="end a session whose page has been closed this long; it can be resumed (default: 10)",
    )
    add_store_option(serve)
    add_verbose_option(serve)
    serve.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """What ``handoffs serve`` does; returns when interrupted."""
    team = team_from_option(args.team)
    try:
        from handoffs_runtime.web.app import create_app
        from handoffs_runtime.web.backends import RemoteTeam
        from handoffs_runtime.web.hub import SessionHub
    except ImportError as exc:
        raise HandoffsError(
            f"handoffs serve needs the web extra ({exc.name} is missing): pip install 'handoffs-runtime[web]'"
        ) from None

    token = operator_token(args.operator_token_file)
    idle = args.idle_minutes * 60
    if args.host is None:
        if args.credentials is not None:
            raise HandoffsError("--credentials is for --host: the credentials of the gRPC host to join")
        model = model_from_args(args, team)
        team = model_timeout_team(team, args.model_timeout)
        label = f"model: {model_label(model)}"
        team = streaming_team(team, stream=not args.no_stream and model_label(model) != "offline")
        backend = None
    else:
        from handoffs_runtime.distributed.options import Address

        Address.parse(args.host)
        model = None
        label = f"front end of the host at {args.host}"
    store = open_store(args.store)
    try:
        if args.host is not None:
            backend = RemoteTeam(team, args.host, store, credentials=args.credentials)
        hub = SessionHub(
            team, model, store, idle_seconds=idle, backend=backend, approve_code=args.approve_code
        )
    except BaseException:  # a team refused (code nobody approves): the store is left as it was
        store.close_now()
        raise
    app = create_app(hub, operator_token=token)

    async def serve() -> None:
        async with running(app, host=args.bind, port=args.port) as url:
            print(f"handoffs serve · {team.title or team.name} · {label}", flush=True)
            print(f"customer chat:    {url}/", flush=True)
            # The token is never part of a URL: browsers keep every address they visit in their history.
            given = f"the token {token}" if args.operator_token_file is None else args.operator_token_file
            print(f"operator console: {url}/operator (sign in with {given})", flush=True)
            if not _is_loopback(args.bind):
                print("warning: listening beyond this machine over plain HTTP; put TLS in front", flush=True)
            await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except HandoffsError:
        if hub.failure is not None:  # say why the team did not start, not only that the server did not
            raise hub.failure from None
        raise
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        store.close_now()
    return 0


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
