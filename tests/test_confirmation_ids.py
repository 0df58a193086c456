"""Issue 37: a "yes" answers only the question it was given to. Every yes/no question carries an id (in the
page's ``question`` frame, in the ``PersonQuestion`` that crosses gRPC); an answer naming another question
(a stale "yes", sent for an earlier one) is refused with a note and never confirms the new question."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from handoffs_runtime import Notice, Question, QueueChannel, Reply
from handoffs_runtime.channels.base import STALE_ANSWER
from handoffs_runtime.distributed import FrontEnd, RelayChannel
from handoffs_runtime.messages import PersonAnswer, PersonQuestion
from handoffs_runtime.teams.acme import acme_team
from handoffs_runtime.web.operators import NOT_APPROVED
from handoffs_runtime.web.pump import WAITING_FOR_APPROVAL

from . import airline_team
from .distributed_support import TIMEOUT, Process, deploy
from .test_first_hour_confirmations import ASKED, DECLINED, FIRST, ONE, ONE_ASKED
from .web_support import Client, customer, operator, served

BUY = "buy an anvil for 30 dollars"
CONFIRM = "Order summary: anvil for $30. Confirm order? y/n"


def test_a_yes_no_question_takes_only_an_answer_naming_it() -> None:
    first, second = Question.asking(CONFIRM), Question.asking(CONFIRM)
    assert first.id and second.id and first.id != second.id  # equal questions, told apart by their id
    assert second.answered_by(second.id)
    assert not second.answered_by(first.id) and not second.answered_by(None)
    turn = Question.asking("you")  # an ordinary turn: any line is the person's next message
    assert turn.answered_by(None) and turn.answered_by(first.id)


async def _answer(page: Client, text: str, question: str | None) -> list[dict[str, Any]]:
    """Send ``text`` as the answer to ``question`` (an id, or none); the frames up to the next question."""
    await page.send({"type": "say", "text": text, **({"question": question} if question else {})})
    return await page.until("question")


async def test_a_stale_yes_on_the_web_page_does_not_confirm_the_next_question(tmp_path: Path) -> None:
    airline_team.done.clear()
    async with served(tmp_path, team=airline_team.airline_team()) as server:
        page, _ = await customer(server)
        try:
            await page.until("question")
            got = await page.say(ONE)
            assert [m["text"] for m in got if m["type"] == "reply"] == [ONE_ASKED]
            earlier = got[-1]["id"]
            got = await _answer(page, "no", earlier)
            assert [m["text"] for m in got if m["type"] == "reply"] == [DECLINED]
            got = await page.say(ASKED)
            assert [m["text"] for m in got if m["type"] == "reply"] == [FIRST]
            now = got[-1]
            assert now["choices"] == ["yes", "no"] and now["id"] != earlier
            for stale in (None, earlier):  # no id (as pages sent), or the earlier one's: refused, asked again
                got = await _answer(page, "yes", stale)
                assert [(m["type"], m["id"]) for m in got] == [("question", now["id"])]
                assert await page.recv() == {"type": "error", "message": STALE_ANSWER}
            assert not [m for m in page.seen if m["type"] == "said" and m["text"] == "yes"]
            got = await _answer(page, "no", now["id"])
            assert [m["text"] for m in got if m["type"] == "reply"] == [DECLINED]
        finally:
            await page.socket.close()
    assert airline_team.done == []


async def test_an_approval_in_the_operator_console_takes_only_an_answer_naming_it(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        page, session = await customer(server)
        console = await operator(server)
        try:
            sid = session["session"]
            await page.until("question")
            proposal = (await page.say("I want a refund for my shoes"))[-1]
            await page.send({"type": "say", "text": "yes", "question": proposal["id"]})
            await page.until("notice", text=WAITING_FOR_APPROVAL)
            await console.send({"type": "take", "session": sid})
            taken = (await console.until("taken", session=sid))[-1]
            approval = taken["question"] or (await console.until("question", person="operator"))[-1]
            assert approval["choices"] == ["yes", "no"] and approval["id"] != proposal["id"]
            for stale in (None, proposal["id"]):  # no id, or another question's: refused, shown again
                await console.send({"type": "say", "session": sid, "text": "yes", **_named(stale)})
                again = await console.until("question", person="operator")
                assert again[-1]["id"] == approval["id"]
                assert await console.recv() == {"type": "error", "message": STALE_ANSWER}
            await console.send({"type": "say", "session": sid, "text": "no", "question": approval["id"]})
            await console.until("released", session=sid)
            await page.until("notice", text=NOT_APPROVED)
        finally:
            await page.socket.close()
            await console.socket.close()


def _named(question: str | None) -> dict[str, str]:
    return {"question": question} if question else {}


async def _next(channel: QueueChannel, kind: type[Any]) -> Any:
    """The session's next event of type ``kind``."""
    while not isinstance(event := await channel.next_output("s1", TIMEOUT), kind):
        pass
    return event


async def test_a_stale_yes_through_a_grpc_front_end_does_not_confirm_the_next_order(
    processes: list[Process],
) -> None:
    address = await deploy(processes, "TriageAgent", "SalesAgent,IssuesAndRepairsAgent,HumanAgent")
    channel = QueueChannel()
    async with FrontEnd(acme_team(), address, channel) as front:
        await front.open("s1")
        asked: list[str] = []
        for answer, done in (("no", "User cancelled order."), ("yes", "Success.")):
            await channel.say("s1", BUY)
            assert (await _next(channel, Reply)).text.endswith("Shall I go ahead? (yes/no)")
            await channel.say("s1", "yes")  # to the proposal: the order's tool runs on a worker and asks
            question = await _next(channel, Question)  # asked on the worker, shown here under its id
            assert question.prompt == CONFIRM and question.choices == ("yes", "no") and question.id
            asked.append(question.id)
            if len(asked) == 2:  # the first order's question id: refused, it confirms nothing
                await channel.say("s1", "yes", question=asked[0])
                assert (await _next(channel, Notice)).text == STALE_ANSWER
            await channel.say("s1", answer, question=question.id)  # the worker takes only this id back
            assert (await _next(channel, Reply)).text == f"Done: execute order → {done}"
        assert asked[0] != asked[1]
        await channel.leave("s1")
        await front.wait("s1")


class _FrontEnd:
    """Stands for the runtime between a worker and the session's front end: answers every question with
    ``answer`` (naming ``named``, or the question asked when ``None``)."""

    def __init__(self, answer: str, named: str | None) -> None:
        self.answer, self.named = answer, named
        self.asked: list[PersonQuestion] = []

    async def send_message(self, message: PersonQuestion, *args: object, **kwargs: object) -> PersonAnswer:
        self.asked.append(message)
        return PersonAnswer(text=self.answer, question=message.id if self.named is None else self.named)


async def test_a_worker_takes_only_the_answer_to_the_question_it_asked() -> None:
    right = _FrontEnd("yes", None)
    assert await RelayChannel(right).ask("s1", CONFIRM) == "yes"  # type: ignore[arg-type]
    assert right.asked[0].id  # the question crosses gRPC with its id
    stale = _FrontEnd("yes", "0123456789abcdef")  # an answer to another question
    assert await RelayChannel(stale).ask("s1", CONFIRM) is None  # type: ignore[arg-type]
