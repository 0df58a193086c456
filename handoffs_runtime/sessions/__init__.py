"""Durable sessions: the ``SessionStore`` protocol, SQLite, leases, what is recorded, transcripts."""
