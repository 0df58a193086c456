"""The session store in PostgreSQL, shared by several front ends: store, SQL, schema and leases."""

from handoffs_runtime.sessions.postgres.store import PostgresSessionStore as PostgresSessionStore

__all__ = ["PostgresSessionStore"]
