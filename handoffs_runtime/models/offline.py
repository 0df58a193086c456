"""The built-in offline model: deterministic, no network, good enough to demo any team.

It is not a language model. It reads the person's latest words (see ``offline_words``), clause by
clause (``return my shoes and buy new ones`` is two requests; the first one that matches decides), and:

1. carries out explicit requests at once: in ``<instruction>: <text>`` (``run this python: print(6*7)``)
   the person spelled the argument out, so when the instruction matches a tool whose required text
   arguments are all literal (``code``, ``command``...) or descriptive (``task_description``...), it is
   called without asking, the literal ones getting ``<text>`` and the descriptive ones the whole request;
2. acts: when a clause matches a regular tool, it proposes it and, once the person says yes, calls it,
   first calling any tool whose description says it finds a required argument (``look_up_item`` finds the
   ``item_id`` that ``execute_refund`` needs), then reports the results. It never acts on a guess: a
   clause that negates or cancels (``don't``, ``cancel``, ``never arrived``) proposes nothing; an argument
   it cannot read from the words is asked for (``To get weather I need the city. Which city?``) and the
   answer completes the request; a tool marked ``irreversible`` needs a clear object, not ``help``,
   ``my order`` or ``new ones``;
3. stays: a request that fits the agent's own description is answered here, never handed out and back;
4. routes: when a clause matches a handoff tool's name or description, it calls that handoff;
5. otherwise answers with what this agent can do, or takes a handoff that is marked as the way back
   (words like "back", "outside" or "other") when the agent was not just handed the conversation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

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
from handoffs_runtime.models.offline_words import (
    Word,
    clauses,
    negated,
    object_words,
    score,
    stem,
    terms,
    words,
)

ASK_CONFIRMATION = "Shall I go ahead? (yes/no)"
_WAY_BACK = frozenset({"back", "outside", "other", "purview", "else"})
_LITERAL_PARAMS = frozenset({"code", "script", "source", "command", "expression", "program", "snippet"})
_SPELLED_OUT_PARAMS = frozenset({"task", "description", "request", "instruction", "prompt"})
"""Arguments that the whole request fills, also in an explicit ``<instruction>: <text>``."""
_DESCRIPTIVE_PARAMS = _SPELLED_OUT_PARAMS | {"query", "reason", "details", "summary"}
_REFERENCES = frozenset({"id", "key", "ref"})
_YES = frozenset(
    {"y", "yes", "yeah", "yep", "sure", "ok", "okay", "confirm", "go ahead", "please do", "do it"}
)
_NO = frozenset({"n", "no", "nope", "cancel", "don't", "do not", "stop"})


def _tool_terms(tool: ToolSchema) -> set[str]:
    return terms(tool["name"].replace("_", " ") + " " + tool.get("description", ""))


def _is_answer(text: str, answers: frozenset[str]) -> bool:
    cleaned = re.sub(r"[^a-z' ]", "", text.lower()).strip()
    return cleaned in answers or (cleaned.split(" ")[0] in answers and len(cleaned.split()) <= 3)


def _humanize(name: str) -> str:
    return name.replace("_", " ")


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


@dataclass
class _Agent:
    """The calling agent as the offline model sees it."""

    name: str
    regular: list[ToolSchema]
    handoffs: list[ToolSchema]
    own_area: set[str]
    irreversible: frozenset[str]

    @property
    def vocabulary(self) -> set[str]:
        """Every word this agent acts on: its tools', its handoffs' and its own area's."""
        return self.own_area.union(*(_tool_terms(t) for t in [*self.regular, *self.handoffs]))


class OfflineModel(LocalModel):
    """The deterministic stand-in for a language model used when no model is configured."""

    label = "offline"

    def respond(self, messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        call = current_model_call()
        handoff_names = (
            call.handoff_tools
            if call
            else frozenset(t["name"] for t in tools if t["name"].startswith(("transfer_", "escalate_")))
        )
        regular = [t for t in tools if t["name"] not in handoff_names]
        me = _Agent(
            name=call.agent if call else "assistant",
            regular=regular,
            handoffs=[t for t in tools if t["name"] in handoff_names],
            own_area=terms(call.description) if call else set(),
            irreversible=call.irreversible_tools if call else frozenset(),
        )
        talk = _read(messages, {t["name"] for t in regular})

        if talk.results:  # carrying out a confirmed plan
            return self._continue(talk, me)
        confirmed = talk.proposed and _is_answer(talk.latest, _YES)
        if confirmed and self._plan(_request(talk.parts, me), regular):
            return self._continue(talk, me)
        if talk.proposed and _is_answer(talk.latest, _NO):
            return _DECLINED

        explicit = _explicit(talk.latest, regular)
        if explicit is not None:
            tool, payload = explicit
            if tool["name"] in me.irreversible:  # spelled out, but it cannot be undone: ask first
                return _proposal(tool, payload)
            return [tool_call(tool["name"], _explicit_arguments(tool, payload, talk.latest))]
        if not words(talk.latest):
            return self._introduce(me.name, regular, me.handoffs)
        fresh = [h for h in me.handoffs if h["name"] not in talk.called]  # never repeat this turn's handoffs
        for clause in clauses(_request(talk.parts, me)):
            decision = self._decide(clause, me, fresh)
            if decision is not None:
                return decision
        if not talk.handed_over:
            back = next((h for h in fresh if _tool_terms(h) & _WAY_BACK), None)
            if back is not None:
                return [self._call(back, talk.latest, {})]
            return self._introduce(me.name, regular, me.handoffs, unsure=True)
        return _offline_reply(me.name, talk.latest)

    # --- steps ---------------------------------------------------------------------------------------

    def _decide(self, clause: str, me: _Agent, fresh: list[ToolSchema]) -> Reply | None:
        """What one clause of the request asks for, or ``None`` when it matches nothing here."""
        found = words(clause)
        if not found:
            return None
        tool = _best(found, me.regular)
        if tool is not None and not negated(clause):
            missing = _missing(tool, clause, me.regular, irreversible=tool["name"] in me.irreversible)
            if missing is not None:
                return f"To {_humanize(tool['name'])} I need the {missing}. Which {missing}?"
            return self._propose(tool, clause)
        if score(found, me.own_area) > 0:
            return _offline_reply(me.name, clause)
        handoff = _best(found, fresh)
        if handoff is not None:
            return [self._call(handoff, clause, {})]
        return _DECLINED if tool is not None else None

    def _plan(self, request: str, regular: list[ToolSchema]) -> list[ToolSchema]:
        explicit = _explicit(request, regular)
        if explicit is not None:
            return [explicit[0]]
        chosen = _chosen_tool(request, regular)
        if chosen is None:
            return []
        target, _ = chosen
        plan = [_provider(param, target, regular) for param in _required_strings(target)]
        return [t for t in plan if t is not None] + [target]

    def _continue(self, talk: _Conversation, me: _Agent) -> Reply:
        regular = me.regular
        request = _request(talk.parts, me)
        plan = self._plan(request, regular)
        chosen = _chosen_tool(request, regular)
        clause = chosen[1] if chosen else request
        explicit = _explicit(request, regular)
        for tool in plan:
            result = talk.results.get(tool["name"])
            if result is None and explicit is not None and tool is explicit[0]:
                return [tool_call(tool["name"], _explicit_arguments(tool, explicit[1], request))]
            if result is None:
                found = {name: r.content for name, r in talk.results.items()}
                return [self._call(tool, clause, found, request=request)]
            if result.is_error:
                return f"Sorry, {_humanize(tool['name'])} did not work: {result.content}"
        steps = [f"{_humanize(t['name'])} → {talk.results[t['name']].content}" for t in plan]
        done = "; ".join(steps)
        return f"Done: {done}" + ("" if done.endswith((".", "!", "?")) else ".") if steps else "Done."

    def _propose(self, tool: ToolSchema, clause: str) -> str:
        return _proposal(tool, _subject(clause, tool))

    def _introduce(
        self, agent: str, regular: list[ToolSchema], handoffs: list[ToolSchema], *, unsure: bool = False
    ) -> str:
        opening = "I'm not sure I follow." if unsure else f"Hello, this is {agent}."
        skills = [_humanize(t["name"]) for t in [*regular, *handoffs]]
        if not skills:
            return f"{opening} How can I help?"
        return f"{opening} I can help with: " + "; ".join(skills) + ". What do you need?"

    def _call(
        self, tool: ToolSchema, clause: str, found: dict[str, str], *, request: str | None = None
    ) -> FunctionCall:
        return tool_call(tool["name"], _arguments(tool, clause, found, request=request or clause))


_DECLINED = "All right, I won't. Is there anything else I can help with?"


def _proposal(tool: ToolSchema, subject: str) -> str:
    about = f" for “{subject}”" if subject else ""
    return f"I can {_humanize(tool['name'])}{about}. {ASK_CONFIRMATION}"


def _offline_reply(agent: str, asked: str) -> str:
    return (
        f"Hello, this is {agent}. You asked: “{asked}”. I am the offline demo model: I can route "
        "requests and run tools, but a real answer needs a language model (see --model)."
    )


def _request(parts: list[str], me: _Agent) -> str:
    """The request in ``parts``: the last answer alone when it is a request of its own (it matches a tool,
    a handoff or the agent's own area), else all of them."""
    if len(parts) > 1 and score(words(parts[-1]), me.vocabulary) > 0:
        return parts[-1]
    return " ".join(parts)


def _chosen_tool(request: str, regular: list[ToolSchema]) -> tuple[ToolSchema, str] | None:
    """The tool of the first clause of ``request`` that asks for one, with that clause."""
    for clause in clauses(request):
        tool = _best(words(clause), regular)
        if tool is not None and not negated(clause):
            return tool, clause
    return None


def _best(found: list[Word], tools: Iterable[ToolSchema]) -> ToolSchema | None:
    scored = [(score(found, _tool_terms(t)), i, t) for i, t in enumerate(tools)]
    scored = [s for s in scored if s[0] > 0]
    return max(scored, key=lambda s: (s[0], -s[1]))[2] if scored else None


def _missing(tool: ToolSchema, clause: str, regular: list[ToolSchema], *, irreversible: bool) -> str | None:
    """What the person must still name before ``tool`` can be proposed: a required argument the words do
    not give, or, for an irreversible tool, the object itself."""
    subject = _subject(clause, tool)
    for param in _required_strings(tool):
        provided = _provider(param, tool, regular) is not None
        if provided or _is_descriptive(param):
            if irreversible and not subject:
                return _humanize(param.removesuffix("_id")) if provided else _humanize(param)
            continue
        if not subject:
            return _humanize(param)
    if irreversible and not subject:
        return "item"
    return None


def _is_descriptive(param: str) -> bool:
    return bool(set(param.lower().split("_")) & _DESCRIPTIVE_PARAMS)


def _parameters(tool: ToolSchema) -> dict[str, Any]:
    return dict(tool.get("parameters") or {})


def _explicit(request: str, tools: list[ToolSchema]) -> tuple[ToolSchema, str] | None:
    """The tool and the spelled-out text of an ``<instruction>: <text>`` request, if it is one."""
    head, colon, payload = request.partition(":")
    if not colon or not payload.strip():
        return None
    tool = _best(words(head), tools)
    if tool is None:
        return None
    params = _required_strings(tool)
    known = _LITERAL_PARAMS | _SPELLED_OUT_PARAMS
    if not params or not all(set(p.lower().split("_")) & known for p in params):
        return None
    return tool, payload.strip()


def _explicit_arguments(tool: ToolSchema, payload: str, request: str) -> dict[str, Any]:
    args = _arguments(tool, request, {})
    for param in _required_strings(tool):
        args[param] = payload if set(param.lower().split("_")) & _LITERAL_PARAMS else request
    return args


def _properties(tool: ToolSchema) -> dict[str, dict[str, Any]]:
    props = _parameters(tool).get("properties") or {}
    return {k: v for k, v in props.items() if isinstance(v, dict)}


def _required_strings(tool: ToolSchema) -> list[str]:
    required = _parameters(tool).get("required") or []
    return [p for p in required if _properties(tool).get(p, {}).get("type") == "string"]


def _provider(param: str, target: ToolSchema, tools: list[ToolSchema]) -> ToolSchema | None:
    """Another tool whose description says it finds ``param`` (e.g. "find item ID" for ``item_id``)."""
    wanted = {stem(p) for p in param.lower().split("_") if p}
    if len(wanted) < 2:
        return None
    for tool in tools:
        if tool is not target and wanted <= _tool_terms(tool) and "find" in _tool_terms(tool):
            return tool
    return None


def _subject(clause: str, tool: ToolSchema) -> str:
    """What ``clause`` asks ``tool`` to act on: its words that are not the tool's own, nor vague."""
    return " ".join(object_words(words(clause), _tool_terms(tool)))


def _arguments(
    tool: ToolSchema, clause: str, found: dict[str, str], *, request: str | None = None
) -> dict[str, Any]:
    """Arguments read off the words: descriptive ones get the whole ``request``, the others the object of
    ``clause`` (or what a provider tool found), numbers the first number of ``clause``."""
    request = request or clause
    props = _properties(tool)
    required = set(_parameters(tool).get("required") or [])
    numbers = re.findall(r"\d+(?:\.\d+)?", clause)
    provider_result = next((v for k, v in found.items() if k != tool["name"]), None)
    args: dict[str, Any] = {}
    for name, spec in props.items():
        kind = spec.get("type")
        if kind == "string":
            if "enum" in spec:
                args[name] = spec["enum"][0]
            elif name in required and provider_result is not None and set(name.split("_")) & _REFERENCES:
                args[name] = provider_result
            elif _is_descriptive(name):
                args[name] = request
            elif name in required:
                args[name] = _subject(clause, tool) or request
        elif kind in ("integer", "number") and name in required:
            value = float(numbers[0]) if numbers else 100
            args[name] = int(value) if kind == "integer" else value
        elif kind == "boolean" and name in required:
            args[name] = True
    return args
