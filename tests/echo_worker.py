"""A worker process whose agents answer with where they run, so tests can see which shard served a turn.

python -m tests.echo_worker worker --host 127.0.0.1:PORT --agents TriageAgent --shard 0/2
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Sequence

from autogen_core.models import LLMMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import FunctionModel, QueueChannel, acme_team, current_model_call
from handoffs_runtime.distributed import parse_shard, start_worker


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["worker"])
    parser.add_argument("--host", required=True)
    parser.add_argument("--agents", required=True)
    parser.add_argument("--shard")
    args = parser.parse_args()
    shard = parse_shard(args.shard)
    label = f"shard {shard[0]}/{shard[1]}" if shard else "unsharded"

    def respond(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> str:
        call = current_model_call()
        return f"{call.agent if call else '?'} {label} pid {os.getpid()} turn {len(messages)}"

    async def run() -> None:
        _, names = await start_worker(
            acme_team(),
            args.host,
            model=FunctionModel(respond),
            channel=QueueChannel(),
            agents=args.agents.split(","),
            shard=shard,
        )
        print(f"worker ready: {', '.join(names)} {label}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())


if __name__ == "__main__":
    main()
