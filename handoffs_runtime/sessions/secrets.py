"""Secrets every process on one store shares (the web servers' key secret), made once and kept.

Its own protocol, apart from :class:`~handoffs_runtime.sessions.store.SessionStore`: only the web app's
key signing needs it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class SharedSecrets(Protocol):
    """Named random secrets, the same for every process on the store; may raise ``StoreError``."""

    async def secret(self, name: str, *, size: int = 32) -> bytes:
        """The secret called ``name``: ``size`` random bytes made by whoever asked first, atomically,
        and kept (a restart or a second server finds the same bytes)."""
        ...
