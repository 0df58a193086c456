"""The worker's end of the host's stream: opened, written and closed without leaving a task behind.

autogen-ext's ``HostConnection`` hands gRPC an iterator over its send queue, and gRPC reads it with a
task of its own. When a connection attempt fails, or the host goes away, that task waits on the queue
forever; it is destroyed later, whenever the garbage collector comes by, and asyncio reports "Task was
destroyed but it is pending!" to the event loop's exception handler. On a terminal that handler belongs
to the line editor, which stops the chat to show it. Here the stream is written by a task this class
owns and cancels, so a failed attempt and a lost host leave nothing pending.

It also turns a reply over the size limit into an error reply (gRPC would otherwise break the stream, and
the caller would never hear back).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc  # type: ignore[import-untyped]
from autogen_ext.runtimes.grpc._worker_runtime import HostConnection
from autogen_ext.runtimes.grpc.protos import agent_worker_pb2

from handoffs_runtime.distributed.options import logger

RAISE_LIMIT = "raise --max-message-mb on the host and every worker and front end"


def mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


class HostStream(HostConnection):
    """One connection to the host: ``open`` it, ``send`` and ``recv`` as autogen's, then ``close`` it.

    ``_connection_task`` (autogen's name, which the runtime watches) ends when the stream does.
    """

    def __init__(self, channel: grpc.aio.Channel, stub: Any, limit: int) -> None:
        super().__init__(channel, stub)
        self._limit = limit
        self._call: Any = None
        self._writer: asyncio.Task[None] | None = None

    async def open(self, timeout: float) -> None:
        """Open the stream, waiting at most ``timeout`` seconds for the host to answer."""
        call = self._call = self.stub.OpenChannel(metadata=self.metadata)
        await asyncio.wait_for(call.wait_for_connection(), timeout)
        self._writer = asyncio.create_task(self._write(call), name="handoffs-write")
        self._connection_task = asyncio.create_task(self._read(call), name="handoffs-read-stream")

    async def _write(self, call: Any) -> None:
        while True:
            message = await self._send_queue.get()
            try:
                await call.write(message)
            except Exception as exc:  # the stream ended: the reader ends too, and the runtime reconnects
                logger.info("the stream to the host ended while writing: %s", type(exc).__name__)
                return

    async def _read(self, call: Any) -> None:
        while True:
            message = await call.read()
            if message is grpc.aio.EOF:
                return
            await self._recv_queue.put(message)

    async def send(self, message: agent_worker_pb2.Message) -> None:
        size = message.ByteSize()
        if message.WhichOneof("message") == "response" and size > self._limit:
            reason = f"the reply is {mib(size)}, over the {mib(self._limit)} limit ({RAISE_LIMIT})"
            logger.error("not sending a reply: %s", reason)
            message = agent_worker_pb2.Message(
                response=agent_worker_pb2.RpcResponse(request_id=message.response.request_id, error=reason)
            )
        await self._send_queue.put(message)

    async def recv(self) -> agent_worker_pb2.Message:
        return await self._recv_queue.get()

    async def close(self) -> None:
        """End the stream and its tasks and close the channel; never raises."""
        if self._writer is not None:
            self._writer.cancel()
        if self._call is not None:
            self._call.cancel()
        with contextlib.suppress(BaseException):
            await self._channel.close()
        for task in (self._writer, self._connection_task):
            if task is not None:
                with contextlib.suppress(BaseException):
                    await task
