"""A gRPC ``WorkerRuntime`` ends as autogen-ext's does: a program that returns from ``asyncio.run`` without
calling ``stop()`` exits while its host runs on, and its errors are the ``RuntimeError``s callers expect.
A connection that ends, however it ends, leaves no task behind."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from typing import Any

import pytest

from handoffs_runtime.distributed import Backoff, WorkerRuntime
from handoffs_runtime.errors import DistributedError

from .distributed_support import TIMEOUT, free_port, start_host

HANG = 90.0
"""Far above a clean exit (a second or two); only a hang reaches it."""

UNSTOPPED = textwrap.dedent(
    """
    import asyncio, sys
    from handoffs_runtime.teams.acme import acme_team
    from handoffs_runtime.distributed import start_worker
    from handoffs_runtime.models.offline import OfflineModel

    async def main() -> None:
        runtime, names = await start_worker(acme_team(), sys.argv[1], model=OfflineModel())
        print("connected", names, flush=True)  # and return without runtime.stop()

    asyncio.run(main())
    print("returned", flush=True)
    """
)


async def test_a_worker_never_stopped_lets_asyncio_run_return_while_its_host_runs() -> None:
    host, address = await start_host()
    try:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            UNSTOPPED,
            address,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(child.communicate(), HANG)
        except TimeoutError:
            child.kill()
            await child.wait()
            pytest.fail("asyncio.run() never returned: the worker's supervisor ignored the loop's shutdown")
        assert child.returncode == 0, err.decode()[-2000:]
        assert out.decode().splitlines()[-1] == "returned"
    finally:
        await host.stop()


def test_distributed_errors_are_runtime_errors_as_autogen_ext_raises() -> None:
    assert issubclass(DistributedError, RuntimeError)
    with pytest.raises(RuntimeError):
        raise DistributedError("this worker runtime is not running")


def others() -> set[asyncio.Task[Any]]:
    """Every task of this event loop but the test's own. A task left waiting on a connection that ended is
    reported as "Task was destroyed but it is pending!" when it is collected."""
    return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]


async def test_connection_attempts_that_fail_leave_no_task_behind() -> None:
    runtime = WorkerRuntime(f"127.0.0.1:{free_port()}", backoff=Backoff(initial=0.01, give_up_after=0.3))
    before = others()
    with pytest.raises(DistributedError, match="cannot reach a handoffs host"):
        await runtime.start()
    assert others() - before == set()


async def test_a_connection_the_host_ended_leaves_no_task_behind() -> None:
    address = f"127.0.0.1:{free_port()}"
    host, _ = await start_host(address)
    runtime = WorkerRuntime(address, backoff=Backoff(initial=0.01, maximum=0.05))
    before = others()
    try:
        await runtime.start()
        connected = len(others() - before)
        await host.kill()
        host, _ = await start_host(address)
        await asyncio.wait_for(runtime.wait_connections(2), TIMEOUT)
        assert len(others() - before) == connected  # the first connection's tasks have ended
        await runtime.stop()
        assert others() - before == set()
    finally:
        await host.stop()
