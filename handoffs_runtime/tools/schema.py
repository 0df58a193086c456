"""Tools known by their JSON schema alone: another process's tools (an MCP server's), or a test's.

autogen's ``Tool`` protocol asks for a pydantic argument type; such a tool has only the schema its owner
published, so its argument type accepts anything and the schema is the whole truth of its arguments
(the agent checks a proposal against it before a person is asked). A subclass says how the tool runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from autogen_core import CancellationToken
from autogen_core.tools import ParametersSchema, ToolSchema
from pydantic import BaseModel, ConfigDict, create_model


class SchemaTool:
    """A tool with a name, a description and a JSON schema for its arguments; :meth:`run_json` runs it."""

    def __init__(self, name: str, description: str, parameters: Mapping[str, Any]) -> None:
        self._name = name
        self._description = description
        schema = dict(parameters)
        schema.setdefault("properties", {})
        self._parameters = cast(ParametersSchema, schema)
        self._args = create_model(f"{name}_arguments", __config__=ConfigDict(extra="allow"))

    @property
    def name(self) -> str:
        return self._name

    @property
    def description(self) -> str:
        return self._description

    @property
    def schema(self) -> ToolSchema:
        return ToolSchema(name=self._name, description=self._description, parameters=self._parameters)

    def args_type(self) -> type[BaseModel]:
        return self._args

    def return_type(self) -> type[Any]:
        return str

    def state_type(self) -> type[BaseModel] | None:
        return None

    def return_value_as_string(self, value: Any) -> str:
        return str(value)

    async def run_json(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken, call_id: str | None = None
    ) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not say how {self._name} runs")

    async def save_state_json(self) -> Mapping[str, Any]:
        return {}

    async def load_state_json(self, state: Mapping[str, Any]) -> None:
        return None
