"""Issue 35: ``handoffs serve`` on PostgreSQL stopped in the middle of a turn logs nothing but ``stopped``:
no psycopg "another command is already in progress", no task destroyed while pending (statements under
way finish on the store's loop before its pool closes).

Deterministic: a trigger makes the person's message take :data:`SLOW_SECONDS` to store, and the server is
stopped only once the database shows the person's message being stored, so a statement is certainly under
way when the stop begins (and stays so while it is carried out), whatever the machine's speed.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from websockets.asyncio.client import connect

from handoffs_runtime.sessions.postgres.schema import DEFAULT_SCHEMA

from .cli_support import cli_env
from .postgres_support import PostgresServer, fresh_database

ROOT = Path(__file__).resolve().parent.parent
SLOW_SECONDS = 3.0
"""How long storing a message takes once the trigger is in: well inside the store's statement timeout
(5 s) and its wait for statements under way when it closes (5 s), well past the time a stop takes to
reach them."""
SAID = "I want a refund for my shoes"
SLOW_INSERTS = f"""
SET search_path = {DEFAULT_SCHEMA};
CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.body::text LIKE '%{SAID}%' THEN
    BEGIN
      PERFORM pg_sleep({SLOW_SECONDS});
    EXCEPTION WHEN query_canceled THEN
      PERFORM pg_sleep({SLOW_SECONDS} / 2);
    END;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER slow_insert BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION slow_insert();
"""
"""Storing the person's message (:data:`SAID`) takes :data:`SLOW_SECONDS`, every other one no time; a
cancel request does not end it at once (it carries on for half as long), so a statement cut by its
caller is still under way on its connection when the store closes."""


def storing_now(url: str) -> bool:
    """Whether the person's message is being stored right now (the trigger sleeps)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND state = 'active' AND wait_event = 'PgSleep'"
        ).fetchone()
    return row is not None and row[0] > 0


async def stopped_while_storing(url: str) -> str:
    """Start ``serve`` on ``url``, say something, stop it while the message is being stored; its stderr."""
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
            while json.loads(await asyncio.wait_for(page.recv(), 15)).get("type") != "question":
                pass  # the session, its history, the suggestions, the greeting (stored), then the turn
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(SLOW_INSERTS.encode())
            await page.send(json.dumps({"type": "say", "text": SAID}))
            deadline = time.monotonic() + 15
            while not await asyncio.to_thread(storing_now, url):
                assert time.monotonic() < deadline, "the message was never stored"
            serve.send_signal(signal.SIGINT)  # the message is being stored, for SLOW_SECONDS more at most
            _, err = await asyncio.to_thread(serve.communicate, timeout=30)
        return err
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait(10)


async def test_serve_on_postgresql_stops_while_storing_without_warnings(
    postgres_server: PostgresServer,
) -> None:
    err = await stopped_while_storing(fresh_database(postgres_server))
    assert err == "stopped\n"
