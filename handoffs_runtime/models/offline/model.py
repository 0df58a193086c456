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
from typing import Any

from autogen_core import FunctionCall
from autogen_core.models import LLMMessage
from autogen_core.tools import ToolSchema

from handoffs_runtime.confirmation import proposal
from handoffs_runtime.models.local import LocalModel, Reply, current_model_call, tool_call
from handoffs_runtime.models.offline import arguments as args
from handoffs_runtime.models.offline.conversation import (
    NO,
    YES,
    Conversation,
    Part,
    Request,
    cleaned,
    is_answer,
    is_correction,
    read,
)
from handoffs_runtime.models.offline.conversation import request as request_in
from handoffs_runtime.models.offline.intents import (
    FOREIGN_REPLY,
    asks_status,
    blocks_action,
    foreign,
    intent_words,
    wants_person,
)
from handoffs_runtime.models.offline.routing import Examples, best, concepts, fit, tool_terms
from handoffs_runtime.models.offline.words import (
    ACTIONS,
    CONCEPTS,
    Word,
    clauses,
    literal,
    negated,
    score,
    terms,
    words,
)
from handoffs_runtime.models.profile import AgentProfile

_WAY_BACK = frozenset({"back", "outside", "other", "purview", "else"})
_QUOTE_LIMIT = 120
_HANDOFF_PREFIXES = ("transfer_back_to_", "transfer_to_", "escalate_to_", "back_to_", "ask_")


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


def _clause_words(clause: str, request: Request) -> list[Word]:
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
        talk = read(messages, {t["name"] for t in regular})

        if talk.results:  # carrying out a confirmed plan
            return self._continue(talk, me)
        confirmed = talk.proposed and is_answer(talk.latest, YES)
        if confirmed and self._plan(_request(talk.parts, me), me):
            return self._continue(talk, me)
        if talk.proposed and is_answer(talk.latest, NO) and not is_correction(talk.latest):
            return _DECLINED

        explicit = args.explicit(talk.latest, regular, best)
        if explicit is not None:
            tool, payload = explicit
            if tool["name"] in me.irreversible:  # spelled out, but it cannot be undone: ask first
                return _proposal(
                    tool, payload, list(args.explicit_arguments(tool, payload, talk.latest).items())
                )
            return [tool_call(tool["name"], args.explicit_arguments(tool, payload, talk.latest))]
        if not words(talk.latest) or cleaned(talk.latest) in YES | NO:  # nothing asked, nothing to do
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
        self, clause: str, request: Request, me: _Agent, fresh: list[ToolSchema], *, said: str
    ) -> Reply | None:
        """What one clause of the request asks for, or ``None`` when it matches nothing here."""
        found = _clause_words(clause, request)
        if not found:
            return None
        tool = best(found, me.regular)
        refused = tool is not None and _refuses(clause, tool)  # "hasn't arrived" asks, "don't" refuses
        if tool is not None and refused and {w.norm for w in found if w.raw} & tool_terms(tool):
            return _DECLINED  # "don't refund my anvil"
        if tool is not None and not refused:
            irreversible = tool["name"] in me.irreversible
            if irreversible and not _asks_for(tool, found, request):
                return _offline_reply(me, said)  # a report or a question about it: never an action
            read = _reading(tool, clause, request, me)
            if read.lacking is not None:
                return f"To {args.humanize(tool['name'])} I need the {read.lacking}. Which {read.lacking}?"
            return _proposal(tool, read.quoted(), read.named(tool))
        handoff = best(found, fresh, me.examples)
        own = score(found, me.own_area)
        if own > 0 and (handoff is None or own >= fit(found, handoff, me.examples)):
            return _offline_reply(me, said)  # its own area, unless a handoff fits it better
        if handoff is not None:
            return [_hand_over(handoff, clause, request.whole)]
        return _DECLINED if tool is not None else None

    def _plan(self, request: Request, me: _Agent) -> list[ToolSchema]:
        explicit = args.explicit(request.text, me.regular, best)
        if explicit is not None:
            return [explicit[0]]
        chosen = _chosen_tool(request, me)
        if chosen is None:
            return []
        target, _ = chosen
        plan = [args.provider(param, target, me.regular) for param in args.required_strings(target)]
        return [t for t in plan if t is not None] + [target]

    def _continue(self, talk: Conversation, me: _Agent) -> Reply:
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
                target = chosen[0] if chosen else tool
                read = _reading(target, clause, request, me)
                about = read.about or request.answer
                arguments = args.arguments(tool, clause, found, request=request.whole, about=about)
                if tool is target:
                    arguments.update(read.values)
                return [tool_call(tool["name"], arguments)]
            if result.is_error:
                return f"Sorry, {args.humanize(tool['name'])} did not work: {_for_person(result.content)}"
        steps = [f"{args.humanize(t['name'])} → {_for_person(talk.results[t['name']].content)}" for t in plan]
        done = "; ".join(steps)
        return f"Done: {done}" + ("" if done.endswith((".", "!", "?")) else ".") if steps else "Done."


_DECLINED = "All right, I won't. Is there anything else I can help with?"


_TO_THE_MODEL = re.compile(r"\s*(?:Do not call|Tell (?:the person|them))[^.]*\.")


def _for_person(result: str) -> str:
    """A tool result as the person may read it: without the sentences the runtime wrote for the model
    (``Tell the person ...``, ``Do not call it again ...``), which a language model obeys and does not
    repeat."""
    return _TO_THE_MODEL.sub("", result).strip() or result


def _hand_over(handoff: ToolSchema, clause: str, request: str) -> FunctionCall:
    """The call of ``handoff``, its input (a ``reason``...) read off the words like any tool's."""
    return tool_call(handoff["name"], args.arguments(handoff, clause, {}, request=request))


def _way_back(handoffs: list[ToolSchema], talk: Conversation) -> ToolSchema | None:
    """The handoff marked as the way back (``back``, ``other``...), unless this agent was just handed the
    conversation (it must not bounce it straight back)."""
    if talk.handed_over:
        return None
    return next((h for h in handoffs if tool_terms(h) & _WAY_BACK), None)


def _asks_for(tool: ToolSchema, found: list[Word], request: Request) -> bool:
    """Whether the words ask for ``tool``'s action now, not report or ask about what happened or what
    it costs (``where is my refund?``, ``I was charged twice``, ``how much is it?``); a concept counts
    only as an action (``buy``) or as the very word (``cancel`` for ``cancel_booking``, not ``complain``)."""
    named = {w.norm for w in found if w.norm in ACTIONS or w.norm not in CONCEPTS}
    named |= {literal(w) for w in found if w.norm in CONCEPTS and w.raw}  # "cancel", not any problem
    return bool(named & tool_terms(tool)) and not blocks_action(request.text)


def _refuses(clause: str, tool: ToolSchema) -> bool:
    """Whether ``clause`` refuses ``tool``'s action (``don't refund it``), not asks about a status, nor
    names the action itself (``cancel my booking`` asks for ``cancel_booking``)."""
    own = tool["name"].split("_")
    kept = " ".join(w for w in clause.split() if w.lower().strip(".,!?") not in own)
    return negated(kept) and not asks_status(clause)


def _reading(tool: ToolSchema, clause: str, request: Request, me: _Agent) -> args.Reading:
    irreversible = tool["name"] in me.irreversible
    rest = request.text.replace(clause, " " * len(clause), 1)  # the other clauses: a code said after
    return args.reading(
        tool, clause, request.answers, request.corrections, me.regular, irreversible=irreversible, rest=rest
    )


def _proposal(tool: ToolSchema, about: str, shown: Sequence[tuple[str, Any]] = ()) -> str:
    """The customer's confirmation, worded where every confirmation is (``confirmation.proposal``)."""
    return proposal(tool["name"], shown, about=about)


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


def _request(parts: list[Part], me: _Agent) -> Request:
    """The request in ``parts``, restarted by an answer that is a request of its own (it matches a tool,
    a handoff or the agent's own area)."""

    def own(text: str) -> bool:
        return wants_person(text) or score(words(text) + intent_words(text), me.vocabulary) > 0

    return request_in(parts, own)


def _chosen_tool(request: Request, me: _Agent) -> tuple[ToolSchema, str] | None:
    """The tool of the first clause of ``request`` that asks for one, with that clause."""
    for clause in clauses(request.text):
        found = _clause_words(clause, request)
        tool = best(found, me.regular)
        if tool is None or _refuses(clause, tool):
            continue
        if tool["name"] in me.irreversible and not _asks_for(tool, found, request):
            continue
        return tool, clause
    return None
