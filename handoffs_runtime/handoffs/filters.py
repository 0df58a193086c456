"""Input filters: what the next agent sees of the conversation when it is handed over.

A filter maps :class:`HandoffInputData` to :class:`HandoffInputData`. The forwarded context holds no
system message but, at its very start, the note of a conversation trimmed to fit the model's context:
each agent adds its own in front, and OpenAI-compatible servers reject system messages that are not at
the start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from autogen_core import FunctionCall
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)

from handoffs_runtime.handoffs.handoff import HandoffInputData, HistoryMapper, InputFilter


def _without_tools(messages: Sequence[LLMMessage]) -> tuple[LLMMessage, ...]:
    kept: list[LLMMessage] = []
    for m in messages:
        if isinstance(m, FunctionExecutionResultMessage):
            continue
        if isinstance(m, AssistantMessage) and not isinstance(m.content, str):
            if m.thought:  # what the agent said beside its calls stays, as the SDK keeps message items
                kept.append(AssistantMessage(content=m.thought, source=m.source))
            continue
        kept.append(m)
    return tuple(kept)


def remove_all_tools(data: HandoffInputData) -> HandoffInputData:
    """Drop every tool call and tool result, keeping what the person and the agents said (the text an
    agent wrote beside its calls included)."""
    return data.replace(history=_without_tools(data.history), new_items=_without_tools(data.new_items))


def keep_last_messages(n: int) -> InputFilter:
    """Forward only the last ``n`` messages of the conversation.

    The cut never starts on a tool result whose call it would drop, so it may keep fewer than ``n``.
    """
    if n < 0:
        raise ValueError("keep_last_messages(n) needs n >= 0")

    def keep_last(data: HandoffInputData) -> HandoffInputData:
        items = data.all_items[-n:] if n else []
        while items and isinstance(items[0], FunctionExecutionResultMessage):
            items = items[1:]
        return data.replace(history=tuple(items), new_items=())

    keep_last.__name__ = f"keep_last_messages_{n}"
    return keep_last


# --- nested handoff history -------------------------------------------------------------------------

HISTORY_START = "<CONVERSATION HISTORY>"
HISTORY_END = "</CONVERSATION HISTORY>"
NO_HISTORY = "(no previous turns recorded)"


def _render_call(call: FunctionCall) -> str:
    return f"{call.name}({call.arguments or '{}'})"


def render_transcript(messages: Sequence[LLMMessage]) -> str:
    """The default history mapper: one line per message, speakers named."""
    lines: list[str] = []
    for m in messages:
        if isinstance(m, UserMessage):
            lines.append(f"{m.source}: {m.content if isinstance(m.content, str) else '[media]'}")
        elif isinstance(m, AssistantMessage):
            if isinstance(m.content, str):
                lines.append(f"{m.source}: {m.content}")
            else:
                if m.thought:
                    lines.append(f"{m.source}: {m.thought}")
                lines.append(f"{m.source} called " + ", ".join(_render_call(c) for c in m.content))
        elif isinstance(m, FunctionExecutionResultMessage):
            lines.extend(f"result of {r.name}: {r.content}" for r in m.content)
        elif isinstance(m, SystemMessage):
            lines.append(f"system: {m.content}")
    return "\n".join(lines)


def nest_history(
    messages: Sequence[LLMMessage],
    *,
    source: str,
    mapper: HistoryMapper | None = None,
    start: str = HISTORY_START,
    end: str = HISTORY_END,
) -> list[LLMMessage]:
    """Collapse a transcript into one assistant message wrapped in ``start``/``end`` markers.

    The block an earlier handoff nested (the conversation's first message) is unwrapped and merged, so
    history is nested once however many handoffs happen; marked text anywhere else is kept as it is, so
    a model cannot forge history by writing the markers. The person's latest message is repeated after
    the block, so the next agent knows what to answer. An empty transcript gives
    ``(no previous turns recorded)``, as in the OpenAI Agents SDK.
    """
    render = mapper or render_transcript
    parts: list[str] = []
    pending: list[LLMMessage] = []
    latest_user: UserMessage | None = None
    after_block = False
    for index, m in enumerate(messages):
        inner = _nested_text(m, start, end) if index == 0 else None
        if inner is not None:
            if pending:
                parts.append(render(pending))
                pending = []
            parts.append(inner)
            after_block = True
            continue
        if isinstance(m, UserMessage):
            latest_user = m
            if after_block:  # the copy an earlier nesting placed after its block: already inside it
                after_block = False
                continue
        after_block = False
        pending.append(m)
    if pending:
        parts.append(render(pending))
    body = "\n".join(p for p in parts if p) or NO_HISTORY
    nested: list[LLMMessage] = [AssistantMessage(content=f"{start}\n{body}\n{end}", source=source)]
    if latest_user is not None:
        nested.append(UserMessage(content=latest_user.content, source=latest_user.source))
    return nested


def _nested_text(message: LLMMessage, start: str, end: str) -> str | None:
    if isinstance(message, AssistantMessage) and isinstance(message.content, str):
        text = message.content
        if text.startswith(start) and text.endswith(end):
            return text[len(start) : len(text) - len(end)].strip("\n")
    return None


def nesting_filter(
    *, mapper: HistoryMapper | None = None, start: str = HISTORY_START, end: str = HISTORY_END
) -> Callable[[HandoffInputData], HandoffInputData]:
    """An input filter that nests the whole conversation (see :func:`nest_history`)."""

    def nest(data: HandoffInputData) -> HandoffInputData:
        nested = nest_history(data.all_items, source=data.source, mapper=mapper, start=start, end=end)
        return data.replace(history=tuple(nested), new_items=())

    return nest
