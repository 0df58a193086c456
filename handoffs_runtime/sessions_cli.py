"""``handoffs sessions list | show ID | export ID --format md|json | delete ID``, and the ``--store`` option.

Reading commands never create a store: asking about a file that does not exist says so.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from .errors import UnknownSessionError
from .store import MEMORY, SessionStore, SQLiteSessionStore, default_store_path
from .transcript import EXPORT_FORMATS, describe_entry, export
from .usage import describe, summed, total

T = TypeVar("T")


def add_store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="PATH",
        help=f"session store file (default: {_shown_default()}); ':memory:' keeps nothing",
    )


def _shown_default() -> str:
    return "$XDG_DATA_HOME/handoffs-runtime/sessions.sqlite3, else ~/.local/share/..."


def store_path(option: str | None) -> str:
    return option or str(default_store_path())


def open_store(option: str | None) -> SQLiteSessionStore:
    """The store the options name; raises ``StoreError`` with what to do when it cannot be used."""
    return SQLiteSessionStore(store_path(option))


def add_sessions_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sessions = sub.add_parser("sessions", help="list, show, export or delete stored sessions")
    actions = sessions.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="every stored session, most recent first")
    add_store_option(listing)
    for name, text in (
        ("show", "print a session's transcript"),
        ("delete", "delete a session and its transcript"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("session", help="the session id")
        add_store_option(action)
    exporting = actions.add_parser("export", help="write a session's transcript as Markdown or JSON")
    exporting.add_argument("session", help="the session id")
    exporting.add_argument("--format", choices=EXPORT_FORMATS, default="md", help="md (default) or json")
    exporting.add_argument("-o", "--output", help="write to this file instead of standard output")
    add_store_option(exporting)


def run_sessions_command(args: argparse.Namespace) -> int:
    path = store_path(args.store)
    if path != MEMORY and not Path(path).exists():
        if args.action == "list":
            print(f"no sessions: there is no store at {path} yet")
            return 0
        raise UnknownSessionError(f"no session {args.session!r}: there is no store at {path}; check --store")
    store = SQLiteSessionStore(path)
    try:
        return _ACTIONS[args.action](store, args)
    finally:
        store.close_now()


def _run(coro_fn: Callable[[], Awaitable[T]]) -> T:
    async def call() -> T:
        return await coro_fn()

    return asyncio.run(call())


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S")


def _list(store: SessionStore, args: argparse.Namespace) -> int:
    infos = _run(store.list_sessions)
    if not infos:
        print("no sessions stored")
        return 0
    width = max(len("session"), *(len(i.session_id) for i in infos))
    print(
        f"{'session':<{width}}  {'updated':<19}  {'status':<6}  {'messages':>8}  {'tokens':>9}  active agent"
    )
    tokens_of = _run(lambda: _tokens(store, [i.session_id for i in infos]))
    for i in infos:
        when = _stamp(i.updated_at)
        tokens = tokens_of[i.session_id]
        print(
            f"{i.session_id:<{width}}  {when}  {i.status:<6}  {i.messages:>8}  {tokens:>9,}  {i.active_agent}"
        )
    return 0


async def _tokens(store: SessionStore, sessions: list[str]) -> dict[str, int]:
    """The tokens each session used, from the usage stored with its entries."""
    return {
        session: total(summed(e.body.get("usage") for e in await store.entries(session)))
        for session in sessions
    }


def _show(store: SessionStore, args: argparse.Namespace) -> int:
    state = _run(lambda: store.get_session(args.session))
    entries = _run(lambda: store.entries(args.session))
    team = state.team or "-"
    print(f"session {state.session_id} · {state.status} · active agent {state.active_agent} · team {team}")
    for entry in entries:
        print(f"{entry.seq:>4} {_stamp(entry.created_at)}  {describe_entry(entry)}")
    print(f"usage: {describe(summed(e.body.get('usage') for e in entries))}")
    return 0


def _export(store: SessionStore, args: argparse.Namespace) -> int:
    state = _run(lambda: store.get_session(args.session))
    entries = _run(lambda: store.entries(args.session))
    text = export(state, entries, args.format)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")
    return 0


def _delete(store: SessionStore, args: argparse.Namespace) -> int:
    _run(lambda: store.delete_session(args.session))
    print(f"deleted session {args.session}")
    return 0


_ACTIONS: dict[str, Callable[[SessionStore, argparse.Namespace], int]] = {
    "list": _list,
    "show": _show,
    "export": _export,
    "delete": _delete,
}
