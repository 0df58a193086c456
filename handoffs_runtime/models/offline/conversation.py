"""What the offline model reads off the messages: a request, its answers and corrections, this turn.

A request can take several messages: ``I want to change my flight`` → ``Which booking ref?`` →
``SKY123`` → ``Which new date?`` → ``the 3rd of January`` → the proposal → ``no, the 4th`` (a
correction) → the proposal again → ``yes``. Reading back from the latest message gives the request, each
answer with the argument it was asked for, and each correction, so every turn is read from the messages
alone (the model keeps no state between calls).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    UserMessage,
)

from handoffs_runtime.confirmation import ASK_CONFIRMATION
from handoffs_runtime.models.offline import values
from handoffs_runtime.models.offline.intents import intent_words
from handoffs_runtime.models.offline.words import Word

YES = frozenset(
    {"y", "yes", "yeah", "yep", "sure", "ok", "okay", "confirm", "go ahead", "please do", "do it"}
)
NO = frozenset({"n", "no", "nope", "cancel", "don't", "do not", "stop"})
_CONTEXT = frozenset({"status", "billing", "problem"})
"""Concepts of a whole message that every clause of it carries (``I ordered X and it hasn't come``)."""
_ASKED = re.compile(r"^To .+ I need the (?P<argument>.+)\. Which (?P=argument)\?$")
_CORRECTING = (values.Kind.DATE, values.Kind.REFERENCE, values.Kind.AMOUNT)
"""Kinds of value that make an answer to a proposal a correction (``no, the 21st``), not a plain no."""


def cleaned(text: str) -> str:
    return re.sub(r"[^a-z' ]", "", text.lower()).strip()


def is_answer(text: str, answers: frozenset[str]) -> bool:
    said = cleaned(text)
    return said in answers or (said.split(" ")[0] in answers and len(said.split()) <= 3)


def asked_argument(text: str) -> str | None:
    """The argument this model's ``To <tool> I need the <argument>. Which <argument>?`` asks for."""
    match = _ASKED.match(text)
    return match.group("argument") if match else None


def is_correction(text: str) -> bool:
    """Whether an answer to a proposal gives a value instead of a plain yes (``no, the 21st``)."""
    return not is_answer(text, YES) and any(values.read(kind, text) for kind in _CORRECTING)


def _said_before(messages: Sequence[LLMMessage], index: int) -> str:
    """The agent's text right before message ``index``, or ``""``."""
    before = messages[index - 1] if index > 0 else None
    if isinstance(before, AssistantMessage) and isinstance(before.content, str):
        return before.content
    return ""


@dataclass(frozen=True)
class Part:
    """One message of a request: its first words, an answer to ``Which <asked>?``, or a correction."""

    text: str
    asked: str = ""
    correction: bool = False


@dataclass
class Conversation:
    """What the offline model reads off the message list."""

    parts: list[Part]  # the request the model acts on, from its first words to the latest
    latest: str  # the person's latest words
    proposed: bool  # the agent's last text asked the person to confirm
    results: dict[str, FunctionExecutionResult]  # this turn's results of offered regular tools, by name
    handed_over: bool  # the conversation reached this agent by a handoff during this turn
    called: set[str]  # every tool called since the person last spoke, by any agent


def read(messages: Sequence[LLMMessage], regular: set[str]) -> Conversation:
    said: list[tuple[int, str]] = [
        (i, m.content)
        for i, m in enumerate(messages)
        if isinstance(m, UserMessage) and isinstance(m.content, str)
    ]
    last_user = said[-1][0] if said else -1
    latest = said[-1][1] if said else ""
    proposed = _said_before(messages, last_user).endswith(ASK_CONFIRMATION) if said else False
    at = len(said) - 1
    if is_answer(latest, YES):
        at = next(
            (
                k
                for k in range(len(said) - 2, -1, -1)
                if not is_answer(said[k][1], YES | NO) or _corrects(messages, said[k])
            ),
            at,
        )
    parts: list[Part] = []
    while at >= 0:
        index, text = said[at]
        before = _said_before(messages, index)
        asked = asked_argument(before)
        if at > 0 and asked is not None:
            parts.insert(0, Part(text, asked=asked))
        elif at > 0 and _corrects(messages, said[at]):
            parts.insert(0, Part(text, correction=True))
        else:
            parts.insert(0, Part(text))
            break
        at -= 1
    results: dict[str, FunctionExecutionResult] = {}
    handed_over = False
    called: set[str] = set()
    for m in messages[last_user + 1 :]:
        if isinstance(m, AssistantMessage) and isinstance(m.content, list):
            called.update(c.name for c in m.content)
        if isinstance(m, FunctionExecutionResultMessage):
            for r in m.content:
                if r.name in regular:
                    results[r.name] = r
                else:
                    handed_over = True
    return Conversation(parts or [Part("")], latest, proposed, results, handed_over, called)


def _corrects(messages: Sequence[LLMMessage], said: tuple[int, str]) -> bool:
    return _said_before(messages, said[0]).endswith(ASK_CONFIRMATION) and is_correction(said[1])


@dataclass(frozen=True)
class Request:
    """What the person asks for: their words, their answers to "Which <argument>?" (with the argument
    each was asked for) and their corrections to a proposal."""

    text: str
    answers: tuple[tuple[str, str], ...] = ()
    corrections: tuple[str, ...] = ()

    @property
    def answer(self) -> str:
        """The latest answer, or ``""``."""
        return self.answers[-1][1] if self.answers else ""

    @property
    def whole(self) -> str:
        """The words and the answers together, for arguments that describe the whole request."""
        return " ".join([self.text, *(a for _, a in self.answers)])

    @property
    def context(self) -> list[Word]:
        """The concepts of the whole request that each of its clauses carries."""
        return [w for w in intent_words(self.text) if w.norm in _CONTEXT]


def request(parts: list[Part], own_request: Callable[[str], bool]) -> Request:
    """The request in ``parts``: it starts again at the last answer that is a request of its own
    (``own_request(text)`` says so: it matches a tool, a handoff or the agent's own area)."""
    start = 0
    for i, part in enumerate(parts):
        if i > 0 and not part.correction and own_request(part.text):
            start = i
    first, rest = parts[start], parts[start + 1 :]
    answers = tuple((p.asked, p.text.strip().strip(".!?,;:").strip()) for p in rest if not p.correction)
    corrections = tuple(p.text for p in rest if p.correction)
    return Request(first.text, answers, corrections)
