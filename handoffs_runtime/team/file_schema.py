"""The team file format (YAML or JSON), as pydantic models: what each key means and which are allowed.

A file is checked against these models first (unknown keys, wrong types, missing names); references
to code (``module:function``) and to other agents are resolved afterwards by :mod:`.files`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelEntry(_Strict):
    """``offline`` (the built-in offline model), or an autogen component configuration of a
    ``ChatCompletionClient`` (any autogen-ext client)::

    provider: autogen_ext.models.openai.OpenAIChatCompletionClient
    config: {model: gpt-4o-mini}
    """

    provider: str
    config: dict[str, Any] = Field(default_factory=dict)
    component_type: str | None = None
    version: int | None = None
    component_version: int | None = None
    description: str | None = None
    label: str | None = None


class ToolEntry(_Strict):
    """A tool with options; a plain ``module:function`` string is a tool without them."""

    ref: str
    """``module:function`` (a function with type hints and a docstring, or an autogen ``Tool``)."""
    call: dict[str, Any] | None = None
    """Keyword arguments to call ``ref`` with, for a function that makes tools (``worker_tools``)."""
    description: str | None = None
    irreversible: bool = False
    """The model must not call it on a guess; the offline model proposes it only on a present request."""
    runs_code: bool = False
    """It runs code it is given (a model's): ``handoffs serve`` has the operator approve each call."""
    requires_approval: bool | Literal["customer", "operator"] = False
    """Ask before each call: ``true`` or ``customer`` asks the customer, ``operator`` the operator.
    On the web every approval is the operator's."""


class HandoffEntry(_Strict):
    """A handoff with options; a plain agent name is a handoff without them."""

    target: str
    tool_name: str | None = None
    tool_description: str | None = None
    input_type: str | None = None
    """``module:Model``: a pydantic model the model fills in when it hands off (a reason, an account)."""
    input_filter: str | None = None
    """``module:function``, or one of ``remove_all_tools``, ``keep_last_messages:N``."""
    nest_history: bool | None = None
    strict_json_schema: bool = True
    returns: bool | None = None
    """When the target's part is done, the conversation comes back to this agent by rule; left out: only
    for a remote (``a2a``) target."""


class A2AEntry(_Strict):
    """A remote A2A agent: its address (``a2a: URL`` is short for ``a2a: {url: URL}``), the environment
    variable that holds its bearer token (never the token itself), and how long one call may take."""

    url: str = Field(pattern=r"^https?://")
    token_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    timeout: float = Field(default=60.0, gt=0)


class McpEntry(_Strict):
    """An MCP server whose tools the agent takes: ``command`` (stdio) or ``url`` (streamable HTTP).

    Credentials only by reference to the environment, never written out: ``env: {TOKEN: ${MY_TOKEN}}``,
    ``headers: {Authorization: Bearer ${MY_KEY}}``, or ``headers_from_env: {X-Api-Key: MY_KEY}``.
    """

    server: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_\-]*$")
    """A name for the server, which its failures are reported by."""
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    """The command's folder, relative to the team file's; the team file's folder when left out."""
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    headers_from_env: dict[str, str] = Field(default_factory=dict)
    """Header name to the environment variable that holds its value."""
    allow: list[str] | None = None
    """Only these of the server's tools; all of them when left out."""
    deny: list[str] = Field(default_factory=list)
    prefix: str = ""
    """Put before each tool's name, to tell two servers' tools apart."""
    unannotated: Literal["confirm", "run"] = "confirm"
    """A tool with no annotations: ``confirm`` treats it as destructive (the default), ``run`` does not."""
    call_timeout: float | None = Field(default=None, gt=0)
    max_restarts: int | None = Field(default=None, ge=0)


class AgentEntry(_Strict):
    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_\-]*$")
    """The agent's type and topic type: letters, digits, ``_`` and ``-``, starting with a letter."""
    display_name: str = ""
    """What people read ("Maya from Billing"); the name when empty."""
    description: str = ""
    system_message: str = ""
    kind: Literal["ai", "human", "worker"] = "ai"
    tools: list[ToolEntry] = Field(default_factory=list)
    """``module:function`` strings, or entries with options."""
    handoffs: list[HandoffEntry] = Field(default_factory=list)
    """Agent names, or entries with options."""
    agent_tools: list[str] = Field(default_factory=list)
    mcp: list[McpEntry] = Field(default_factory=list)
    """MCP servers whose tools this agent takes (see :class:`McpEntry`)."""
    model: ModelEntry | None = None
    examples: list[str] = Field(default_factory=list)
    """Requests this agent is for, in a customer's words (the offline model routes by them)."""
    max_tokens: int | None = Field(default=None, ge=1)
    """The most tokens one of its model calls may write; the team's ``policy.max_tokens`` when left out."""
    a2a: A2AEntry | None = None
    """A remote A2A agent answers for this one (its card is read at start); see ``protocols/a2a``."""

    @field_validator("a2a", mode="before")
    @classmethod
    def _a2a_url(cls, value: object) -> object:
        return {"url": value} if isinstance(value, str) else value


class EndpointEntry(_Strict):
    """What the endpoint of the team's OpenAI-compatible models can do (``models/capabilities.py``),
    said up front so that nothing is learnt from a refused or wasted call."""

    streams_tool_calls: bool | None = None
    tool_call_content: Literal["auto", "null", "empty"] | None = None
    usage_in_streams: bool | None = None


class PolicyEntry(_Strict):
    """``TeamPolicy`` options (see its docstring); those left out keep their defaults."""

    handoff_budget: int | None = Field(default=None, ge=1)
    on_loop: Literal["message", "escalate"] | None = None
    max_tool_rounds: int | None = Field(default=None, ge=1)
    nest_handoff_history: bool | None = None
    concurrent_tool_calls: bool | None = None
    stream: bool | None = None
    model_timeout: float | None = Field(default=None, gt=0)
    turn_deadline: float | None = Field(default=None, gt=0)
    """Seconds a turn may spend on model calls and tools, across handoffs (twice ``model_timeout``
    when left out)."""
    max_reply_chars: int | None = Field(default=None, ge=100)
    token_budget: int | None = Field(default=None, ge=1)
    trim_context: bool | None = None
    operator_wait: float | None = Field(default=None, gt=0)
    approval_max_age: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, ge=1)
    stalled_rounds: int | None = Field(default=None, ge=1)
    endpoint: EndpointEntry | None = None


class TeamFile(_Strict):
    name: str
    title: str = ""
    """The team's name as people read it: the console banner, the web page's title and header."""
    greeting: str = ""
    """The first line a person reads, before they type anything."""
    suggestions: list[str] = Field(default_factory=list)
    """First questions offered on the web page."""
    entry: str | None = None
    """The agent the person meets first; the first agent when left out."""
    policy: PolicyEntry = Field(default_factory=PolicyEntry)
    model: ModelEntry | None = None
    """The team's model, for agents without one of their own, unless ``--model`` is given."""
    agents: list[AgentEntry] = Field(min_length=1)
