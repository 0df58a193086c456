"""Others' private parts, fenced: autogen-ext's gRPC connection to the host, and its event attributes.

A module of its own so that only the gRPC side (``distributed/``) imports gRPC: the rest of the fence
(``handoffs_runtime.private``) is imported by every module, and stays cheap. The worker runtime's own
subclass (``distributed/worker_runtime.py``) extends autogen-ext's internals directly; what the classes
around it need of them is here. It checks, at import, that the private state it names is still there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import grpc  # type: ignore[import-untyped]
from autogen_ext.runtimes.grpc.protos import agent_worker_pb2, cloudevent_pb2

from handoffs_runtime.private import PrivatePartsError, require, stored_attributes, version_mismatch

try:  # the private modules; a rename is reported here, in one place
    from autogen_ext.runtimes.grpc._constants import DATA_SCHEMA_ATTR
    from autogen_ext.runtimes.grpc._worker_runtime import HostConnection
except ImportError as error:  # an autogen-ext this was not written for
    raise PrivatePartsError(f"{error}; {version_mismatch() or 'the versions match'}") from error

__all__ = ["PRIVATE_PARTS", "HostConnectionParts", "message_type_of"]


def message_type_of(event: cloudevent_pb2.CloudEvent) -> str:
    """The name of the message type a cloud event carries, as autogen-ext's runtimes write it (empty when
    it names none)."""
    schema = event.attributes.get(DATA_SCHEMA_ATTR)
    return str(schema.ce_string) if schema is not None else ""


class HostConnectionParts(HostConnection):
    """autogen-ext's connection to the host, its private state named publicly for a subclass that opens
    the stream itself: the channel, the two queues, and the task that reads the stream (the connection
    has ended when it has)."""

    @property
    def channel(self) -> grpc.aio.Channel:
        return self._channel

    @property
    def send_queue(self) -> asyncio.Queue[agent_worker_pb2.Message]:
        """What ``send`` puts messages on, for the stream's writer to take."""
        return self._send_queue

    @send_queue.setter
    def send_queue(self, queue: asyncio.Queue[agent_worker_pb2.Message]) -> None:
        self._send_queue = queue

    @property
    def received(self) -> asyncio.Queue[agent_worker_pb2.Message]:
        """What ``recv`` takes messages from, for the stream's reader to fill."""
        return self._recv_queue

    @property
    def reading(self) -> asyncio.Task[Any] | None:
        """The task that reads the stream (``None`` before it is opened)."""
        return self._connection_task

    @reading.setter
    def reading(self, task: asyncio.Task[Any]) -> None:
        self._connection_task = task


PRIVATE_PARTS: Mapping[str, Callable[[], bool]] = {
    "HostConnection keeps _channel, _send_queue, _recv_queue and _connection_task": lambda: (
        {"_channel", "_send_queue", "_recv_queue", "_connection_task"}
        <= stored_attributes(HostConnection.__init__)
    ),
}
"""What the parts above rely on, each a sentence that must hold (checked at import)."""

require(PRIVATE_PARTS)
