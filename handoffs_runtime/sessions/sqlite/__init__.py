"""The default session store, one SQLite file: the store, its SQL, schema, connections and leases."""

from handoffs_runtime.sessions.sqlite.store import SQLiteSessionStore as SQLiteSessionStore

__all__ = ["SQLiteSessionStore"]
