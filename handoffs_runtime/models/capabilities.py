"""What an OpenAI-compatible endpoint can do, learnt once per endpoint and kept for the process.

Servers differ from OpenAI in ways a request cannot ask about: llama.cpp's Python server refuses
``"content": null`` beside tool calls, cannot stream a tool call (``200`` and then nothing), and some
servers refuse ``stream_options``. Each is learnt the first time it shows, from the server's own answer,
and every client of that endpoint in the process (one per agent, one per session) reads it from then
on, so the endpoint is never again sent what it refused or asked for what it cannot do.

They can also be set up front, so that nothing is learnt the costly way: in Python with
:func:`set_capabilities`, or in a team file's policy::

    policy:
      endpoint: {streams_tool_calls: false, tool_call_content: empty, usage_in_streams: true}

which applies to the endpoints of the team's OpenAI-compatible models when the team is built.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

ToolCallContent = Literal["auto", "null", "empty"]
"""How an assistant message with tool calls and no text is sent: ``""``, which every server we know
accepts, until a server refuses it, then ``null`` (``auto``); always ``""`` (``empty``); always
``null`` (``null``, as OpenAI's client sends it)."""

TOOL_CALL_CONTENTS: tuple[ToolCallContent, ...] = ("auto", "null", "empty")


@dataclass(slots=True)
class EndpointCapabilities:
    """What one endpoint accepts and can do; shared by every client of the endpoint in the process."""

    tool_call_content: ToolCallContent = "auto"
    usage_in_streams: bool = True
    """Whether streamed requests ask for usage; cleared when the server refuses ``stream_options``."""
    streams_tool_calls: bool = True
    """Whether a streamed call may offer tools; cleared when a streamed tool call came back empty, so
    calls that offer tools are made without streaming from then on (one thrown-away call, not one per
    round)."""

    @property
    def empty_content(self) -> bool:
        return self.tool_call_content in ("auto", "empty")

    def update(self, **settings: object) -> None:
        """Set the named capabilities; an unknown name or a wrong value is refused, naming what is known."""
        known = {f.name for f in fields(self)}
        for name, value in settings.items():
            if name not in known:
                raise ValueError(f"unknown endpoint capability {name!r}; known: {', '.join(sorted(known))}")
            if name == "tool_call_content" and value not in TOOL_CALL_CONTENTS:
                raise ValueError(f"tool_call_content must be 'auto', 'null' or 'empty', got {value!r}")
            if name != "tool_call_content" and not isinstance(value, bool):
                raise ValueError(f"{name} must be true or false, got {value!r}")
            setattr(self, name, value)


_ENDPOINTS: dict[str, EndpointCapabilities] = {}
DEFAULT_ENDPOINT = "https://api.openai.com/v1"


def endpoint_key(base_url: str | None) -> str:
    """The one name of an endpoint, whatever trailing slash or case of host it was given with."""
    url = (base_url or DEFAULT_ENDPOINT).strip().rstrip("/")
    scheme, sep, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme.lower()}{sep}{host.lower()}{slash}{path}" if sep else url


def capabilities_of(base_url: str | None) -> EndpointCapabilities:
    """The capabilities known of the endpoint at ``base_url`` in this process (made on first use)."""
    key = endpoint_key(base_url)
    known = _ENDPOINTS.get(key)
    if known is None:
        known = _ENDPOINTS[key] = EndpointCapabilities()
    return known


def set_capabilities(base_url: str | None, **settings: object) -> EndpointCapabilities:
    """Say up front what the endpoint at ``base_url`` can do (see :class:`EndpointCapabilities`)."""
    known = capabilities_of(base_url)
    known.update(**settings)
    return known


def forget_capabilities() -> None:
    """Forget what was learnt or set of every endpoint (a process that reuses ports, such as a test
    run, starts each server unknown)."""
    _ENDPOINTS.clear()
