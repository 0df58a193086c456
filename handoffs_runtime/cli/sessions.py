"""``handoffs sessions list | show ID | export ID --format md|json | delete ID``, and the ``--store`` option.

Reading commands never create a store: asking about a file that does not exist says so. They open it
read-only (no write lock, no WAL switch), so they also work on a store they may not write.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from handoffs_runtime.cli.output_file import write_output
from handoffs_runtime.errors import StoreError, UnknownSessionError
from handoffs_runtime.sessions.open import OpenedStore, is_url, store_target
from handoffs_runtime.sessions.open import open_store as open_store_at
from handoffs_runtime.sessions.store import MEMORY, SessionStore
from handoffs_runtime.sessions.transcript import EXPORT_FORMATS, describe_entry, export
from handoffs_runtime.text import printable
from handoffs_runtime.usage import describe, summed, total

T = TypeVar("T")


def add_store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="PATH|URL",
        help=f"session store file (default: $HANDOFFS_STORE, else {_shown_default()}); ':memory:' keeps "
        "nothing; a postgresql://... URL shares the sessions with other front ends",
    )


def _shown_default() -> str:
    return "$XDG_DATA_HOME/handoffs-runtime/sessions.sqlite3, else ~/.local/share/..."


def store_path(option: str | None) -> str:
    return store_target(option)


def open_store(
    option: str | None, *, read_only: bool = False, session: str | None = None, take_over: bool = False
) -> OpenedStore:
    """The store the options name, holding ``session`` when given (taken over from a live holder only
    with ``take_over``); raises ``StoreError`` with what to do when it cannot be used."""
    store = open_store_at(store_path(option), read_only=read_only)
    if session is not None:
        try:
            asyncio.run(store.claim(session, take_over=take_over))
        except BaseException:
            store.close_now()
            raise
    return store


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
    exporting.add_argument("--force", action="store_true", help="replace the --output file if it exists")
    add_store_option(exporting)


def run_sessions_command(args: argparse.Namespace) -> int:
    path = store_path(args.store)
    if path != MEMORY and not is_url(path) and not Path(path).exists():
        if args.action == "list":
            print(f"no sessions: there is no store at {path} yet")
            return 0
        raise UnknownSessionError(f"no session {args.session!r}: there is no store at {path}; check --store")
    store = open_store(path, read_only=args.action in _READING)
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
    ids = [printable(i.session_id, multiline=False) for i in infos]
    width = max(len("session"), *(len(shown) for shown in ids))
    print(
        f"{'session':<{width}}  {'updated':<19}  {'status':<6}  {'messages':>8}  {'tokens':>9}  active agent"
    )
    tokens_of = _run(lambda: _tokens(store, [i.session_id for i in infos]))
    for shown, i in zip(ids, infos, strict=True):
        when, agent = _stamp(i.updated_at), printable(i.active_agent, multiline=False)
        tokens = tokens_of[i.session_id]
        print(f"{shown:<{width}}  {when}  {i.status:<6}  {i.messages:>8}  {tokens:>9}  {agent}")
    return 0


async def _tokens(store: SessionStore, sessions: list[str]) -> dict[str, str]:
    """The tokens each session used, from the usage stored with its entries; ``?`` for a session whose
    transcript cannot be read (the list still shows every session: ``show`` names the damage)."""
    counts: dict[str, str] = {}
    for session in sessions:
        try:
            counts[session] = f"{total(summed(e.body.get('usage') for e in await store.entries(session))):,}"
        except StoreError:
            counts[session] = "?"
    return counts


def _show(store: SessionStore, args: argparse.Namespace) -> int:
    state = _run(lambda: store.get_session(args.session))
    entries = _run(lambda: store.entries(args.session))
    header = f"session {state.session_id} · {state.status} · active agent {state.active_agent}"
    print(printable(f"{header} · team {state.team or '-'}", multiline=False))
    for entry in entries:
        print(f"{entry.seq:>4} {_stamp(entry.created_at)}  {printable(describe_entry(entry))}")
    print(f"usage: {describe(summed(e.body.get('usage') for e in entries))}")
    return 0


def _export(store: SessionStore, args: argparse.Namespace) -> int:
    state = _run(lambda: store.get_session(args.session))
    entries = _run(lambda: store.entries(args.session))
    text = export(state, entries, args.format)
    if args.output:
        write_output(args.output, text + "\n", overwrite=args.force, protected=_store_files(args.store))
    else:
        sys.stdout.write(text + "\n")
    return 0


def _store_files(option: str | None) -> list[Path]:
    """The store's database and the journal files SQLite keeps beside it."""
    path = store_path(option)
    if path == MEMORY or is_url(path):
        return []
    return [Path(path + suffix) for suffix in ("", "-wal", "-shm", "-journal")]


def _delete(store: SessionStore, args: argparse.Namespace) -> int:
    _run(lambda: store.delete_session(args.session))
    print(f"deleted session {args.session}")
    return 0


_READING = frozenset({"list", "show", "export"})

_ACTIONS: dict[str, Callable[[SessionStore, argparse.Namespace], int]] = {
    "list": _list,
    "show": _show,
    "export": _export,
    "delete": _delete,
}
