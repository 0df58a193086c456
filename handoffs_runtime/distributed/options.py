"""Addresses and gRPC channel options shared by the host, the workers and the front ends."""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass
from typing import Any

from handoffs_runtime.errors import DistributedError

logger = logging.getLogger("handoffs_runtime.distributed")

DEFAULT_MAX_MESSAGE_MB = 64
"""gRPC refuses messages over 4 MiB by default; the full-context ``UserTask`` grows every turn."""


def max_message_bytes(megabytes: float) -> int:
    """The message-size limit in bytes for ``--max-message-mb``."""
    if megabytes <= 0:
        raise DistributedError(f"--max-message-mb must be a positive number of MiB, got {megabytes}")
    return int(megabytes * 1024 * 1024)


DEFAULT_KEEPALIVE = 20.0
"""Seconds between keepalive pings: a peer that vanished without closing TCP is noticed within twice that."""

MIN_KEEPALIVE = 1.0
"""The shortest ping interval a host accepts from its clients (shorter ones would be refused as abuse)."""


def grpc_options(limit_bytes: int) -> list[tuple[str, Any]]:
    """Channel and server options that raise gRPC's size limits to ``limit_bytes`` both ways."""
    return [("grpc.max_send_message_length", limit_bytes), ("grpc.max_receive_message_length", limit_bytes)]


def client_keepalive(seconds: float = DEFAULT_KEEPALIVE) -> list[tuple[str, Any]]:
    """Pings from a worker or front end, even while idle, so a host that is gone is noticed and left."""
    if seconds < MIN_KEEPALIVE:
        raise DistributedError(f"the keepalive interval must be at least {MIN_KEEPALIVE:g}s, got {seconds}")
    interval = int(seconds * 1000)
    return [
        ("grpc.keepalive_time_ms", interval),
        ("grpc.keepalive_timeout_ms", interval),
        ("grpc.http2.ping_timeout_ms", interval),  # keepalive_timeout_ms alone does not bound the wait
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
    ]


def server_keepalive() -> list[tuple[str, Any]]:
    """The host's side: accept the clients' pings (down to ``MIN_KEEPALIVE``) and ping them too, so a
    vanished worker's agent types are freed and its callers answered."""
    return [
        ("grpc.keepalive_time_ms", int(DEFAULT_KEEPALIVE * 1000)),
        ("grpc.keepalive_timeout_ms", int(DEFAULT_KEEPALIVE * 1000)),
        ("grpc.http2.ping_timeout_ms", int(DEFAULT_KEEPALIVE * 1000)),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_recv_ping_interval_without_data_ms", int(MIN_KEEPALIVE * 1000)),
        ("grpc.http2.max_ping_strikes", 0),
        ("grpc.http2.max_pings_without_data", 0),
    ]


@dataclass(frozen=True, slots=True)
class Address:
    """``HOST:PORT`` of a gRPC host, validated. Port 0 asks the system for a free port (host side only)."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Address:
        host, sep, port = text.strip().rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port.isdigit() or int(port) > 65535:
            raise DistributedError(f"address {text!r} is not HOST:PORT, e.g. 127.0.0.1:50051")
        return cls(host, int(port))

    @property
    def is_loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def with_port(self, port: int) -> Address:
        return Address(self.host, port)

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


TEAM_METADATA = "handoffs-team"
"""The header of a channel's opening in which the host names the team it serves."""
