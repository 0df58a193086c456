"""A gRPC ``WorkerRuntime`` ends as autogen-ext's does: a program that returns from ``asyncio.run`` without
calling ``stop()`` exits while its host runs on, and its errors are the ``RuntimeError``s callers expect."""

from __future__ import annotations

import asyncio
import sys
import textwrap

import pytest

from handoffs_runtime.errors import DistributedError

from .distributed_support import start_host

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
