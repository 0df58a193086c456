"""Durable sessions: store, operator desk and secrets protocols, SQLite, PostgreSQL, typed entries."""
