"""Serializers for every message of the protocol: a worker without one drops that message silently."""

from __future__ import annotations

from autogen_core import JSON_DATA_CONTENT_TYPE, try_get_known_serializers_for_type
from pydantic import BaseModel

from handoffs_runtime.messages import MESSAGE_TYPES
from handoffs_runtime.private import SerializationRegistry


def protocol_serializers() -> SerializationRegistry:
    """A registry that knows every type of ``messages.MESSAGE_TYPES`` (JSON on the wire)."""
    registry = SerializationRegistry()
    for message_type in MESSAGE_TYPES:
        registry.add_serializer(try_get_known_serializers_for_type(message_type))
    return registry


def type_name(message_type: type[BaseModel]) -> str:
    """The name a message type travels under (the ``dataschema`` of its event)."""
    return protocol_serializers().type_name(message_type.model_construct())


def decode(registry: SerializationRegistry, payload: bytes, name: str) -> object:
    """A JSON payload back into its message."""
    return registry.deserialize(payload, type_name=name, data_content_type=JSON_DATA_CONTENT_TYPE)
