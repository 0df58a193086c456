"""``handoffs temporal``: the pinned dev server and the workers of sessions on Temporal; chat's client.

``handoffs temporal dev`` runs the dev server on loopback; ``handoffs temporal worker`` serves the session
workflows (``--workflows``) and the steps of some agent types; ``handoffs chat --engine temporal`` talks
to a session through them (:func:`chat`). The Temporal SDK is imported only here and only when used.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from typing import TYPE_CHECKING, NoReturn

from handoffs_runtime.channels.base import is_exit
from handoffs_runtime.cli import options
from handoffs_runtime.cli.options import Subcommands
from handoffs_runtime.cli.process import interruptible, run_until_signal
from handoffs_runtime.errors import DistributedError, HandoffsError
from handoffs_runtime.messages import USER_PROMPT
from handoffs_runtime.team.spec import TeamSpec
from handoffs_runtime.text import printable
from handoffs_runtime.topics import check_session_id

if TYPE_CHECKING:
    from handoffs_runtime.durable.temporal.connect import Cluster

INSTALL_HINT = "sessions on Temporal need the temporal extra: pip install 'handoffs-runtime[temporal]'"
DEFAULT_PORT = 7233


def add_parser(sub: Subcommands) -> None:
    temporal = sub.add_parser("temporal", help="run sessions on Temporal: a dev server, workers")
    commands = temporal.add_subparsers(dest="temporal_command", required=True)
    dev = commands.add_parser("dev", help="the pinned Temporal dev server on loopback (SQLite, WAL)")
    dev.add_argument("--db", metavar="FILE", default="temporal.db", help="its state (default: temporal.db)")
    options.add_port_option(dev, default=DEFAULT_PORT, help_text=f"its port (default: {DEFAULT_PORT})")
    dev.add_argument("--ui", action="store_true", help="serve the Temporal web UI too")
    dev.set_defaults(run=run_dev)
    worker = commands.add_parser("worker", help="serve session workflows and agent steps")
    options.add_team_option(worker)
    options.add_model_options(worker)
    options.add_temporal_options(worker, required=True)
    options.add_agents_option(worker, none_allowed=True)
    worker.add_argument("--workflows", action="store_true", help="serve the session workflows too")
    options.add_store_option(worker)
    options.add_verbose_option(worker)
    worker.set_defaults(run=run_worker)


def run_dev(args: argparse.Namespace) -> int:
    """Become the dev server (``exec``): a signal to this process's pid reaches the server itself."""
    from handoffs_runtime.durable.temporal.devserver import dev_server_command

    command = dev_server_command(db=args.db, port=args.port, ui=args.ui)
    print(f"temporal dev server on 127.0.0.1:{args.port} (state in {args.db})", flush=True)
    sys.stderr.flush()
    os.execv(command[0], command)


def cluster_from(args: argparse.Namespace) -> Cluster:
    """The Temporal cluster ``--address`` and its options name; an install hint without the extra."""
    try:
        from handoffs_runtime.durable.temporal.connect import Cluster
    except ImportError:
        raise DistributedError(INSTALL_HINT) from None
    if not args.address:
        raise DistributedError("--engine temporal needs --address HOST:PORT (see 'handoffs temporal dev')")
    api_key = os.environ.get(options.TEMPORAL_API_KEY_ENV) or None
    return Cluster(args.address, namespace=args.namespace, api_key=api_key, tls=args.tls)


def run_worker(args: argparse.Namespace) -> int:
    cluster = cluster_from(args)
    from handoffs_runtime.durable.temporal.worker import run_worker as serve
    from handoffs_runtime.durable.temporal.worker import served_agents

    team = options.team_from_option(args.team)
    agents = served_agents(team, args.agents.split(",")) if args.agents is not None else None
    choice = options.choose_model(args, team)
    store = options.open_store(args.store)

    async def main() -> None:
        ready = asyncio.Event()
        serving = asyncio.ensure_future(
            serve(
                cluster,
                choice.team,
                store=store,
                model=choice.model,
                agents=agents,
                workflows=args.workflows,
                ready=ready,
            )
        )
        await asyncio.wait([serving, asyncio.ensure_future(ready.wait())], return_when="FIRST_COMPLETED")
        if serving.done():
            serving.result()
        served = team.names if agents is None else agents
        what = ", ".join([*served, *(["the session workflows"] if args.workflows else [])]) or "nothing"
        print(f"temporal worker ready: {what} on {args.address}", flush=True)
        await serving

    status = 0
    try:
        run_until_signal(main())
    except HandoffsError as exc:
        status = refused(exc)
    finally:
        store.close_now()
    leave(status)  # everything is shut down already


def chat(args: argparse.Namespace, team: TeamSpec) -> int:
    """``handoffs chat --engine temporal``: this terminal as a client of the session's workflow."""
    cluster = cluster_from(args)
    session = args.session or uuid.uuid4().hex[:12]
    try:
        check_session_id(session)
    except ValueError as exc:
        raise DistributedError(f"--session: {exc}") from exc
    interruptible()
    try:
        status = asyncio.run(_converse(cluster, team, session))
    except KeyboardInterrupt:
        print("\nsession ended (interrupted)")
        status = 0
    except HandoffsError as exc:
        status = refused(exc)
    leave(status)


def refused(exc: HandoffsError) -> int:
    """Say ``exc`` as the command's main would, and its status: the process leaves without returning."""
    print(f"handoffs: {printable(str(exc))}", file=sys.stderr)
    return 2


def leave(status: int) -> NoReturn:
    """Exit with ``status`` once the output is written, skipping the interpreter's teardown, where the
    Temporal SDK's runtime can abort the process (its known abort at exit) and turn status 2 into a crash."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


async def _converse(cluster: Cluster, team: TeamSpec, session: str) -> int:
    from handoffs_runtime.durable.temporal.client import TemporalSessions
    from handoffs_runtime.durable.temporal.connect import connect

    sessions = TemporalSessions(await connect(cluster))
    echo = not sys.stdin.isatty()
    print(f"handoffs · {team.title or team.name} · on Temporal at {cluster.address} · session {session}")
    question = ""
    while True:
        prompt = question or USER_PROMPT
        if not echo:
            print(f"{prompt} › ", end="", flush=True)
        line = await asyncio.to_thread(sys.stdin.readline)
        text = line.rstrip("\n") if line else None
        if text is not None and not text.strip():
            continue
        if is_exit(text) or text is None:
            print(f"session {session} ended")
            return 0
        if echo:
            print(printable(f"{prompt} › {text}", multiline=False))
        answered = await sessions.say(session, text)
        for shown in answered.lines:
            if not (question and shown.startswith(f"{question} › ")):  # the answer, echoed already
                print(printable(shown))
        question = answered.question
