"""What a tool may optionally be, as Protocols: code asks ``isinstance``, not ``getattr`` by name.

- :class:`DelegatesTasks`: it sends tasks to a worker type of the team (``create_worker``, an agent
  offered as a tool); the team checks when it is built that the worker type exists.
- :class:`WrapsTool`: it wraps another tool (``requires_approval``), whose marks still count.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from autogen_core.tools import Tool


@runtime_checkable
class DelegatesTasks(Protocol):
    """A tool that sends tasks to the worker type ``delegates_to`` (``None``: it does not after all)."""

    @property
    def delegates_to(self) -> str | None: ...


@runtime_checkable
class WrapsTool(Protocol):
    """A tool that wraps ``inner`` and runs it (after asking, tracing, ...)."""

    @property
    def inner(self) -> Tool: ...


def delegate_of(tool: object) -> str | None:
    """The worker type ``tool`` sends tasks to, if any."""
    return tool.delegates_to if isinstance(tool, DelegatesTasks) else None


def layers(tool: object) -> Iterator[object]:
    """``tool``, then the tool it wraps, and so on: a mark or a wrapper anywhere in it still counts."""
    while True:
        yield tool
        if not isinstance(tool, WrapsTool):
            return
        tool = tool.inner
