"""A worker process whose agents answer with where they run, so tests can see which shard served a turn.

    python -m tests.echo_worker worker --host 127.0.0.1:PORT --agents TriageAgent --shard 0/2 [--latency S]

With ``--latency`` each model call first prints ``thinking <session>`` and then takes S seconds, so a
test can kill the worker while a turn is in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Sequence
from typing import Any

from autogen_core.models import CreateResult, LLMMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import QueueChannel, current_model_call
from handoffs_runtime.distributed import parse_shard_option, start_worker
from handoffs_runtime.models.scripted import FunctionModel
from handoffs_runtime.teams.acme import acme_team


class AnnouncingModel(FunctionModel):
    """Prints each call before answering, for tests that act while a turn is in flight."""

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
        call = current_model_call()
        print(f"thinking {call.session_id if call else '?'}", flush=True)
        return await super().create(messages, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["worker"])
    parser.add_argument("--host", required=True)
    parser.add_argument("--agents", required=True)
    parser.add_argument("--shard")
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    shard = parse_shard_option(args.shard)
    label = f"shard {shard[0]}/{shard[1]}" if shard else "unsharded"

    def respond(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> str:
        call = current_model_call()
        return f"{call.agent if call else '?'} {label} pid {os.getpid()} turn {len(messages)}"

    model = AnnouncingModel(respond, latency=args.latency) if args.latency else FunctionModel(respond)

    async def run() -> None:
        _, names = await start_worker(
            acme_team(),
            args.host,
            model=model,
            channel=QueueChannel(),
            agents=args.agents.split(","),
            shard=shard,
        )
        print(f"worker ready: {', '.join(names)} {label}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())


if __name__ == "__main__":
    main()
