"""Two real ``handoffs chat --session same`` processes on one store: one writer at a time.

The second is refused with the holder's pid and host, or takes over with ``--take-over``; then the first
stops writing with a clear line instead of interleaving its turns. A ``kill -9``-ed holder frees the
session at once (``test_crash.py`` resumes after such kills at several points of a turn).
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

from handoffs_runtime.sessions.sqlite import SQLiteSessionStore
from handoffs_runtime.sessions.store import StoredEntry

from .chat_process import ROOT, WAIT, Chat

REFUND = "I want a refund for my shoes"
PROPOSAL = "ACME repairs › I can execute refund"
HOST = socket.gethostname()


async def _stored(path: Path, session: str) -> list[StoredEntry]:
    store = await asyncio.to_thread(SQLiteSessionStore, path, read_only=True)
    try:
        return await store.entries(session)
    finally:
        await store.close()


async def _handoffs(*args: str) -> tuple[int, str, str]:
    """Run ``handoffs ARGS`` to its end with no input: status, stdout, stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "handoffs_runtime", *args,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), WAIT)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def _spoken(entries: list[StoredEntry]) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in entries if e.kind in ("user", "reply")]


async def test_a_second_chat_on_a_held_session_is_refused_naming_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    first = await Chat.start(path, "same", tmp_path)
    await first.wait_for("you › ")
    second = await Chat.start(path, "same", tmp_path)
    code, out, err = await second.ended()
    assert code == 2 and out == ""
    assert err == (
        f"handoffs: session 'same' is open in another process (pid {first.process.pid} on host {HOST}); "
        "end the chat there, or take the session over with --take-over (take_over=True in code), which "
        "stops that process from writing to it\n"
    )

    code, _, err = await _handoffs("sessions", "delete", "same", "--store", str(path))
    assert (code, err) == (
        2,
        f"handoffs: session 'same' is open in another process (pid {first.process.pid} on host {HOST}); "
        "end the chat there first\n",
    )

    await first.say(REFUND)  # the holder goes on as if nothing happened
    await first.wait_for(PROPOSAL)
    await first.finish()
    assert [kind for kind, _ in _spoken(await _stored(path, "same"))] == ["user", "reply"]

    third = await Chat.start(path, "same", tmp_path)  # the first one left: the session is free again
    await third.wait_for("resuming session same with ACME repairs")
    await third.finish()


async def test_a_session_whose_holder_was_killed_resumes_at_once(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    first = await Chat.start(path, "same", tmp_path)
    await first.say(REFUND)
    await first.wait_for(PROPOSAL)
    await first.kill()  # no chance to let go of its claim
    second = await Chat.start(path, "same", tmp_path)
    await second.wait_for("resuming session same with ACME repairs")
    await second.finish()


async def test_take_over_moves_the_session_and_the_old_chat_stops_writing(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    first = await Chat.start(path, "same", tmp_path)
    await first.say(REFUND)
    await first.wait_for(PROPOSAL)

    second = await Chat.start(path, "same", tmp_path, "--take-over")
    await second.wait_for(f"took session same over from pid {first.process.pid} on host {HOST}")
    await second.wait_for("resuming session same with ACME repairs")
    await second.say("yes")  # answers the first chat's proposal: the context came along
    await second.wait_for("ACME repairs › Done: look up item")

    await first.say("hello from the old window")
    code, out, _ = await first.ended()
    assert code == 2
    assert (
        f"session 'same' is held by pid {second.process.pid} on host {HOST} now, not by this store (it was "
        "taken over, or never opened here); nothing was written, and this process stops writing to it"
    ) in out
    await second.say("thanks")
    await second.wait_for("you › ", occurrence=3)
    await second.finish()

    spoken = _spoken(await _stored(path, "same"))
    said = [text for kind, text in spoken if kind == "user"]
    assert said == [REFUND, "yes", "thanks"]  # nothing of the old window after the take-over
    assert len(spoken) == 6


async def test_a_front_end_chat_on_a_held_session_is_refused_before_it_connects(tmp_path: Path) -> None:
    """``chat --host`` records its session in the store too: the same rule, checked before any network."""
    path = tmp_path / "s.sqlite3"
    first = await Chat.start(path, "same", tmp_path)
    await first.wait_for("you › ")
    code, _, err = await _handoffs(
        "chat", "--host", "127.0.0.1:9", "--connect-timeout", "1", "--store", str(path), "--session", "same"
    )
    assert code == 2
    assert err.startswith(
        f"handoffs: session 'same' is open in another process (pid {first.process.pid} on host {HOST})"
    )
    await first.finish()


async def test_a_front_end_chat_can_take_over_too(tmp_path: Path) -> None:
    """``--take-over`` with ``--host`` claims the session before connecting (here to no host at all)."""
    path = tmp_path / "s.sqlite3"
    first = await Chat.start(path, "same", tmp_path)
    await first.wait_for("you › ")
    code, _, err = await _handoffs(
        "chat", "--host", "127.0.0.1:9", "--connect-timeout", "1", "--store", str(path), "--session", "same",
        "--take-over",
    )  # fmt: skip
    assert code == 2 and err.startswith("handoffs: cannot reach a handoffs host at 127.0.0.1:9"), err
    await first.say("hello")
    code, out, _ = await first.ended()
    assert code == 2 and "not by this store (it was taken over" in out
    assert await _stored(path, "same") == []
