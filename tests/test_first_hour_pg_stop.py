"""Issue 35: ``handoffs serve`` on PostgreSQL stopped in the middle of a turn logs nothing but ``stopped``:
no psycopg "another command is already in progress", no task destroyed while pending (statements under
way finish on the store's loop before its pool closes)."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from .cli_support import cli_env
from .postgres_support import PostgresServer, fresh_database

ROOT = Path(__file__).resolve().parent.parent


async def stopped_mid_turn(url: str, delay: float) -> str:
    """Start ``serve`` on ``url``, say something, stop it ``delay`` seconds later; its stderr."""
    command = [sys.executable, "-m", "handoffs_runtime", "serve", "--port", "0", "--store", url, "-v"]
    serve = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(), cwd=ROOT
    )
    try:
        assert serve.stdout is not None
        line = ""
        while "customer chat:" not in line:
            line = await asyncio.wait_for(asyncio.to_thread(serve.stdout.readline), 30)
            assert line, "serve ended before it listened"
        site = re.search(r"http://\S+?(?=/?$)", line.strip())
        assert site is not None
        async with connect(site.group().replace("http://", "ws://") + "/ws") as page:
            await page.send(json.dumps({"type": "hello"}))
            while json.loads(await asyncio.wait_for(page.recv(), 15)).get("type") != "suggestions":
                pass  # the session, its history, then the suggested first questions
            await asyncio.sleep(1)  # the greeting is stored by now
            await page.send(json.dumps({"type": "say", "text": "I want a refund for my shoes"}))
            await asyncio.sleep(delay)
            serve.send_signal(signal.SIGINT)
            _, err = await asyncio.to_thread(serve.communicate, timeout=30)
        return err
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait(10)


@pytest.mark.parametrize("delay", [0.05, 0.1, 0.2])
async def test_serve_on_postgresql_stops_mid_turn_without_warnings(
    postgres_server: PostgresServer, delay: float
) -> None:
    err = await stopped_mid_turn(fresh_database(postgres_server), delay)
    assert err == "stopped\n"
