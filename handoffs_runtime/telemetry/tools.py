"""``TracedTool``: a ``Tool`` that wraps another and traces every call as ``execute_tool <name>``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from autogen_core import CancellationToken
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from handoffs_runtime.telemetry import conventions as c
from handoffs_runtime.telemetry.propagation import carrier_of
from handoffs_runtime.tools.context import tracing_call

if TYPE_CHECKING:
    from handoffs_runtime.telemetry.core import Telemetry


class TracedTool:
    """Delegates to ``inner``; its name, schema and any other attribute (``delegates_to``) are the same."""

    def __init__(self, inner: Tool, telemetry: Telemetry) -> None:
        self._inner = inner
        self._telemetry = telemetry

    def __getattr__(self, name: str) -> Any:
        if name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def description(self) -> str:
        return self._inner.description

    @property
    def schema(self) -> ToolSchema:
        return self._inner.schema

    def args_type(self) -> type[BaseModel]:
        return self._inner.args_type()

    def return_type(self) -> type[Any]:
        return self._inner.return_type()

    def state_type(self) -> type[BaseModel] | None:
        return self._inner.state_type()

    def return_value_as_string(self, value: Any) -> str:
        return self._inner.return_value_as_string(value)

    async def run_json(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken, call_id: str | None = None
    ) -> Any:
        with (
            self._telemetry.tool_span(self._inner.name, call_id, args) as span,
            tracing_call(carrier_of(span)),  # a worker the tool creates is traced under this call
        ):
            value = await self._inner.run_json(args, cancellation_token, call_id=call_id)
            if self._telemetry.capture_content:
                span.set_attribute(c.TOOL_RESULT, c.as_content(self._inner.return_value_as_string(value)))
            return value

    async def save_state_json(self) -> Mapping[str, Any]:
        return await self._inner.save_state_json()

    async def load_state_json(self, state: Mapping[str, Any]) -> None:
        await self._inner.load_state_json(state)
