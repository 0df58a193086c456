"""2000 sessions at once on one runtime with a model that misbehaves at random.

The model raises, hangs past the policy's timeout, returns garbage, returns every malformed shape of
``test_malformed_responses``, hands off, or answers properly, naming the session it serves. Every session
must end with one answer per message of its person, no answer may reach another session, and nothing may
be left behind: no agent instance, no asyncio task.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Sequence
from typing import Any

from autogen_core.models import LLMMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime import HandoffsRuntime, TeamPolicy, register_team, start_session
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.messages import Notice
from handoffs_runtime.models.local import LocalModel, current_model_call

from .test_malformed_responses import MALFORMED, raw, team

SESSIONS = 2000
LINES = 3
NAMED = re.compile(r"answer \d+ for (?P<session>s\d+)\.")


class ChaosModel(LocalModel):
    """Misbehaves at random (seeded per session and call, so a failure can be replayed)."""

    answers_promptly = False  # a remote model: the policy's timeout applies

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.seed = seed
        self.counts: dict[str, int] = {}
        self.kinds: dict[str, int] = {}

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> Any:  # type: ignore[override]
        call = current_model_call()
        assert call is not None
        session = call.session_id
        n = self.counts[session] = self.counts.get(session, 0) + 1
        rng = random.Random(f"{self.seed}/{session}/{n}")
        kind = rng.choice(["raise", "hang", "garbage", "malformed", "handoff", "answer", "answer"])
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if kind == "raise":
            raise RuntimeError("the model is down")
        if kind == "hang":
            await asyncio.sleep(3600)
        if kind == "garbage":
            return rng.choice([raw(b"\xff\xfe"), raw(object()), "not a result", raw([[1, 2], {}])])
        if kind == "malformed":
            return MALFORMED[rng.choice(sorted(MALFORMED))]
        if kind == "handoff":
            return raw([{"id": None, "name": rng.choice(["transfer_to_back", "add"]), "arguments": 5}])
        return raw(f"answer {n} for {session}.")

    def respond(self, messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> str:
        raise AssertionError("create is overridden")


async def test_2000_misbehaving_sessions_all_end_apart_and_leave_nothing_behind() -> None:
    tasks_before = asyncio.all_tasks()
    sessions = [f"s{i}" for i in range(SESSIONS)]
    channel = ScriptedChannel.for_sessions({s: [f"line {k}" for k in range(LINES)] for s in sessions})
    model = ChaosModel(seed=11)
    runtime = HandoffsRuntime()
    policy = TeamPolicy(model_timeout=0.05, max_tool_rounds=3)
    await register_team(runtime, team(policy), model=model, channel=channel)
    runtime.start()
    for session in sessions:
        await start_session(runtime, session)
    await runtime.stop_when_idle()

    answered = 0
    assert set(model.kinds) == {"raise", "hang", "garbage", "malformed", "handoff", "answer"}
    for session in sessions:
        replies = channel.replies(session)
        assert len(replies) == LINES, (session, replies)  # every message of the person was answered once
        for reply in replies:
            assert reply.text.strip()
            named = NAMED.fullmatch(reply.text)  # the model's own words name the session they were for
            if named is not None:
                assert named["session"] == session, (session, reply.text)
                answered += 1
        last = channel.shown[session][-1]
        assert isinstance(last, Notice) and last.text == f"session {session} ended"
    assert answered > SESSIONS  # most turns got a real answer, so the check above had work to do
    assert runtime._instantiated_agents == {}
    assert asyncio.all_tasks() - tasks_before == set()
