"""The message protocol that agents publish to each other, and the events a person is shown.

These are pydantic models because they cross the gRPC wire in distributed mode. The whole conversation
travels inside the message (``context``), so agents hold no state between messages and any worker can
serve any session. The person's events (``Event``) are one vocabulary for channels, the relay from a
worker to the session's front end, the web page's JSON and stored transcripts.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Any, Literal, get_args

from autogen_core import FunctionCall
from autogen_core.models import FunctionExecutionResult, LLMMessage
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from handoffs_runtime.private import constructed_model
from handoffs_runtime.usage import Usage


class UserLogin(BaseModel):
    """Starts a session: published to the ``User`` topic with the session id as the topic source."""


class UserTask(BaseModel):
    """A conversation handed to an agent, with everything said so far.

    ``turn_path`` lists the agents that have held the conversation since the person last spoke; the loop
    guard reads it to bound handoffs per turn and to spot ping-pong between two agents.
    """

    context: list[LLMMessage]
    turn_path: list[str] = Field(default_factory=list)
    trace: dict[str, str] | None = None
    """W3C trace context of the turn (``traceparent``, ``tracestate``), set only when telemetry is on."""
    usage: Usage = Usage.EMPTY
    """Tokens the session has used so far, by agent (see :mod:`.usage`)."""
    turn_spent: float = 0.0
    """Seconds of the turn's time (``TeamPolicy.turn_deadline``) the agents before this one spent: a
    handoff carries the turn's clock on, so a turn with handoffs has one deadline, not one per agent."""


class AgentResponse(BaseModel):
    """An agent's answer to the person; the person's next message goes to ``reply_to_topic_type``."""

    reply_to_topic_type: str
    context: list[LLMMessage]
    trace: dict[str, str] | None = None
    """W3C trace context of the turn, set only when telemetry is on."""
    usage: Usage = Usage.EMPTY
    """Tokens the session has used, by agent, including this turn's (see :mod:`.usage`)."""
    live: bool = False
    """From a person holding a live conversation (``HumanAgent`` on a channel whose operator is apart
    from the customer): the customer may write again before the next reply, and the reply's last message,
    the person's new line (the first reply of a live conversation has none), joins the conversation as
    it stands by then, whatever the customer wrote meanwhile (see ``UserAgent``)."""
    part_done: bool | None = None
    """Whether this reply ends the agent's part of a returning handoff: ``None``, the reply's words tell
    (a question waits for the person's answer); a remote agent says so from its task's state."""


HandoffOutcome = Literal["handoff", "refused", "loop_stopped"]
Person = Literal["customer", "operator"]
Labels = Mapping[str, str]
"""What people read for each agent (its display name), by agent name: ``TeamSpec.labels``. An agent
missing from it is read by its name."""
NO_LABELS: Labels = {}


class HandoffEvent(BaseModel):
    """What observers (the console, a trace, a dashboard) learn about every handoff decision.

    ``said`` is the text the model wrote next to the handoff call ("I'll pass you to sales"), shown to
    the person with the handoff; it is model output, so it is shown as plain text only.
    """

    session_id: str
    source: str
    target: str
    tool: str
    outcome: HandoffOutcome = "handoff"
    arguments: dict[str, Any] | None = None
    hop: int = 0
    reason: str = ""
    kind: str = ""
    """``reason`` with nothing quoted from the conversation or the model (``validation failed: account``):
    what telemetry records unless content capture is on."""
    said: str = ""
    returns: bool = False
    """The handoff was declared ``returns=True``: the conversation comes back to ``source`` when
    ``target``'s part is done (see :mod:`handoffs_runtime.handoffs.returns`)."""

    def line(self, labels: Labels = NO_LABELS) -> HandoffLine:
        """What the person is shown of this decision (``said`` is shown before it, as a reply), with the
        agents' display names from ``labels``."""
        return HandoffLine(
            source=self.source,
            target=self.target,
            tool=self.tool,
            outcome=self.outcome,
            reason=self.reason,
            hop=self.hop,
            source_label=labels.get(self.source, ""),
            target_label=labels.get(self.target, ""),
        )


class WorkerTask(BaseModel):
    """A task sent (RPC, not published) to a worker or an agent offered as a tool; see ``WorkerResult``.

    ``timeout`` travels with the task so the worker stops on its own even where cancellation cannot reach
    it (across a gRPC host).
    """

    session_id: str
    task: str
    caller: str
    depth: int = 1
    timeout: float | None = None
    trace: dict[str, str] | None = None
    """W3C trace context of the caller's tool call, set only when telemetry is on."""


class WorkerResult(BaseModel):
    """A worker's final answer, or why it has none (``ok=False``)."""

    text: str
    ok: bool = True
    usage: Usage = Usage.EMPTY
    """Tokens the worker (and the workers it created) used for this task, by agent."""


class Undeliverable(BaseModel):
    """A conversation could not reach ``topic_type``; sent to the session's ``User`` topic.

    The host sends it when no worker serves the topic; a worker sends it with a ``reason`` when the
    message was over the size limit. ``context`` is what could not be handed over, so the person can
    try again.
    """

    topic_type: str
    context: list[LLMMessage] = Field(default_factory=list)
    reason: str = ""


class PersonQuestion(BaseModel):
    """A question for the session's person (a confirmation, the operator's turn), asked by an agent on
    another process; the session's ``UserAgent`` answers it with a ``PersonAnswer``."""

    prompt: str
    person: Person = "customer"
    on_record: bool = False
    """A tool's question (``ask_person``): stored with its answer in the session's transcript."""
    id: str = ""
    """The question's id (see :attr:`Question.id`), given by the asker: the front end's person is asked
    under it, and the answer comes back naming it."""


class PersonAnswer(BaseModel):
    """The person's answer; ``None`` when they left."""

    text: str | None = None
    question: str = ""
    """The id of the question answered (the ``PersonQuestion``'s): the asker takes no other."""


# --- what a person is shown -------------------------------------------------------------------------
#
# One vocabulary for every destination: a channel's ``show``, the ``PersonEvent`` that carries an event
# from a worker to the session's front end, the JSON a web page receives (``event_json``) and what a
# stored transcript entry renders to. The ``type`` field tells them apart on the wire.
#
# An event names agents twice: ``agent`` (``source``, ``target``), the agent type, for code, and ``label``
# (``source_label``, ``target_label``), what people read: the display name, set by whoever makes the
# event from the team's ``Labels``, empty when the agent has none. ``shown_name`` picks the one to show.
#
# They are plain dataclasses, not pydantic models, nor frozen: the runtime builds several per turn for every
# session, and a validated model costs five times as much, a frozen dataclass four times. Pydantic
# validates them where they arrive from outside (inside ``PersonEvent``, with extra fields forbidden) and
# writes their JSON. Treat them as values: a shown event is never changed.


class _Shown:
    """The base of every event a person is shown."""

    __slots__ = ()
    __pydantic_config__ = ConfigDict(extra="forbid")


@dataclass(slots=True, kw_only=True)
class Reply(_Shown):
    """``agent``'s complete reply: what is stored, and what replaces the deltas shown before it."""

    type: Literal["reply"] = "reply"
    agent: str
    text: str
    label: str = ""
    """What people read for ``agent`` (its display name); empty: the agent's name."""


@dataclass(slots=True, kw_only=True)
class Delta(_Shown):
    """A piece of ``agent``'s reply as the model writes it (``TeamPolicy(stream=True)``): progress.

    The ``Reply`` that follows holds the whole text and replaces the pieces: a stream cut in the middle
    ends with the apology as its reply, and a reply that turned into tool calls has none.
    """

    type: Literal["delta"] = "delta"
    agent: str
    text: str
    label: str = ""


@dataclass(slots=True, kw_only=True)
class _ToolProgress(_Shown):
    """What both ends of a regular tool call name: whose call (and ``label``, what people read for
    ``agent``), of which tool, under which id."""

    agent: str
    tool: str
    call_id: str
    label: str = ""


@dataclass(slots=True, kw_only=True)
class ToolStarted(_ToolProgress):
    """A regular tool call of ``agent`` starting: progress."""

    type: Literal["tool_started"] = "tool_started"
    arguments: str

    @classmethod
    def of(cls, call: FunctionCall, *, agent: str, label: str = "") -> ToolStarted:
        """``agent``'s ``call`` as it starts, live or read back from the store."""
        return cls(agent=agent, tool=call.name, call_id=call.id, arguments=call.arguments, label=label)


@dataclass(slots=True, kw_only=True)
class ToolFinished(_ToolProgress):
    """A tool call's result (progress); ``is_error`` when it failed (the model is told, and goes on)."""

    type: Literal["tool_finished"] = "tool_finished"
    result: str
    is_error: bool = False

    @classmethod
    def of(cls, result: FunctionExecutionResult, *, agent: str, label: str = "") -> ToolFinished:
        """The ``result`` of a call of ``agent``'s, live or read back from the store."""
        return cls(
            agent=agent,
            tool=result.name,
            call_id=result.call_id,
            result=result.content,
            is_error=bool(result.is_error),
            label=label,
        )


@dataclass(slots=True, kw_only=True)
class HandoffLine(_Shown):
    """A handoff decision as the person reads it: carried out, refused (``reason``) or a loop stopped.

    Unlike the ``HandoffEvent`` it comes from, it holds no tool arguments: a person never sees raw tool
    data. ``hop`` counts the handoffs of the turn so far.
    """

    type: Literal["handoff"] = "handoff"
    source: str
    target: str
    tool: str = ""
    outcome: HandoffOutcome = "handoff"
    reason: str = ""
    hop: int = 0
    source_label: str = ""
    target_label: str = ""
    """What people read for ``source`` and ``target`` (display names); empty: the agents' names."""


@dataclass(slots=True, kw_only=True)
class Question(_Shown):
    """A question waiting for ``person``; ``turn`` when it is the customer's ordinary turn to speak.

    ``choices`` are the answers offered as buttons: ``yes``/``no`` for a confirmation (``Confirm order?
    y/n``), and for the customer's turn after a reply that asks a yes/no question (``Shall I go ahead?
    (yes/no)``), where typing anything else stays possible.
    """

    type: Literal["question"] = "question"
    prompt: str
    person: Person = "customer"
    turn: bool = False
    choices: tuple[str, ...] = ()
    id: str = field(default="", compare=False)
    """Which question this is; the answer to a yes/no question must name it (:meth:`answered_by`)."""

    @classmethod
    def asking(cls, prompt: str, person: Person = "customer", *, after: str = "") -> Question:
        """The question a channel's ``ask(prompt, person=...)`` puts; ``after`` is the reply the person
        last read. A prompt, or a turn after a reply, that asks for a yes or a no offers yes/no. Its id
        is the asker's (:func:`asked_as`, a question from another process) or a new one."""
        turn = person == "customer" and prompt == USER_PROMPT
        choices = YES_NO if asks_yes_no(prompt) or (turn and asks_yes_no(after)) else ()
        ident = _asked_as.get() or new_question_id()
        return cls(prompt=prompt, person=person, turn=turn, choices=choices, id=ident)

    def answered_by(self, question: str | None) -> bool:
        """Whether an answer sent for the question ``question`` (its id; ``None``: it named none) may
        answer this one. A yes/no question takes only an answer naming it: a "yes" meant for an earlier
        question, or sent before this one was shown, must never confirm what the person has not read.
        Any other question takes any line (typing ahead an ordinary message confirms nothing)."""
        return not self.choices or question == self.id


@dataclass(slots=True, kw_only=True)
class Said(_Shown):
    """What ``person`` answered (an operator's ``/handoff AGENT`` too)."""

    type: Literal["said"] = "said"
    text: str
    person: Person = "customer"


@dataclass(slots=True, kw_only=True)
class Notice(_Shown):
    """A line from the runtime itself: a session starting, resuming or ending, a warning.

    ``text`` is for anyone; ``detail`` holds what only whoever runs the team should read (a file's path,
    another process's pid and host): the console and the operator see it, a web customer does not.
    """

    type: Literal["notice"] = "notice"
    text: str
    detail: str = ""
    recap: bool = False
    """A line that retells what was said before (a resumed session's last exchanges, on a console): a page
    that shows the stored transcript itself leaves it out."""


@dataclass(slots=True, kw_only=True)
class SessionEnded(_Shown):
    """The last event of a session."""

    type: Literal["ended"] = "ended"


Event = Annotated[
    Reply | Delta | ToolStarted | ToolFinished | HandoffLine | Question | Said | Notice | SessionEnded,
    Field(discriminator="type"),
]
"""Everything a person is shown, told apart by ``type``."""

PROGRESS: tuple[type[_Shown], ...] = (Delta, ToolStarted, ToolFinished)
"""Events of a turn under way: shown only, never stored, and built only for channels that show them."""

RELAYED: tuple[type[_Shown], ...] = (Notice, *PROGRESS)
"""What an agent on another process may show the session's person (``PersonEvent``). Replies, handoff
lines and questions reach the front end as the messages they come from, stored before they are shown."""

_asked_as: ContextVar[str] = ContextVar("handoffs_question_id", default="")


def new_question_id() -> str:
    """A fresh question id: unguessable enough that an answer cannot name a question it never saw."""
    return uuid.uuid4().hex[:16]


@contextmanager
def asked_as(question_id: str) -> Iterator[None]:
    """Questions put inside are given ``question_id``: a question asked on another process keeps its
    asker's id on the way to the person, so the answer names what the asker asked."""
    token = _asked_as.set(question_id)
    try:
        yield
    finally:
        _asked_as.reset(token)


USER_PROMPT = "you"
"""The prompt of an ordinary turn; channels show other prompts as questions."""
YES_NO = ("yes", "no")
_ASKS_YES_NO = re.compile(
    r"(?:\by/n|\(\s*(?:yes\s*/\s*no|y\s*/\s*n|yes or no)\s*\))[\s.:?!]*$", re.IGNORECASE
)


def shown_name(label: str, agent: str) -> str:
    """What a person reads for an agent: its ``label`` (display name), else its name."""
    return label or agent


def asks_yes_no(text: str) -> bool:
    """Whether ``text`` ends by asking for a yes or a no: ``Confirm order? y/n``, ``Shall I go ahead?
    (yes/no)``, ``(yes or no)``."""
    return _ASKS_YES_NO.search(text[-200:]) is not None


@cache
def _event_adapter() -> TypeAdapter[Event]:
    """Built on first use: a process that never writes JSON for a page never holds its schema."""
    return TypeAdapter(Event)


def event_json(event: Event) -> dict[str, Any]:
    """``event`` as a web page receives it: a JSON object whose ``type`` tells what it is."""
    data: dict[str, Any] = _event_adapter().dump_python(event, mode="json")
    return data


class PersonEvent(BaseModel):
    """An event for the session's person from an agent on another process (a tool's notice, progress):
    published to the session's ``User`` topic, shown by its ``UserAgent`` if it is one of ``RELAYED``."""

    event: Event


MESSAGE_TYPES: tuple[type[BaseModel], ...] = (
    UserLogin,
    UserTask,
    AgentResponse,
    HandoffEvent,
    WorkerTask,
    WorkerResult,
    Undeliverable,
    PersonQuestion,
    PersonAnswer,
    PersonEvent,
)
"""Every message type of the protocol: a distributed worker registers a serializer for each."""


# --- building messages on the hot path ----------------------------------------------------------------
#
# The whole conversation travels in every UserTask and AgentResponse, and pydantic re-checks each item of
# ``context`` on construction: about 0.5 µs per message, so a 60-message conversation costs 30 µs per hop.
# When every item is already an LLMMessage instance (what the agents build), that check is all pydantic
# would do, so it is done here in one pass (in C when the items are of exactly the union's types) and the
# model is constructed without re-validation. Anything else (a filter that returned dicts, say) goes
# through full validation as before.

_LLM_MESSAGE_TYPES: tuple[type[BaseModel], ...] = get_args(get_args(LLMMessage)[0])
"""The members of autogen's ``LLMMessage`` union (``Annotated[Union[...], discriminator]``)."""
_EXACT_TYPES, _STR = frozenset(_LLM_MESSAGE_TYPES), frozenset((str,))


def _validated_already(context: object, *names: object) -> bool:
    exact = type(context) is list and _EXACT_TYPES.issuperset(map(type, context))
    return (
        exact or (type(context) is list and all(isinstance(m, _LLM_MESSAGE_TYPES) for m in context))
    ) and _STR.issuperset(map(type, names))


def goes_on_from(context: list[LLMMessage], earlier: list[LLMMessage]) -> bool:
    """Whether ``context`` continues ``earlier`` and is longer: a message that carried ``earlier`` was
    answered already."""
    return len(context) > len(earlier) and context[: len(earlier)] == earlier


def user_task(
    context: list[LLMMessage], turn_path: list[str], usage: Usage = Usage.EMPTY, turn_spent: float = 0.0
) -> UserTask:
    """``UserTask(context=..., turn_path=..., usage=..., turn_spent=...)``, without re-validating items
    that are LLMMessages already (``usage`` is a ``Usage``: valid by construction)."""
    if type(turn_path) is list and _validated_already(context, *turn_path):
        values = {"context": context, "turn_path": turn_path, "trace": None, "usage": usage}
        values["turn_spent"] = float(turn_spent)
        return constructed_model(UserTask, values)
    return UserTask(context=context, turn_path=turn_path, usage=usage, turn_spent=turn_spent)


def agent_response(
    context: list[LLMMessage],
    reply_to_topic_type: str,
    usage: Usage = Usage.EMPTY,
    *,
    live: bool = False,
    part_done: bool | None = None,
) -> AgentResponse:
    """``AgentResponse(...)``, without re-validating items that are LLMMessages already."""
    if _validated_already(context, reply_to_topic_type):
        values = {
            "reply_to_topic_type": reply_to_topic_type,
            "context": context,
            "trace": None,
            "usage": usage,
            "live": live,
            "part_done": part_done,
        }
        return constructed_model(AgentResponse, values)
    return AgentResponse(
        context=context, reply_to_topic_type=reply_to_topic_type, usage=usage, live=live, part_done=part_done
    )
