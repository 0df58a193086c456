"""The console, printing a streamed reply in place under the agent's label as the model writes it.

A ``ConsoleChannel`` that also shows progress (``shows_progress``): the first ``Delta`` of a reply
prints the label, each delta is appended to the line, and the ``Reply``
that follows only ends the line when it says what was printed (the reply is stripped, so the stream
is compared stripped, and whitespace before a reply's first word or after its last is not printed: a
reply that starts with a newline would otherwise print its label alone and then the whole reply
again, and one that ends with a newline an empty line). When it says
something else (a stream cut in the middle ends with an apology) the reply is printed whole below the
pieces.

A handoff's line is stored before it is shown, so the next agent's first words can arrive before it.
The console holds back the words of an agent the person has not been told about yet, until the handoff
line that names it (or its whole reply) arrives: the person always reads who is talking before the text.
"""

from __future__ import annotations

from handoffs_runtime.channels.console import ConsoleChannel
from handoffs_runtime.messages import PROGRESS, Delta, Event, HandoffLine, Person, Reply, shown_name
from handoffs_runtime.text import printable


class StreamingConsoleChannel(ConsoleChannel):
    """``ConsoleChannel`` plus deltas printed as they arrive; tool activity is not printed."""

    shows_progress = True

    def __init__(self, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self._streaming: str | None = None
        self._streamed = ""
        self._trailing = ""  # whitespace streamed after the last word, not written yet
        self._speaker: str | None = None  # who last answered, or was handed the conversation
        self._held: dict[str, str] = {}  # words of agents whose handoff line has not been shown yet

    def _delta(self, item: Delta) -> None:
        if self._streaming != item.agent and self._speaker not in (None, item.agent):
            self._held[item.agent] = self._held.get(item.agent, "") + item.text
            return
        self._write_delta(item)

    def _write_delta(self, item: Delta) -> None:
        text = item.text
        if self._streaming != item.agent:
            text = text.lstrip()
            if not text:
                return  # nothing to show yet: the label waits for the first word
            self._end_stream()
            self._stop_spinner()
            who = printable(shown_name(item.label, item.agent), multiline=False)
            self._out.write(f"{self._paint('agent', who)} › ")
            self._streaming, self._streamed, self._trailing = item.agent, "", ""
            self._speaker = item.agent  # the person is hearing from it now
        shown = text.rstrip()
        if shown:  # whitespace is written only once a word follows it
            shown = self._trailing + shown
            self._trailing = ""
            self._out.write(printable(shown))  # a model must not move the cursor or recolour the screen
            self._out.flush()
        self._trailing += text[len(text.rstrip()) :]
        self._streamed += text

    async def show(self, session_id: str, event: Event) -> None:
        if isinstance(event, Delta):
            self._delta(event)
            return
        if isinstance(event, PROGRESS):  # tool activity
            return
        if isinstance(event, HandoffLine) and event.outcome == "handoff":
            self._end_stream()
            await super().show(session_id, event)
            self._speaker = target = event.target
            held = self._held.pop(target, "")
            if held:
                self._write_delta(Delta(agent=target, text=held, label=event.target_label))
            return
        if isinstance(event, Reply):
            self._speaker = event.agent
            self._held.pop(event.agent, None)  # the whole reply follows
        if self._streaming is not None:
            printed = isinstance(event, Reply) and (event.agent, event.text) == (
                self._streaming,
                self._streamed.strip(),
            )
            self._end_stream()
            if printed:
                return
        await super().show(session_id, event)

    async def ask(self, session_id: str, prompt: str, *, person: Person = "customer") -> str | None:
        self._end_stream()
        return await super().ask(session_id, prompt, person=person)

    def _end_stream(self) -> None:
        if self._streaming is not None:
            self._out.write("\n")
            self._out.flush()
            self._streaming, self._streamed, self._trailing = None, "", ""
