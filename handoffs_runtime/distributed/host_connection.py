"""One connection to the host: replies over the size limit become errors, unsent events go out again.

Split from :mod:`handoffs_runtime.distributed.worker_runtime`, which opens, watches and replaces them.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc  # type: ignore[import-untyped]
from autogen_ext.runtimes.grpc.protos import agent_worker_pb2

from handoffs_runtime.distributed.options import TEAM_METADATA, logger
from handoffs_runtime.distributed.outbox import Outbox, SeenEvents
from handoffs_runtime.private.autogen_grpc import HostConnectionParts

RAISE_LIMIT = "raise --max-message-mb on the host and every worker and front end"


def mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


class LimitedConnection(HostConnectionParts):
    """A host connection that turns a reply over the size limit into an error reply (gRPC would otherwise
    break the stream, and the caller would never hear back), and whose tasks all end when it closes
    (autogen's leaves gRPC's sending task waiting forever once the host has ended the stream, to be
    reported as "destroyed but pending" when it is collected)."""

    def __init__(
        self, channel: grpc.aio.Channel, stub: Any, limit: int, seen: SeenEvents, resend_window: float
    ) -> None:
        super().__init__(channel, stub)
        self._limit = limit
        self._seen = seen
        self.send_queue = self.outbox = Outbox(resend_window)
        self._stream: Any = None
        self._writer: asyncio.Task[None] | None = None
        self.host_team = ""
        """The team the host says it serves (empty: it did not say)."""

    async def recv(self) -> agent_worker_pb2.Message:
        """The next message from the host; an event that arrived before (sent again) is dropped."""
        while True:
            message = await super().recv()
            self.outbox.heard(message)
            if self._seen.first_time(message):
                return message
            logger.info("dropped event %s: it arrived before the host restarted", message.cloudEvent.id)

    async def open(self, timeout: float) -> None:
        """Open the stream to the host; a task of ours writes the send queue to it, one reads it."""
        self._stream = stream = self.stub.OpenChannel(metadata=self.metadata)
        await asyncio.wait_for(stream.wait_for_connection(), timeout)
        opening = await asyncio.wait_for(stream.initial_metadata(), timeout)
        self.host_team = next((str(v) for k, v in opening or () if k == TEAM_METADATA), "")
        self._writer = asyncio.create_task(self._write(stream), name="handoffs-send")
        self.reading = asyncio.create_task(self._read(stream), name="handoffs-receive")

    async def _write(self, stream: Any) -> None:
        while True:
            await stream.write(await self.outbox.get())

    async def _read(self, stream: Any) -> None:
        while (message := await stream.read()) != grpc.aio.EOF:
            await self.received.put(message)

    async def close(self) -> None:
        """End the stream (closing the channel does not: it finds calls by gRPC's own tasks), close the
        channel and wait for both tasks; never raises."""
        if self._stream is not None:
            self._stream.cancel()
        with contextlib.suppress(BaseException):
            await self.channel.close()
        if self._writer is not None:
            self._writer.cancel()
        for task in (self._writer, self.reading):
            if task is not None:
                with contextlib.suppress(BaseException):
                    await task

    def unsent(self) -> list[agent_worker_pb2.Message]:
        """Once closed: the published messages it may never have delivered (see ``outbox``)."""
        return self.outbox.close()

    async def send(self, message: agent_worker_pb2.Message) -> None:
        size = message.ByteSize()
        if message.WhichOneof("message") == "response" and size > self._limit:
            reason = f"the reply is {mib(size)}, over the {mib(self._limit)} limit ({RAISE_LIMIT})"
            logger.error("not sending a reply: %s", reason)
            message = agent_worker_pb2.Message(
                response=agent_worker_pb2.RpcResponse(request_id=message.response.request_id, error=reason)
            )
        await super().send(message)
