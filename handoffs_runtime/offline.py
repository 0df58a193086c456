"""The built-in offline model: deterministic, no network, good enough to demo any team.

It is not a language model. It reads the person's latest words and:

1. routes: when the words match a handoff tool's name or description, it calls that handoff;
2. acts: when they match a regular tool, it proposes it and, once the person says yes, calls it, first
   calling any tool whose description says it finds a required argument (``look_up_item`` finds the
   ``item_id`` that ``execute_refund`` needs), then reports the results;
3. carries out explicit requests at once: in ``<instruction>: <text>`` (``run this python: print(6*7)``)
   the person spelled the argument out, so when the instruction matches a tool whose required text
   arguments are all literal (``code``, ``command``...) or descriptive (``task_description``...), it is
   called without asking, the literal ones getting ``<text>`` and the descriptive ones the whole request;
4. otherwise answers with what this agent can do, or takes a handoff that is marked as the way back
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

from .local_model import LocalModel, Reply, current_model_call, tool_call

ASK_CONFIRMATION = "Shall I go ahead? (yes/no)"

_STOPWORDS = frozenset(
    """
    a about after all also am an and any anything are as asked at be been being but by call calls can could
    did do does doing don for from get got had has have having hello hey hi how i if in including into is
    it its just let like me might more must my need no not now of off ok okay on only or our please related
    should so some something than thank thanks that the their them then there these they this to too use
    used very wanna want was we were what when where which who why will with would yes you your explicitly
    brings user up always i'd i'm i'll i've let's it's that's
    """.split()  # noqa: SIM905
)
_SYNONYMS = {
    "purchase": "buy",
    "order": "buy",
    "sale": "buy",
    "shop": "buy",
    "shopping": "buy",
    "bought": "buy",
    "return": "refund",
    "reimburse": "refund",
    "money": "refund",
    "person": "human",
    "operator": "human",
    "someone": "human",
    "representative": "human",
    "manager": "human",
    "people": "human",
    "somebody": "human",
    "real": "human",
    "broken": "repair",
    "fix": "repair",
    "damaged": "repair",
    "issue": "repair",
    "problem": "repair",
    "defect": "repair",
    "faulty": "repair",
    "search": "find",
    "look": "find",
    "lookup": "find",
}
_WAY_BACK = frozenset({"back", "outside", "other", "purview", "else"})
_LITERAL_PARAMS = frozenset({"code", "script", "source", "command", "expression", "program", "snippet"})
_DESCRIPTIVE_PARAMS = frozenset({"task", "description", "request", "instruction", "prompt"})
_YES = frozenset(
    {"y", "yes", "yeah", "yep", "sure", "ok", "okay", "confirm", "go ahead", "please do", "do it"}
)
_NO = frozenset({"n", "no", "nope", "cancel", "don't", "do not", "stop"})


def _stem(word: str) -> str:
    for suffix, keep in (("ing", 4), ("ed", 4), ("es", 4), ("s", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= keep - 1 and not word.endswith("ss"):
            word = word[: -len(suffix)]
            break
    return _SYNONYMS.get(word, word)


def _words(text: str) -> list[tuple[str, str]]:
    """(original, normalised) pairs of the content words of ``text``."""
    pairs = []
    for raw in re.findall(r"[A-Za-z][A-Za-z']*|\d+", text):
        low = raw.lower().strip("'")
        if low in _STOPWORDS:
            continue
        norm = _SYNONYMS.get(low) or _stem(low)
        if norm and norm not in _STOPWORDS:
            pairs.append((raw, norm))
    return pairs


def _tool_terms(tool: ToolSchema) -> set[str]:
    text = tool["name"].replace("_", " ") + " " + tool.get("description", "")
    return {norm for _, norm in _words(text)}


def _is_answer(text: str, answers: frozenset[str]) -> bool:
    cleaned = re.sub(r"[^a-z' ]", "", text.lower()).strip()
    return cleaned in answers or (cleaned.split(" ")[0] in answers and len(cleaned.split()) <= 3)


def _humanize(name: str) -> str:
    return name.replace("_", " ")


@dataclass
class _Conversation:
    """What the offline model reads off the message list."""

    request: str  # the person's words the model acts on
    latest: str  # the person's latest words
    proposed: bool  # the agent's last text asked the person to confirm
    results: dict[str, FunctionExecutionResult]  # this turn's results of offered regular tools, by name
    handed_over: bool  # the conversation reached this agent by a handoff during this turn
    called: set[str]  # every tool called since the person last spoke, by any agent


def _read(messages: Sequence[LLMMessage], regular: set[str]) -> _Conversation:
    user_texts: list[tuple[int, str]] = [
        (i, m.content)
        for i, m in enumerate(messages)
        if isinstance(m, UserMessage) and isinstance(m.content, str)
    ]
    last_user = user_texts[-1][0] if user_texts else -1
    latest = user_texts[-1][1] if user_texts else ""
    request = latest
    for _, text in reversed(user_texts[:-1]):
        if _is_answer(latest, _YES) and not _is_answer(text, _YES | _NO):
            request = text
            break
    proposed = any(
        isinstance(m, AssistantMessage)
        and isinstance(m.content, str)
        and m.content.endswith(ASK_CONFIRMATION)
        for m in messages[max(last_user - 1, 0) : last_user]
    )
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
    return _Conversation(request, latest, proposed, results, handed_over, called)


class OfflineModel(LocalModel):
    """The deterministic stand-in for a language model used when no model is configured."""

    label = "offline"

    def respond(self, messages: Sequence[LLMMessage], tools: Sequence[ToolSchema]) -> Reply:
        call = current_model_call()
        agent = call.agent if call else "assistant"
        handoff_names = (
            call.handoff_tools
            if call
            else frozenset(t["name"] for t in tools if t["name"].startswith(("transfer_", "escalate_")))
        )
        handoffs = [t for t in tools if t["name"] in handoff_names]
        regular = [t for t in tools if t["name"] not in handoff_names]
        talk = _read(messages, {t["name"] for t in regular})

        if talk.results:  # carrying out a confirmed plan
            return self._continue(talk, regular)
        if talk.proposed and _is_answer(talk.latest, _YES):
            plan = self._plan(talk.request, regular)
            if plan:
                return self._continue(talk, regular)
        if talk.proposed and _is_answer(talk.latest, _NO):
            return "All right, I won't. Is there anything else I can help with?"

        explicit = _explicit(talk.latest, regular)
        if explicit is not None:
            return [tool_call(explicit[0]["name"], _explicit_arguments(*explicit, talk.latest))]
        words = _words(talk.latest)
        if not words:
            return self._introduce(agent, regular, handoffs)
        best_tool = _best(words, regular)
        if best_tool is not None:
            return self._propose(best_tool, talk.latest, regular)
        fresh = [h for h in handoffs if h["name"] not in talk.called]  # never repeat this turn's handoffs
        best_handoff = _best(words, fresh)
        if best_handoff is not None:
            return [self._call(best_handoff, talk.latest, {})]
        if not talk.handed_over:
            back = next((h for h in fresh if _tool_terms(h) & _WAY_BACK), None)
            if back is not None:
                return [self._call(back, talk.latest, {})]
            return self._introduce(agent, regular, handoffs, unsure=True)
        return (
            f"Hello, this is {agent}. You asked: “{talk.latest}”. I am the offline demo model: I can route "
            "requests and run tools, but a real answer needs a language model (see --model)."
        )

    # --- steps ---------------------------------------------------------------------------------------

    def _plan(self, request: str, regular: list[ToolSchema]) -> list[ToolSchema]:
        explicit = _explicit(request, regular)
        if explicit is not None:
            return [explicit[0]]
        target = _best(_words(request), regular)
        if target is None:
            return []
        plan = [_provider(param, target, regular) for param in _required_strings(target)]
        return [t for t in plan if t is not None] + [target]

    def _continue(self, talk: _Conversation, regular: list[ToolSchema]) -> Reply:
        plan = self._plan(talk.request, regular)
        for tool in plan:
            result = talk.results.get(tool["name"])
            if result is None:
                found = {name: r.content for name, r in talk.results.items()}
                return [self._call(tool, talk.request, found)]
            if result.is_error:
                return f"Sorry, {_humanize(tool['name'])} did not work: {result.content}"
        steps = [f"{_humanize(t['name'])} → {talk.results[t['name']].content}" for t in plan]
        done = "; ".join(steps)
        return f"Done: {done}" + ("" if done.endswith((".", "!", "?")) else ".") if steps else "Done."

    def _propose(self, tool: ToolSchema, request: str, regular: list[ToolSchema]) -> str:
        subject = _subject(request, tool)
        about = f" for “{subject}”" if subject else ""
        return f"I can {_humanize(tool['name'])}{about}. {ASK_CONFIRMATION}"

    def _introduce(
        self, agent: str, regular: list[ToolSchema], handoffs: list[ToolSchema], *, unsure: bool = False
    ) -> str:
        opening = "I'm not sure I follow." if unsure else f"Hello, this is {agent}."
        skills = [_humanize(t["name"]) for t in [*regular, *handoffs]]
        if not skills:
            return f"{opening} How can I help?"
        return f"{opening} I can help with: " + "; ".join(skills) + ". What do you need?"

    def _call(self, tool: ToolSchema, request: str, found: dict[str, str]) -> FunctionCall:
        return tool_call(tool["name"], _arguments(tool, request, found))


def _best(words: list[tuple[str, str]], tools: Iterable[ToolSchema]) -> ToolSchema | None:
    norms = {n for _, n in words}
    scored = [(len(norms & _tool_terms(t)), i, t) for i, t in enumerate(tools)]
    scored = [s for s in scored if s[0] > 0]
    return max(scored, key=lambda s: (s[0], -s[1]))[2] if scored else None


def _parameters(tool: ToolSchema) -> dict[str, Any]:
    return dict(tool.get("parameters") or {})


def _explicit(request: str, tools: list[ToolSchema]) -> tuple[ToolSchema, str] | None:
    """The tool and the spelled-out text of an ``<instruction>: <text>`` request, if it is one."""
    head, colon, payload = request.partition(":")
    if not colon or not payload.strip():
        return None
    tool = _best(_words(head), tools)
    if tool is None:
        return None
    params = _required_strings(tool)
    known = _LITERAL_PARAMS | _DESCRIPTIVE_PARAMS
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
    wanted = {_stem(p) for p in param.lower().split("_") if p}
    if len(wanted) < 2:
        return None
    for tool in tools:
        if tool is not target and wanted <= _tool_terms(tool) and "find" in _tool_terms(tool):
            return tool
    return None


def _subject(request: str, tool: ToolSchema) -> str:
    terms = _tool_terms(tool)
    return " ".join(raw for raw, norm in _words(request) if norm not in terms)


def _arguments(tool: ToolSchema, request: str, found: dict[str, str]) -> dict[str, Any]:
    props = _properties(tool)
    required = set(_parameters(tool).get("required") or [])
    numbers = re.findall(r"\d+(?:\.\d+)?", request)
    args: dict[str, Any] = {}
    for name, spec in props.items():
        kind = spec.get("type")
        provider_result = next((v for k, v in found.items() if k != tool["name"]), None)
        if kind == "string":
            if "enum" in spec:
                args[name] = spec["enum"][0]
            elif (
                name in required
                and provider_result is not None
                and set(name.split("_")) & {"id", "key", "ref"}
            ):
                args[name] = provider_result
            elif name in required or name in ("reason", "query", "details", "summary"):
                args[name] = (
                    _subject(request, tool) if name not in ("reason", "search_query") else request
                ) or request
        elif kind in ("integer", "number") and name in required:
            value = float(numbers[0]) if numbers else 100
            args[name] = int(value) if kind == "integer" else value
        elif kind == "boolean" and name in required:
            args[name] = True
    return args
