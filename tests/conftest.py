"""Shared fixtures: no test may reach a real model or a non-loopback host."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from handoffs_runtime.models.capabilities import forget_capabilities

from .browser_support import CHROMIUM
from .pty_support import Terminal

if TYPE_CHECKING:
    from .distributed_support import Process


def _is_local(host: Any) -> bool:
    if host in (None, "localhost", "") or not isinstance(host, str):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """A command run in this process (``main([...])``) configures logging for a terminal: the levels it
    set must not silence the log records later tests read."""
    loggers = [logging.getLogger(), logging.getLogger("autogen_core")]
    levels = [logger.level for logger in loggers]
    handlers = list(logging.getLogger().handlers)
    yield
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)
    logging.getLogger().handlers[:] = handlers


@pytest.fixture(autouse=True)
def _no_real_models(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Strip credentials, keep session stores out of the user's data, and fail any test that tries to
    reach a host other than this machine."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HANDOFFS_MODEL", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    attempts: list[str] = []
    real_getaddrinfo = socket.getaddrinfo

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_local(host):
            attempts.append(str(host))
            raise OSError(f"tests may not reach {host}: only loopback servers are allowed")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    forget_capabilities()  # a port reused by another test's server is another endpoint
    yield
    assert not attempts, f"a test tried to reach a real host: {attempts}"


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    """A pseudo-terminal standing in for a person's (see ``pty_support``)."""
    term = Terminal()
    yield term
    term.close()


@pytest.fixture
async def browser() -> AsyncIterator[object]:
    """The system's Chromium, driven by Playwright (see ``browser_support``)."""
    playwright_api = pytest.importorskip("playwright.async_api")
    async with playwright_api.async_playwright() as p:
        chromium = await p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            await chromium.close()


@pytest.fixture
async def processes() -> AsyncIterator[list[Process]]:
    """Every child process (host, worker) a test starts; all are killed at the end, whatever happened."""
    started: list[Process] = []
    yield started
    await asyncio.gather(*(p.kill() for p in started))


from .postgres_support import postgres_server  # noqa: E402, F401  (a session-wide PostgreSQL server)
from .store_backends import backend  # noqa: E402, F401  (each store test on SQLite and on PostgreSQL)
