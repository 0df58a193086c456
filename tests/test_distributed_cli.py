"""``handoffs host``, ``handoffs worker`` and ``handoffs chat --host`` as a person runs them."""

from __future__ import annotations

import asyncio
import sys

from handoffs_runtime.distributed import ChildProcess

from .distributed_support import TIMEOUT, free_port, start_host, start_worker


async def run(*args: str, stdin: str = "", timeout: float = TIMEOUT) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "handoffs_runtime",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=ChildProcess.environment(),
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_chat_through_a_host_with_piped_input() -> None:
    host, address = await start_host()
    worker = await start_worker(address, "TriageAgent,IssuesAndRepairsAgent")
    try:
        code, out, _ = await run(
            "chat", "--host", address, "--session", "cli-1", stdin="I want a refund for my shoes\nyes\n"
        )
        assert code == 0
        assert "session cli-1 via" in out
        assert "↪ ACME repairs has joined" in out
        assert "execute refund → success" in out
        assert out.rstrip().endswith("session cli-1 ended")
        # A second worker for the same agent is refused with what to do instead.
        code, _, err = await run(
            "worker", "--host", address, "--agents", "TriageAgent", "--takeover-seconds", "0"
        )
        assert code == 2
        assert "already registered" in err and "--shard i/N" in err
        code, _, err = await run("worker", "--host", address, "--agents", "TriageAgent", "--shard", "0/2")
        assert code == 2 and "sharded on every worker" in err
    finally:
        assert await worker.stop() == 0
        assert await host.stop() == 0


async def test_bad_options_are_refused_before_connecting() -> None:
    for args, message in [
        (("worker", "--host", "127.0.0.1:1", "--agents", "Nobody"), "has no Nobody"),
        (("worker", "--host", "127.0.0.1:1", "--shard", "2/2"), "numbered from 0"),
        (("worker", "--host", "nowhere"), "HOST:PORT"),
        (("host", "--address", "127.0.0.1:0", "--max-message-mb", "0"), "positive"),
        (("chat", "--host", "127.0.0.1:1", "--session", "a.session-b"), "contains '.session-'"),
    ]:
        code, _, err = await run(*args)
        assert code == 2, (args, err)
        assert message in err, (args, err)


async def test_a_host_on_a_port_in_use_says_so() -> None:
    host, address = await start_host()
    try:
        code, _, err = await run("host", "--address", address)
        assert code == 2 and "is the port in use" in err
    finally:
        await host.stop()


async def test_chat_without_a_host_gives_up_with_what_to_do() -> None:
    address = f"127.0.0.1:{free_port()}"
    code, _, err = await run("chat", "--host", address, "--connect-timeout", "0.5", stdin="hello\n")
    assert code == 2
    assert "cannot reach a handoffs host" in err and "handoffs host --address" in err
