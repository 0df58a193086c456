"""``handoffs sessions list | show | export | delete``: reading and managing stored sessions.

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

from handoffs_runtime.cli.options import (
    BUILT_IN_TEAMS,
    Subcommands,
    add_store_option,
    add_team_option,
    open_store,
    store_path,
    team_from_option,
)
from handoffs_runtime.cli.output_file import database_files, write_output
from handoffs_runtime.errors import StoreError, UnknownSessionError
from handoffs_runtime.messages import NO_LABELS
from handoffs_runtime.sessions.effects import Effect, ledger_of
from handoffs_runtime.sessions.open import is_url
from handoffs_runtime.sessions.store import MEMORY, SessionState, SessionStore
from handoffs_runtime.sessions.transcript import EXPORT_FORMATS, describe_entry, export, stored_usage
from handoffs_runtime.team.spec import TeamSpec
from handoffs_runtime.text import printable

T = TypeVar("T")


def add_parser(sub: Subcommands) -> None:
    sessions = sub.add_parser("sessions", help="list, show, export or delete stored sessions")
    sessions.set_defaults(run=run)
    actions = sessions.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="every stored session, most recent first")
    add_store_option(listing)
    named: dict[str, argparse.ArgumentParser] = {}
    for name, text in (
        ("show", "print a session's transcript"),
        ("delete", "delete a session and its transcript"),
        ("export", "write a session's transcript as Markdown or JSON"),
    ):
        named[name] = actions.add_parser(name, help=text)
        named[name].add_argument("session", help="the session id")
        add_store_option(named[name])
    for name in ("show", "export"):
        add_team_option(
            named[name],
            purpose="the team whose display names and title the transcript uses",
            left_out="the session's own team when it is a built-in one",
        )
    exporting = named["export"]
    exporting.add_argument("--format", choices=EXPORT_FORMATS, default="md", help="md (default) or json")
    exporting.add_argument("-o", "--output", help="write to this file instead of standard output")
    exporting.add_argument("--force", action="store_true", help="replace the --output file if it exists")


def run(args: argparse.Namespace) -> int:
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
            counts[session] = f"{stored_usage(await store.entries(session)).total:,}"
        except StoreError:
            counts[session] = "?"
    return counts


def _team(args: argparse.Namespace, state: SessionState) -> TeamSpec | None:
    """The team whose words a transcript is shown in: ``--team``, else the session's built-in team."""
    if args.team is not None:
        return team_from_option(args.team)
    build = BUILT_IN_TEAMS.get(state.team)
    return build() if build is not None else None


def _show(store: SessionStore, args: argparse.Namespace) -> int:
    state = _run(lambda: store.get_session(args.session))
    entries = _run(lambda: store.entries(args.session))
    team = _team(args, state)
    labels = team.labels if team is not None else NO_LABELS
    header = f"session {state.session_id} · {state.status} · active agent {state.active_agent}"
    print(printable(f"{header} · team {state.team or '-'}", multiline=False))
    for entry in entries:
        print(f"{entry.seq:>4} {_stamp(entry.created_at)}  {printable(describe_entry(entry, labels))}")
    print(f"usage: {stored_usage(entries).describe()}")
    for effect in _run(lambda: _effects(store, args.session)):
        print(f"     {_stamp(effect.created_at)}  {printable(effect.describe())}")
    return 0


async def _effects(store: SessionStore, session: str) -> list[Effect]:
    """The session's irreversible effects, with their keys and outcomes (none from a store without)."""
    ledger = ledger_of(store)
    return await ledger.effects(session) if ledger is not None else []


def _export(store: SessionStore, args: argparse.Namespace) -> int:
    state = _run(lambda: store.get_session(args.session))
    entries = _run(lambda: store.entries(args.session))
    effects = _run(lambda: _effects(store, args.session))
    team = _team(args, state)
    if team is None:
        text = export(state, entries, args.format, effects=effects)
    else:
        text = export(state, entries, args.format, team.labels, title=team.title, effects=effects)
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
    return database_files(path)


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
