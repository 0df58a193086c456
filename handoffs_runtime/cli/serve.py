"""``handoffs serve``: the web chat and operator console."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import socket
from collections.abc import Callable

from handoffs_runtime.cli import options, temporal
from handoffs_runtime.cli.options import Subcommands
from handoffs_runtime.cli.process import serve_until_stopped, stop_on_signals
from handoffs_runtime.errors import HandoffsError
from handoffs_runtime.team.spec import streaming_team
from handoffs_runtime.web.limits import Limits, networks
from handoffs_runtime.web.server import running


def add_parser(sub: Subcommands) -> None:
    serve = sub.add_parser("serve", help="serve the web chat (/) and the operator console (/operator)")
    options.add_server_options(serve, port=8000)
    options.add_token_file_option(serve, "--operator-token-file", holds="the operator token")
    serve.add_argument(
        "--approve-code",
        action="store_true",
        help="have an operator approve, in the operator console, each run of the team's code tools "
        "(a team with code tools does not start without it, unless its team file asks the operator)",
    )
    options.add_no_stream_option(serve, help_text="show replies whole, not as they are written")
    options.add_host_option(
        serve,
        help_text="run as a front end of this gRPC host: its workers run the agents (and decide "
        "whether replies stream); --model, --base-url and --no-stream do not apply",
    )
    options.add_credentials_option(serve, role="frontend")
    options.add_engine_option(serve)
    serve.add_argument(
        "--idle-minutes",
        type=float,
        default=10.0,
        help="end a session whose page has been closed this long; it can be resumed (default: 10)",
    )
    options.add_store_option(serve)
    options.add_verbose_option(serve)
    _add_limit_options(serve)
    serve.set_defaults(run=run)


def _add_limit_options(serve: argparse.ArgumentParser) -> None:
    """Who may reach the server, and how much one client may take of it (``web/hosts``, ``web/limits``)."""
    group = serve.add_argument_group("host names and limits")
    group.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name the server answers to besides localhost, loopback and --bind (repeat for more); "
        "requests for any other name are refused (400)",
    )
    group.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="ADDR",
        type=_network,
        help="a reverse proxy's address or network (repeat for more): its X-Forwarded-For names the client "
        "the limits count (from nobody else)",
    )
    defaults = Limits()
    for option, field, kind, help_text in _LIMIT_OPTIONS:
        default = getattr(defaults, field)
        group.add_argument(
            option,
            dest=field,
            type=_positive(kind),
            default=default,
            metavar="N" if kind is int else "S",
            help=f"{help_text} (default: {default:g})",
        )


_LIMIT_OPTIONS: list[tuple[str, str, Callable[[str], float], str]] = [
    ("--max-connections", "max_connections", int, "connections open at once"),
    ("--connections-per-client", "connections_per_client", int, "connections one client holds open"),
    ("--connections-per-minute", "connections_per_minute", int, "connections one client opens a minute"),
    ("--sockets-per-minute", "sockets_per_minute", int, "WebSockets one client opens a minute (reconnects)"),
    ("--sessions-per-client", "sessions_per_client", int, "sessions one client keeps live"),
    ("--new-sessions-per-minute", "new_sessions_per_minute", int, "sessions one client starts a minute"),
    ("--history-page", "history_page", int, "transcript items a page is sent at once"),
    (
        "--request-timeout",
        "request_seconds",
        float,
        "seconds a request (or a WebSocket's first message) may take to arrive",
    ),
    (
        "--unused-session-seconds",
        "unused_session_seconds",
        float,
        "end a session nobody wrote in this long after its page closed",
    ),
]
"""Each numeric option of :class:`Limits`: the option, the field it sets, its type and what it limits."""


def _limits(args: argparse.Namespace) -> Limits:
    numbers = {field: getattr(args, field) for _, field, _, _ in _LIMIT_OPTIONS}
    return Limits(**numbers, trusted_proxies=tuple(args.trusted_proxy))


def _positive(kind: Callable[[str], float]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be positive, not {text}")
        return value

    return parse


def _network(text: str) -> str:
    try:
        networks([text])
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def run(args: argparse.Namespace) -> int:
    """What ``handoffs serve`` does; returns when interrupted. A Temporal client leaves as ``temporal``'s
    commands do (past the SDK's abort at exit)."""
    if args.engine != "temporal":
        return _serve(args)
    try:
        status = _serve(args)
    except HandoffsError as exc:
        status = temporal.refused(exc)
    temporal.leave(status)


def _serve(args: argparse.Namespace) -> int:
    team = options.team_from_option(args.team)
    with options.needs_extra("handoffs serve", "web"):
        from handoffs_runtime.web.app import KEY_SECRET, create_app
        from handoffs_runtime.web.backends import RemoteTeam, TeamBackend
        from handoffs_runtime.web.hosts import AllowedHosts
        from handoffs_runtime.web.hub import SessionHub
        from handoffs_runtime.web.temporal_backend import TemporalTeam, engine_written

    _check_port_free(args.bind, args.port)
    token = options.token_from_file(args.operator_token_file, what="operator token")
    idle = args.idle_minutes * 60
    limits = _limits(args)
    backend: TeamBackend | None = None
    if args.engine == "temporal":  # the workers call the models; this server is their client
        if args.host is not None:
            raise HandoffsError("--host is the gRPC engine's; with --engine temporal give --address only")
        cluster = temporal.cluster_from(args)
        model = None
        label = f"client of Temporal at {cluster.address}"
    elif args.host is None:
        if args.credentials is not None:
            raise HandoffsError("--credentials is for --host: the credentials of the gRPC host to join")
        choice = options.choose_model(args, team)
        model = choice.model
        label = f"model: {choice.label}"
        team = streaming_team(choice.team, stream=choice.stream)
    else:
        from handoffs_runtime.distributed.options import Address

        Address.parse(args.host)
        model = None
        label = f"front end of the host at {args.host}"
    store = options.open_store(args.store)
    try:
        if args.engine == "temporal":
            backend = TemporalTeam(team, cluster, store)
        elif args.host is not None:
            backend = RemoteTeam(team, args.host, store, credentials=args.credentials)
        hub = SessionHub(
            team,
            model,
            engine_written(store) if args.engine == "temporal" else store,
            idle_seconds=idle,
            backend=backend,
            limits=limits,
            approve_code=args.approve_code,
        )
    except BaseException:  # a team refused (code nobody approves): the store is left as it was
        store.close_now()
        raise

    async def serve() -> None:
        # Kept with the sessions, so customers resume after a restart or on another server of the store.
        secret = await store.secret(KEY_SECRET)
        if isinstance(backend, TemporalTeam):
            await backend.connect()
        app = create_app(
            hub, operator_token=token, secret=secret, hosts=AllowedHosts(args.bind, args.allowed_host)
        )
        stopped = asyncio.Event()
        async with running(app, host=args.bind, port=args.port, limits=limits, stopped=stopped) as url:
            stop_on_signals(stopped)
            print(f"handoffs serve · {team.title or team.name} · {label}", flush=True)
            print(f"customer chat:    {url}/", flush=True)
            # The token is never part of a URL: browsers keep every address they visit in their history.
            given = f"the token {token}" if args.operator_token_file is None else args.operator_token_file
            print(f"operator console: {url}/operator (sign in with {given})", flush=True)
            if not _is_loopback(args.bind):
                print("warning: listening beyond this machine over plain HTTP; put TLS in front", flush=True)
            await stopped.wait()

    try:
        serve_until_stopped(serve(), store)
    except HandoffsError:
        if hub.failure is not None:  # say why the team did not start, not only that the server did not
            raise hub.failure from None
        raise
    return 0


def _check_port_free(host: str, port: int) -> None:
    """Refuse a port another process listens on in one line, before anything starts (uvicorn would log
    its own error and exit with another status)."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: TIME_WAIT is free
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise HandoffsError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another port with --port "
                "(0 for any free one), or stop what holds it"
            ) from None


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
