"""The built-in offline model: deterministic, no network, good enough to demo any team.

It is not a language model. It reads the person's latest words (see ``words``) and the phrases
that say more than their words (``intents``), clause by clause (``return my shoes and buy new
ones`` is two requests; the first one that matches decides), and:

1. answers honestly when the words are not English, and sends a person who asks for a person to the
   handoff that reaches one, whatever else they said;
2. carries out explicit requests at once: in ``<instruction>: <text>`` (``run this python: print(6*7)``)
   the person spelled the argument out, so when the instruction matches a tool whose required text
   arguments are all literal (``code``, ``command``...) or descriptive (``task_description``...), it is
   called without asking, the literal ones getting ``<text>`` and the descriptive ones the whole request;
3. acts: when a clause matches a regular tool, it proposes it and, once the person says yes, calls it,
   first calling any tool whose description says it finds a required argument (``look_up_item`` finds the
   ``item_id`` that ``execute_refund`` needs), then reports the results. It never acts on a guess: a
   clause that negates or cancels (``don't``, ``cancel``) proposes nothing; a tool marked ``irreversible``
   is proposed only for a present request to do that very action (not ``where is my refund?``, ``I was
   charged twice`` or ``I ordered it last week``) and for a clear object, not ``help`` or ``my order``; an
   argument it cannot read from the words is asked for (``To get weather I need the city. Which city?``)
   and the answer, whatever it is, completes the request;
4. stays: a request that fits the agent's own description or examples is answered here;
5. routes: when a clause matches a handoff tool's name or description, or its target's examples, it
   calls that handoff;
6. otherwise answers with what the team can do, or takes a handoff that is marked as the way back
   (words like "back", "outside" or "other") when the agent was not just handed the conversation.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from autogen_core import FunctionCall
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    UserMessage,
)
from autogen_core.tools import ToolSchema

from handoffs_runtime.models.local import LocalModel, Reply, current_model_call, tool_call
from handoffs_runtime.models.offline import arguments as args
from handoffs_runtime.models.offline.intents import (
    FOREIGN_REPLY,
    asks_status,
    blocks_action,
    foreign,
    intent_words,
    wants_person,
)
from handoffs_runtime.models.offline.routing import Examples, best, concepts, fit, tool_terms
from handoffs_runtime.models.offline.words import Word, clauses, negated, score, terms, words
from handoffs_runtime.models.profile import AgentProfile

ASK_CONFIRMATION = "Shall I go ahead? (yes/no)"
_WAY_BACK = frozenset({"back", "outside", "other", "purview", "else"})
_YES = frozenset(
    {"y", "yes", "yeah", "yep", "sure", "ok", "okay", "confirm", "go ahead", "please do", "do it"}
)
_NO = frozenset({"n", "no", "nope", "cancel", "don't", "do not", "stop"})
_CONTEXT = frozenset({"status", "billing", "problem"})
"""Concepts of a whole message that every clause of it carries (``I ordered X and it hasn't come``)."""
_QUOTE_LIMIT = 120
_HANDOFF_PREFIXES = ("transfer_back_to_", "transfer_to_", "escalate_to_", "back_to_", "ask_")


def _cleaned(text: str) -> str:
    return re.sub(r"[^a-z' ]", "", text.lower()).strip()


def _is_answer(text: str, answers: frozenset[str]) -> bool:
    cleaned = _cleaned(text)
    return cleaned in answers or (cleaned.split(" ")[0] in answers and len(cleaned.split()) <= 3)


def _asked_argument(text: str) -> bool:
    """Whether ``text`` is this model's ``To <tool> I need the <argument>. Which <argument>?``."""
    return text.startswith("To ") and " I need the " in text and ". Which " in text and text.endswith("?")


def _said_before(messages: Sequence[LLMMessage], index: int) -> str:
    """The agent's text right before message ``index``, or ``""``."""
    before = messages[index - 1] if index > 0 else None
    if isinstance(before, AssistantMessage) and isinstance(before.content, str):
        return before.content
    return ""


@dataclass
class _Conversation:
    """What the offline model reads off the message list."""

    parts: list[str]  # the request the model acts on: its words, then each answer to "Which <argument>?"
    latest: str  # the person's latest words
    proposed: bool  # the agent's last text asked the person to confirm
    results: dict[str, FunctionExecutionResult]  # this turn's results of offered regular tools, by name
    handed_over: bool  # the conversation reached this agent by a handoff during this turn
    called: set[str]  # every tool called since the person last spoke, by any agent


def _read(messages: Sequence[LLMMessage], regular: set[str]) -> _Conversation:
    said: list[tuple[int, str]] = [
        (i, m.content)
        for i, m in enumerate(messages)
        if isinstance(m, UserMessage) and isinstance(m.content, str)
    ]
    last_user = said[-1][0] if said else -1
    latest = said[-1][1] if said else ""
    at = len(said) - 1
    if _is_answer(latest, _YES):
        at = next((k for k in range(len(said) - 2, -1, -1) if not _is_answer(said[k][1], _YES | _NO)), at)
    parts = [said[at][1]] if said else [""]
    while at > 0 and _asked_argument(_said_before(messages, said[at][0])):
        at -= 1
        parts.insert(0, said[at][1])
    proposed = _said_before(messages, last_user).endswith(ASK_CONFIRMATION) if said else False
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
    return _Conversation(parts, latest, proposed, results, handed_over, called)


@dataclass(frozen=True)
class _Request:
    """What the person asks for: their words, and their answer to "Which <argument>?" if they gave one."""

    text: str
    answer: str = ""

    @property
    def whole(self) -> str:
        """The words and the answer together, for arguments that describe the whole request."""
        return f"{self.text} {self.answer}" if self.answer else self.text

    @property
    def context(self) -> list[Word]:
        """The concepts of the whole request that each of its clauses carries."""
        return [w for w in intent_words(self.text) if w.norm in _CONTEXT]


@dataclass
class _Agent:
    """The calling agent as the offline model sees it."""

    name: str
    regular: list[ToolSchema]
    handoffs: list[ToolSchema]
    description: str
    irreversible: frozenset[str]
    examples: Examples = field(default_factory=dict)
    label: str = ""
    targets: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def shown(self) -> str:
        """What people read for this agent."""
        return self.label or self.name

    @property
    def own_area(self) -> set[str]:
        """The words of its description and the concepts of its own examples."""
        return terms(self.description) | concepts(self.examples.get(self.name, ()))

    @property
    def vocabulary(self) -> set[str]:
        """Every word this agent acts on: its tools', its handoffs' and its own area's."""
        return self.own_area.union(*(tool_terms(t) for t in [*self.regular, *self.handoffs]))


def _clause_words(clause: str, request: _Request) -> list[Word]:
    return words(clause) + intent_words(clause) + request.context


class OfflineModel(LocalModel):
    """The deterministic stand-in for a language model used when no model is configured."""

    label = "offline"
    profile: AgentProfile | None = None
    """The agent this model serves, given by :meth:`for_agent`; without one it knows only the call."""

    def for_agent(self, profile: AgentProfile) -> OfflineModel:
        """This model for one agent: it routes by the agent's words; calls are recorded with this one's."""
        model = copy.copy(self)
        model.profile = profile
        return model

    def respond(self, messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        call = current_model_call()
        handoff_names = (
            call.handoff_tools
            if call
            else frozenset(t["name"] for t in tools if t["name"].startswith(("transfer_", "escalate_")))
        )
        regular = [t for t in tools if t["name"] not in handoff_names]
        profile = self.profile or AgentProfile(call.agent if call else "assistant")
        me = _Agent(
            name=profile.name,
            regular=regular,
            handoffs=[t for t in tools if t["name"] in handoff_names],
            description=profile.description,
            irreversible=profile.irreversible,
            examples=profile.examples,
            label=profile.label,
            targets=profile.targets,
        )
        talk = _read(messages, {t["name"] for t in regular})

        if talk.results:  # carrying out a confirmed plan
            return self._continue(talk, me)
        confirmed = talk.proposed and _is_answer(talk.latest, _YES)
        if confirmed and self._plan(_request(talk.parts, me), me):
            return self._continue(talk, me)
        if talk.proposed and _is_answer(talk.latest, _NO):
            return _DECLINED

        explicit = args.explicit(talk.latest, regular, best)
        if explicit is not None:
            tool, payload = explicit
            if tool["name"] in me.irreversible:  # spelled out, but it cannot be undone: ask first
                return _proposal(tool, payload)
            return [tool_call(tool["name"], args.explicit_arguments(tool, payload, talk.latest))]
        if not words(talk.latest) or _cleaned(talk.latest) in _YES | _NO:  # nothing asked, nothing to do
            return _introduce(me)
        request = _request(talk.parts, me)
        if not request.answer and foreign(request.text):
            return FOREIGN_REPLY
        fresh = [h for h in me.handoffs if h["name"] not in talk.called]  # never repeat this turn's handoffs
        if not request.answer and wants_person(request.text):
            person = best([Word("", "human")], fresh, me.examples) or _way_back(fresh, talk)
            if person is not None:
                return [_hand_over(person, request.text, request.text)]
        for clause in clauses(request.text):
            decision = self._decide(clause, request, me, fresh, said=talk.latest)
            if decision is not None:
                return decision
        back = _way_back(fresh, talk)
        if back is not None:
            return [_hand_over(back, talk.latest, talk.latest)]
        if not talk.handed_over:
            return _introduce(me, unsure=True)
        return _offline_reply(me, talk.latest)

    # --- steps ---------------------------------------------------------------------------------------

    def _decide(
        self, clause: str, request: _Request, me: _Agent, fresh: list[ToolSchema], *, said: str
    ) -> Reply | None:
        """What one clause of the request asks for, or ``None`` when it matches nothing here."""
        found = _clause_words(clause, request)
        if not found:
            return None
        tool = best(found, me.regular)
        refused = negated(clause) and not asks_status(clause)  # "hasn't arrived" asks, "don't" refuses
        if tool is not None and refused and {w.norm for w in found if w.raw} & tool_terms(tool):
            return _DECLINED  # "don't refund my anvil"
        if tool is not None and not refused:
            irreversible = tool["name"] in me.irreversible
            if irreversible and not _asks_for(tool, found, request):
                return _offline_reply(me, said)  # a report or a question about it: never an action
            about = request.answer or args.subject(clause, tool)
            lacking = args.missing(tool, about, me.regular, irreversible=irreversible)
            if lacking is not None:
                return f"To {args.humanize(tool['name'])} I need the {lacking}. Which {lacking}?"
            return _proposal(tool, about)
        handoff = best(found, fresh, me.examples)
        own = score(found, me.own_area)
        if own > 0 and (handoff is None or own >= fit(found, handoff, me.examples)):
            return _offline_reply(me, said)  # its own area, unless a handoff fits it better
        if handoff is not None:
            return [_hand_over(handoff, clause, request.whole)]
        return _DECLINED if tool is not None else None

    def _plan(self, request: _Request, me: _Agent) -> list[ToolSchema]:
        explicit = args.explicit(request.text, me.regular, best)
        if explicit is not None:
            return [explicit[0]]
        chosen = _chosen_tool(request, me)
        if chosen is None:
            return []
        target, _ = chosen
        plan = [args.provider(param, target, me.regular) for param in args.required_strings(target)]
        return [t for t in plan if t is not None] + [target]

    def _continue(self, talk: _Conversation, me: _Agent) -> Reply:
        request = _request(talk.parts, me)
        plan = self._plan(request, me)
        chosen = _chosen_tool(request, me)
        clause = chosen[1] if chosen else request.text
        explicit = args.explicit(request.text, me.regular, best)
        for tool in plan:
            result = talk.results.get(tool["name"])
            if result is None and explicit is not None and tool is explicit[0]:
                return [tool_call(tool["name"], args.explicit_arguments(tool, explicit[1], request.text))]
            if result is None:
                found = {name: r.content for name, r in talk.results.items()}
                about = request.answer or args.subject(clause, chosen[0] if chosen else tool)
                arguments = args.arguments(tool, clause, found, request=request.whole, about=about)
                return [tool_call(tool["name"], arguments)]
            if result.is_error:
                return f"Sorry, {args.humanize(tool['name'])} did not work: {result.content}"
        steps = [f"{args.humanize(t['name'])} → {talk.results[t['name']].content}" for t in plan]
        done = "; ".join(steps)
        return f"Done: {done}" + ("" if done.endswith((".", "!", "?")) else ".") if steps else "Done."


_DECLINED = "All right, I won't. Is there anything else I can help with?"


def _hand_over(handoff: ToolSchema, clause: str, request: str) -> FunctionCall:
    """The call of ``handoff``, its input (a ``reason``...) read off the words like any tool's."""
    return tool_call(handoff["name"], args.arguments(handoff, clause, {}, request=request))


def _way_back(handoffs: list[ToolSchema], talk: _Conversation) -> ToolSchema | None:
    """The handoff marked as the way back (``back``, ``other``...), unless this agent was just handed the
    conversation (it must not bounce it straight back)."""
    if talk.handed_over:
        return None
    return next((h for h in handoffs if tool_terms(h) & _WAY_BACK), None)


def _asks_for(tool: ToolSchema, found: list[Word], request: _Request) -> bool:
    """Whether the words ask for ``tool``'s action now, not report or ask about what happened or what
    it costs (``where is my refund?``, ``I was charged twice``, ``how much is it?``)."""
    return bool({w.norm for w in found} & tool_terms(tool)) and not blocks_action(request.text)


def _proposal(tool: ToolSchema, about: str) -> str:
    subject = f" for “{about}”" if about else ""
    return f"I can {args.humanize(tool['name'])}{subject}. {ASK_CONFIRMATION}"


def _quote(said: str) -> str:
    said = " ".join(said.split())
    return said if len(said) <= _QUOTE_LIMIT else said[: _QUOTE_LIMIT - 1].rstrip() + "…"


def _offline_reply(me: _Agent, said: str) -> str:
    return (
        f"Hello, this is {me.shown}. You asked: “{_quote(said)}”. I am the offline demo model: I can route "
        "requests and run tools, but a real answer needs a language model."
    )


def _introduce(me: _Agent, *, unsure: bool = False) -> str:
    """Hello, or "I'm not sure I follow", with what the team can do in its own words: an example request
    of each agent reached from here, else what this agent does and who it can put the person through to
    (display names and descriptions), never tool names."""
    opening = "I'm not sure I follow." if unsure else f"Hello, this is {me.shown}."
    listed = [me.examples.get(h["name"], ()) for h in me.handoffs] + [me.examples.get(me.name, ())]
    examples = [e[0] for e in listed if e]
    if examples:
        return f"{opening} You can say, for example: " + "; ".join(f"“{e}”" for e in examples) + "."
    said = [opening]
    skills = [words for t in me.regular if (words := _in_words(t.get("description", "")))]
    if not skills and me.description != me.name:  # an agent without one is described by its name
        skills = [words for words in [_in_words(me.description)] if words]
    if skills:
        said.append("I can help with: " + "; ".join(skills) + ".")
    people = [_person(me, h) for h in me.handoffs]
    if people:
        said.append("I can put you through to " + "; ".join(people) + ".")
    return " ".join(said) + (" What do you need?" if len(said) > 1 else " How can I help?")


def _in_words(description: str) -> str:
    """The first sentence of a description, to be said within a sentence (``Finds books.`` → ``finds
    books``)."""
    first = re.split(r"(?<=[.!?])\s|\n", description.strip(), maxsplit=1)[0].rstrip(".!? ")
    if len(first) > 1 and not first[1].isupper():
        first = first[0].lower() + first[1:]
    return first


def _person(me: _Agent, handoff: ToolSchema) -> str:
    """Whom ``handoff`` reaches, as people know them: ``Billing (invoices and payments)``."""
    target = me.targets.get(handoff["name"])
    if target is None:  # a model given no profile (a test calling it directly)
        return _topic(handoff)
    label, description = target
    words = _in_words(description)
    return f"{label} ({words})" if words and words.lower() != label.lower() else label


def _topic(handoff: ToolSchema) -> str:
    """What a handoff reaches, in words: its name without ``transfer_to_`` and the like."""
    name = handoff["name"]
    for prefix in _HANDOFF_PREFIXES:
        name = name.removeprefix(prefix)
    return args.humanize(name)


def _request(parts: list[str], me: _Agent) -> _Request:
    """The request in ``parts``: the last answer alone when it is a request of its own (it matches a tool,
    a handoff or the agent's own area), else the first words, completed by the last answer."""
    if len(parts) == 1:
        return _Request(parts[0])
    last = parts[-1]
    if wants_person(last) or score(words(last) + intent_words(last), me.vocabulary) > 0:
        return _Request(last)
    return _Request(parts[0], answer=last.strip().strip(".!?,;:").strip())


def _chosen_tool(request: _Request, me: _Agent) -> tuple[ToolSchema, str] | None:
    """The tool of the first clause of ``request`` that asks for one, with that clause."""
    for clause in clauses(request.text):
        found = _clause_words(clause, request)
        tool = best(found, me.regular)
        if tool is None or (negated(clause) and not asks_status(clause)):
            continue
        if tool["name"] in me.irreversible and not _asks_for(tool, found, request):
            continue
        return tool, clause
    return None
