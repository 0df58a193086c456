"""Profile one framework's per-session path: ``python -m benchmarks.profile_session ours [N]``.

Runs N sequential sessions on zero-latency models under cProfile and prints the top functions by
internal and cumulative time. This is how the hot path of handoffs-runtime was found and cut.
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
import sys

from .measure import _framework


async def _run(module: str, sessions: int) -> cProfile.Profile:
    fw = await _framework(module, 0.0)
    for i in range(50):
        await fw.session(-1 - i)
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(sessions):
        await fw.session(i)
    profiler.disable()
    await fw.close()
    return profiler


def main(argv: list[str]) -> None:
    module = argv[0] if argv else "ours"
    sessions = int(argv[1]) if len(argv) > 1 else 500
    stats = pstats.Stats(asyncio.run(_run(module, sessions)))
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main(sys.argv[1:])
