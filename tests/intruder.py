"""A hand-written gRPC client for the security tests: what an attacker can send to a host, without the
manners of our runtime (any client-id, any sender, any topic, no channel at all)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc  # type: ignore[import-untyped]
from autogen_core import JSON_DATA_CONTENT_TYPE, AgentId, TopicId, TypeSubscription
from autogen_ext.runtimes.grpc import _constants as wire
from autogen_ext.runtimes.grpc._utils import subscription_to_proto
from autogen_ext.runtimes.grpc._worker_runtime import QueueAsyncIterable
from autogen_ext.runtimes.grpc.protos import agent_worker_pb2, agent_worker_pb2_grpc, cloudevent_pb2
from pydantic import BaseModel

from handoffs_runtime.distributed.credentials import ClientCredentials
from handoffs_runtime.distributed.serializers import protocol_serializers

from .distributed_support import TIMEOUT

_SERIALIZERS = protocol_serializers()


def _text(value: str) -> cloudevent_pb2.CloudEvent.CloudEventAttributeValue:
    return cloudevent_pb2.CloudEvent.CloudEventAttributeValue(ce_string=value)


class Intruder:
    """One connection to a host, with or without credentials, claiming whatever ``client_id`` it likes."""

    def __init__(
        self, address: str, credentials: ClientCredentials | None = None, *, client_id: str = "intruder"
    ) -> None:
        options = [("grpc.use_local_subchannel_pool", 1)]
        if credentials is None:
            self.channel = grpc.aio.insecure_channel(address, options=options)
        else:
            self.channel = grpc.aio.secure_channel(address, credentials.channel_credentials(), options)
        self.stub = agent_worker_pb2_grpc.AgentRpcStub(self.channel)  # type: ignore[no-untyped-call]
        self.metadata = [("client-id", client_id)]
        self._outbox: asyncio.Queue[agent_worker_pb2.Message] = asyncio.Queue()
        self.stream: Any = None

    async def register(self, agent_type: str) -> None:
        request = agent_worker_pb2.RegisterAgentTypeRequest(type=agent_type)
        await self.stub.RegisterAgent(request, metadata=self.metadata)

    async def subscribe(self, topic_type: str, agent_type: str) -> str:
        subscription = TypeSubscription(topic_type=topic_type, agent_type=agent_type)
        request = agent_worker_pb2.AddSubscriptionRequest(subscription=subscription_to_proto(subscription))
        await self.stub.AddSubscription(request, metadata=self.metadata)
        return subscription.id

    async def unsubscribe(self, subscription_id: str) -> None:
        request = agent_worker_pb2.RemoveSubscriptionRequest(id=subscription_id)
        await self.stub.RemoveSubscription(request, metadata=self.metadata)

    async def open(self) -> None:
        """Open the message stream; a refusal is read with ``refusal()``."""
        self.stream = self.stub.OpenChannel(QueueAsyncIterable(self._outbox), metadata=self.metadata)
        with contextlib.suppress(grpc.aio.AioRpcError):
            await self.stream.wait_for_connection()

    async def publish(self, message: BaseModel, topic: TopicId, sender: AgentId | None = None) -> None:
        name = _SERIALIZERS.type_name(message)
        data = _SERIALIZERS.serialize(message, type_name=name, data_content_type=JSON_DATA_CONTENT_TYPE)
        attributes = {
            wire.DATA_CONTENT_TYPE_ATTR: _text(JSON_DATA_CONTENT_TYPE),
            wire.DATA_SCHEMA_ATTR: _text(name),
            wire.MESSAGE_KIND_ATTR: _text(wire.MESSAGE_KIND_VALUE_PUBLISH),
        }
        if sender is not None:
            attributes[wire.AGENT_SENDER_TYPE_ATTR] = _text(sender.type)
            attributes[wire.AGENT_SENDER_KEY_ATTR] = _text(sender.key)
        event = cloudevent_pb2.CloudEvent(
            id="forged", spec_version="1.0", type=topic.type, source=topic.source, attributes=attributes
        )
        event.binary_data = data
        await self._outbox.put(agent_worker_pb2.Message(cloudEvent=event))

    async def ask(self, message: BaseModel, target: AgentId, sender: AgentId | None = None) -> None:
        name = _SERIALIZERS.type_name(message)
        data = _SERIALIZERS.serialize(message, type_name=name, data_content_type=JSON_DATA_CONTENT_TYPE)
        request = agent_worker_pb2.RpcRequest(
            request_id="1",
            target=agent_worker_pb2.AgentId(type=target.type, key=target.key),
            payload=agent_worker_pb2.Payload(
                data_type=name, data_content_type=JSON_DATA_CONTENT_TYPE, data=data
            ),
        )
        if sender is not None:
            request.source.CopyFrom(agent_worker_pb2.AgentId(type=sender.type, key=sender.key))
        await self._outbox.put(agent_worker_pb2.Message(request=request))

    async def next_message(self) -> agent_worker_pb2.Message:
        """What the host sends this connection next; raises the ``AioRpcError`` that ended the stream."""
        message = await asyncio.wait_for(self.stream.read(), TIMEOUT)
        if message is grpc.aio.EOF:
            raise AssertionError("the host ended the stream without a status")
        return message

    async def refusal(self) -> grpc.aio.AioRpcError:
        """The error the host ended this stream with (everything it sent before is ignored)."""
        try:
            while True:
                await self.next_message()
        except grpc.aio.AioRpcError as exc:
            return exc

    async def close(self) -> None:
        await self.channel.close()
