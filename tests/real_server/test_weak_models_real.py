"""Weak models on the stock server (llama-cpp-python's, SmolLM2-135M): no reply blames the person, a tool
asked the same again runs once, an empty reply is asked again in words, and a server that cannot stream
tool calls costs one thrown-away call per process, not one per round.

``test_twenty_first_messages`` runs the suite's own list of first messages through ``handoffs chat``,
streamed and not, and prints the figures (``-s`` shows them): replies that ask the person to repeat, the
longest turn against the turn's deadline plus one call, turns cut at the deadline, model calls each way.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
from pathlib import Path

import pytest
from autogen_core import CancellationToken
from autogen_core.models import LLMMessage, SystemMessage, UserMessage
from autogen_core.tools import FunctionTool

from handoffs_runtime import TeamPolicy, openai_model
from handoffs_runtime.agents.ai import EMPTY_REPLY
from handoffs_runtime.agents.progress import normalised_arguments
from handoffs_runtime.agents.toolloop import ToolLoop
from handoffs_runtime.agents.turn import OutOfRounds, Replied
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.capabilities import capabilities_of
from handoffs_runtime.team.spec import model_timeout_team
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.tools.context import ToolContext

from ..cli_support import run_handoffs
from ..support import run_sessions
from .conftest import RealServer

pytestmark = pytest.mark.real_server

TWENTY_FIRST_MESSAGES = (
    "Transfer me to sales please, I want to buy rocket skates.",
    "I want to buy something.",
    "My anvil arrived broken and I want a refund.",
    "Please transfer me to issues and repairs.",
    "hello",
    "Hi there!",
    "I want to talk to a human.",
    "How much are the rocket skates?",
    "Do you sell anvils?",
    "My order never arrived.",
    "The rocket skates I bought are broken, can you repair them?",
    "I'd like to return the anvil.",
    "What can you do?",
    "Hola, quiero comprar patines.",
    "Bonjour, ma commande est cassée.",
    "Guten Tag, ich möchte etwas kaufen.",
    "Can I get a refund for item 132612938?",
    "Where is my package?",
    "I want to buy a rope and an anvil.",
    "thanks, bye",
)
"""The suite's own list of first messages: routing requests, greetings, a person asked for, non-English."""
ASKS_TO_REPEAT = ("tell me again", "another way", "rephrase", "say a little more", "repeat")
MODEL_SECONDS = 600.0
"""One CPU thread: the suite checks behaviour, not speed (the figures test uses the team's deadline)."""
SAME_RESULT = "item_132612938"
TURN_SPENT_LOG = "spent the turn's"
"""What the log says when a turn's deadline stopped it (``ToolLoop._out_of_time``)."""
PROCESS_START_SECONDS = 30.0
"""What a ``handoffs chat`` process may take besides its one turn: imports, the store, the greeting."""


def _model(server: RealServer) -> object:
    return openai_model("smollm2", base_url=server.url, timeout=MODEL_SECONDS)


# --- 1. a tool asked the same again runs once; the turn ends honestly ------------------------------


async def test_a_tool_is_never_run_twice_with_the_same_arguments_in_a_turn(real_server: RealServer) -> None:
    ran: list[str] = []

    def look_up_item(search_query: str) -> str:
        """Find the item id for a description or keywords."""
        ran.append(search_query)
        return SAME_RESULT  # whatever is asked: a model that loops learns nothing new

    tool = FunctionTool(look_up_item, description="Find the item id for a description or keywords.")
    loop = ToolLoop(
        "Sales",
        SystemMessage(content="You sell ACME products. Look items up with look_up_item before answering."),
        _model(real_server),  # type: ignore[arg-type]
        tools={"look_up_item": tool},
        policy=TeamPolicy(model_timeout=None, max_tokens=128),
    )
    mark = real_server.mark()
    history: list[LLMMessage] = [UserMessage(content="Do you have rocket skates? Look it up.", source="user")]
    end = await loop.run(history, ToolContext("s1", "Sales", None), CancellationToken())
    calls = len(real_server.statuses(mark))
    assert len({normalised_arguments(json.dumps({"q": q})) for q in ran}) == len(ran), ran
    assert isinstance(end, Replied | OutOfRounds), end
    # One result learnt, then at most ``stalled_rounds`` rounds without news (and one ask in words).
    assert calls <= min(len(ran), 1) + TeamPolicy().stalled_rounds + 2, (calls, ran)


# --- 2. an empty reply is asked again in words --------------------------------------------------------


async def test_greetings_get_words_not_a_request_to_rephrase(
    real_server: RealServer, caplog: pytest.LogCaptureFixture
) -> None:
    greetings = ["hello", "Hola, necesito ayuda.", "Bonjour !"]
    channel = ScriptedChannel.for_sessions({f"s{i}": [g] for i, g in enumerate(greetings)})
    team = acme_team(policy=TeamPolicy(model_timeout=None, max_tokens=128))
    with caplog.at_level(logging.WARNING, logger="handoffs_runtime"):
        for i in range(len(greetings)):
            await run_sessions(team, channel, model=_model(real_server), sessions=[f"s{i}"])  # type: ignore[arg-type]
    replies = [r.text for i in range(len(greetings)) for r in channel.replies(f"s{i}")]
    assert replies and not any(w in r.lower() for r in replies for w in ASKS_TO_REPEAT), replies
    asked_again = caplog.text.count("asking once more in words")
    empty = replies.count(EMPTY_REPLY)
    assert empty <= asked_again, (replies, asked_again)  # never said empty without asking again first


# --- 5. one thrown-away streamed call per process, not one per round -------------------------------


async def test_streaming_tool_calls_is_learnt_once_per_endpoint(
    real_server: RealServer, caplog: pytest.LogCaptureFixture
) -> None:
    firsts = TWENTY_FIRST_MESSAGES[:4]
    channel = ScriptedChannel.for_sessions({f"s{i}": [m] for i, m in enumerate(firsts)})
    team = acme_team(policy=TeamPolicy(stream=True, model_timeout=None, max_tokens=128))
    with caplog.at_level(logging.WARNING, logger="handoffs_runtime"):
        for i in range(len(firsts)):  # a client per session, one endpoint: what is learnt is shared
            await run_sessions(team, channel, model=_model(real_server), sessions=[f"s{i}"])  # type: ignore[arg-type]
    thrown_away = caplog.text.count("failed before its first word")
    assert thrown_away <= 1, caplog.text
    if thrown_away:
        assert capabilities_of(real_server.url).streams_tool_calls is False


# --- the figures of the twenty first messages -----------------------------------------------------


def _chat(server: RealServer, first: str, store: Path, session: str, *options: str) -> tuple[str, str, float]:
    """What the person read, what was logged (``-v``), and how long the process took."""
    started = time.monotonic()
    result = run_handoffs(
        "chat", "--model", "smollm2", "--base-url", server.url, "--no-colour", "-v",
        "--store", str(store), "--session", session, *options,
        stdin=f"{first}\n", timeout=MODEL_SECONDS,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout, result.stderr, time.monotonic() - started


@pytest.mark.skipif(
    not os.environ.get("HANDOFFS_REAL_SERVER_FIGURES"),
    reason="about 40 minutes on two cores: set HANDOFFS_REAL_SERVER_FIGURES=1 to measure the figures",
)
@pytest.mark.parametrize("count", [20])
def test_twenty_first_messages(real_server: RealServer, tmp_path: Path, count: int) -> None:
    figures: dict[str, tuple[int, int, float, int]] = {}
    # ``handoffs chat`` without --model-timeout: the client's deadline is the team's model_timeout, the
    # team's own per-call limit a margin later, and the turn's deadline derived from that.
    policy = model_timeout_team(acme_team(), None).policy
    one_call = policy.model_timeout or MODEL_SECONDS
    turn = policy.turn_limit() or MODEL_SECONDS
    for mode, options in (("plain", ["--no-stream"]), ("streamed", [])):
        mark = real_server.mark()
        repeats, longest, cut = 0, 0.0, 0
        for i, first in enumerate(TWENTY_FIRST_MESSAGES[:count]):
            try:
                said, logged, seconds = _chat(
                    real_server, first, tmp_path / f"{mode}.sqlite3", f"{mode}{i}", *options
                )
            except subprocess.TimeoutExpired:
                pytest.fail(f"{mode} chat of {first!r} outlived {MODEL_SECONDS:g} s")
            repeats += any(w in said.lower() for w in ASKS_TO_REPEAT)
            cut += TURN_SPENT_LOG in logged  # said, or handed to the human agent (ACME escalates)
            longest = max(longest, seconds)
        calls = len([s for s in real_server.statuses(mark) if s[0].endswith("/chat/completions")])
        figures[mode] = (repeats, calls, longest, cut)
    print(
        "\n".join(
            f"{mode}: {count} first messages, {repeats} replies asking to repeat, {calls} model calls, "
            f"longest process {longest:.0f} s (turn deadline {turn:g} s + one call {one_call:g} s), "
            f"{cut} turns cut at the deadline"
            for mode, (repeats, calls, longest, cut) in figures.items()
        )
    )
    assert figures["plain"][0] == figures["streamed"][0] == 0
    assert figures["streamed"][1] <= figures["plain"][1] + count  # at most one thrown away per process
    for _, _, longest, _ in figures.values():  # the process starts and greets first: some slack
        assert longest <= turn + one_call + PROCESS_START_SECONDS
