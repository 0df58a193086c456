"""Channels: the console's output format, the queue channel's questions, and the operator's hand-back."""

from __future__ import annotations

import asyncio
import io

from handoffs_runtime import ConsoleChannel, HandoffEvent, HandoffLine, Notice, Question, QueueChannel, Reply
from handoffs_runtime.channels.base import describe
from handoffs_runtime.channels.events import EventChannel
from handoffs_runtime.channels.handback import HandBack, ask_operator, read_line
from handoffs_runtime.channels.memory import ScriptedChannel


async def test_console_prints_replies_notices_and_echoes_piped_input() -> None:
    out = io.StringIO()
    console = ConsoleChannel(stdin=io.StringIO("hello\n"), stdout=out, colour=False, echo_input=True)
    assert await console.ask("s", "you") == "hello"
    event = HandoffEvent(session_id="s", source="A", target="B", tool="transfer_to_b")
    await console.show("s", event.line({"B": "Maya from B"}))
    await console.show("s", Reply(agent="B", text="hi there", label="Maya from B"))
    await console.show("s", Notice(text="session s ended"))
    assert await console.ask("s", "you") is None  # end of input
    assert out.getvalue() == (
        "you › hello\n  ↪ Maya from B has joined\nMaya from B › hi there\n  session s ended\nyou › \n"
    )


def test_every_handoff_outcome_reads_as_its_own_line() -> None:
    lines = [
        describe(HandoffLine(source="A", target="B", tool="t", outcome=outcome, reason="r"))
        for outcome in ("handoff", "refused", "loop_stopped")
    ]
    assert lines == [
        "↪ B has joined",
        "✗ A could not hand over to B: r",
        "⚠ handoff loop stopped at A: r",
    ]
    labelled = HandoffLine(source="A", target="B", outcome="refused", source_label="Sam", target_label="Maya")
    assert describe(labelled) == "✗ Sam could not hand over to Maya: "


async def test_console_colour_only_when_asked() -> None:
    out = io.StringIO()
    await ConsoleChannel(stdin=io.StringIO(), stdout=out, colour=True).show("s", Reply(agent="A", text="x"))
    assert "\033[" in out.getvalue()


async def test_queue_channel_surfaces_questions_but_not_ordinary_turns() -> None:
    channel = QueueChannel()
    await channel.say("s", "first")
    assert await channel.ask("s", "you") == "first"
    assert channel.outbox("s").empty()
    await channel.say("s", "y")
    assert await channel.ask("s", "Confirm order? y/n") == "y"
    assert await channel.next_output("s", timeout=1) == Question(
        prompt="Confirm order? y/n", choices=("yes", "no")
    )
    await channel.say("s", "I can help", person="operator")
    assert await channel.ask("s", "HumanAgent input", person="operator") == "I can help"
    assert await channel.next_output("s", timeout=1) == Question(prompt="HumanAgent input", person="operator")
    await channel.leave("s")
    assert await channel.ask("s", "you") is None


async def test_a_person_who_left_stays_gone_for_every_later_question() -> None:
    channel = QueueChannel()
    await channel.leave("s")
    assert await channel.ask("s", "Confirm order? y/n") is None
    assert await channel.ask("s", "you") is None  # no second None needed: leaving is for good
    channel.close("s")
    await channel.say("s", "back again")
    assert await channel.ask("s", "you") == "back again"


async def test_console_end_of_input_is_for_good() -> None:
    console = ConsoleChannel(stdin=io.StringIO(""), stdout=io.StringIO(), colour=False)
    assert await console.ask("s", "Confirm order? y/n") is None
    assert await console.ask("s", "you") is None


async def test_console_drops_the_answer_to_a_question_that_was_cancelled() -> None:
    import asyncio
    import os

    read_fd, write_fd = os.pipe()
    stdin = os.fdopen(read_fd, "r")
    console = ConsoleChannel(stdin=stdin, stdout=io.StringIO(), colour=False, echo_input=False)
    question = asyncio.ensure_future(console.ask("s", "Allow? y/n"))
    await asyncio.sleep(0)  # let the question start reading
    question.cancel()  # e.g. the tool that asked timed out
    os.write(write_fd, b"y\nhello\n")
    assert await asyncio.wait_for(console.ask("s", "you"), 5) == "hello"
    os.close(write_fd)
    stdin.close()


async def test_a_second_question_waits_for_the_first_and_nothing_hangs() -> None:
    """Two questions at once (an agent's and a tool's, or a forged one) are asked one after the other."""
    import asyncio
    import os

    read_fd, write_fd = os.pipe()
    out = io.StringIO()
    stdin = os.fdopen(read_fd, "r")
    try:
        console = ConsoleChannel(stdin=stdin, stdout=out, colour=False, echo_input=True)
        first = asyncio.ensure_future(console.ask("alice", "you"))
        second = asyncio.ensure_future(console.ask("alice", "Confirm order? y/n"))
        third = asyncio.ensure_future(console.ask("alice", "HumanAgent input", person="operator"))
        for _ in range(5):
            await asyncio.sleep(0)
        assert out.getvalue() == "you › "  # only the first question is on screen
        second.cancel()  # e.g. its tool timed out while it waited its turn
        os.write(write_fd, b"buy skates\n")
        assert await asyncio.wait_for(first, 10) == "buy skates"
        os.write(write_fd, b"I can help\n")
        assert await asyncio.wait_for(third, 10) == "I can help"
        os.write(write_fd, b"next\n")
        assert await asyncio.wait_for(console.ask("alice", "you"), 10) == "next"
    finally:
        os.close(write_fd)  # first, so that the reading thread sees the end and lets go of stdin
        stdin.close()
    assert second.cancelled()
    assert out.getvalue() == "you › buy skates\nHumanAgent input › I can help\nyou › next\n"


async def test_typed_handoff_is_read_into_a_hand_back_at_a_text_channels_edge() -> None:
    channel = ScriptedChannel.for_sessions(
        {"s": []}, operator=["/handoff SalesAgent", "  hello  ", "/handoffs"]
    )
    assert await ask_operator(channel, "s", "input") == HandBack("SalesAgent")
    assert await ask_operator(channel, "s", "input") == "  hello  "  # words as written: the agent trims
    assert await ask_operator(channel, "s", "input") == "/handoffs"  # not the command: the agent asks again
    assert await ask_operator(channel, "s", "input") is None  # gone


async def test_the_event_channel_hands_back_a_value_and_relays_it_as_text() -> None:
    """The web's button reaches the human agent as a value; a question relayed from another process
    (plain ``ask``) gets the text form, read back into the value on the other side."""
    channel = EventChannel()
    asked = asyncio.ensure_future(ask_operator(channel, "s", "input"))
    while channel.waiting("s", "operator") is None:
        await asyncio.sleep(0)
    await channel.hand_back("s", "TriageAgent")
    assert await asked == HandBack("TriageAgent")
    assert channel.waiting("s", "operator") is None
    relayed = asyncio.ensure_future(channel.ask("s", "input", person="operator"))
    while channel.waiting("s", "operator") is None:
        await asyncio.sleep(0)
    await channel.hand_back("s", "SalesAgent")
    assert read_line(text := await relayed or "") == HandBack("SalesAgent") and text == "/handoff SalesAgent"
