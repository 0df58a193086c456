"""Opening a session store from what a person typed: a file path, ``:memory:``, or a PostgreSQL URL.

The command line (``--store``), the ``HANDOFFS_STORE`` variable and code all go through :func:`open_store`,
so every command accepts the same things and a deployment switches stores by changing one string.
"""

from __future__ import annotations

import os
from typing import Protocol, runtime_checkable

from handoffs_runtime.errors import StoreError
from handoffs_runtime.sessions.desk import OperatorDesk
from handoffs_runtime.sessions.secrets import SharedSecrets
from handoffs_runtime.sessions.store import SessionStore, default_store_path

ENV = "HANDOFFS_STORE"
URL_PREFIXES = ("postgresql://", "postgres://")


@runtime_checkable
class SharedStore(SessionStore, OperatorDesk, SharedSecrets, Protocol):
    """One store serving every concern of a server: sessions, the operator desk and the shared secrets.

    Whoever holds one hands each consumer the narrowest protocol it needs (agents a ``SessionStore``,
    the operator console an ``OperatorDesk``, key signing ``SharedSecrets``); both backends are one.
    """


@runtime_checkable
class OpenedStore(SharedStore, Protocol):
    """A store as the command line holds it: it can be closed without a loop and says why it failed."""

    failure: StoreError | None

    def close_now(self) -> None: ...


def is_url(target: str) -> bool:
    """Whether ``target`` names a PostgreSQL database rather than a file."""
    return target.startswith(URL_PREFIXES)


def store_target(option: str | None = None) -> str:
    """What to open: the option if given, else ``$HANDOFFS_STORE``, else the default SQLite file."""
    return option or os.environ.get(ENV) or str(default_store_path())


def open_store(target: str | None = None, *, read_only: bool = False) -> OpenedStore:
    """The store ``target`` names (see :func:`store_target`); raises ``StoreError`` saying what to do.

    >>> store = open_store("postgresql://app@db/shop")  # doctest: +SKIP
    """
    where = store_target(target)
    if is_url(where):
        try:
            from handoffs_runtime.sessions.postgres import PostgresSessionStore
        except ImportError as exc:
            raise StoreError(
                "a PostgreSQL store needs psycopg: pip install 'handoffs-runtime[postgres]'"
            ) from exc
        return PostgresSessionStore(where, read_only=read_only)
    from handoffs_runtime.sessions.sqlite import SQLiteSessionStore

    return SQLiteSessionStore(where, read_only=read_only)
