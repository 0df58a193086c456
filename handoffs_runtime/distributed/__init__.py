"""The team across processes and machines, on autogen-ext's gRPC runtime.

::

    handoffs host --address 127.0.0.1:50051                      # routes messages; no agents
    handoffs worker --host 127.0.0.1:50051 --agents TriageAgent   # any subset of the team
    handoffs worker --host 127.0.0.1:50051 --agents SalesAgent --shard 0/2
    handoffs worker --host 127.0.0.1:50051 --agents SalesAgent --shard 1/2
    handoffs chat --host 127.0.0.1:50051                          # a front end: the person's side

Modules: ``host`` places sessions (shards, front ends) and tells the person when nobody serves an
agent; ``runtime`` reconnects workers and front ends to a restarted host; ``frontend`` holds the
person's side, which knows when its sessions are done; ``worker`` registers a team's agents, sharded
or not; ``relay`` lets agents on workers reach the person at the front end; ``watch`` reports turns
lost with a dead process; ``launch`` starts hosts and workers as child processes; ``security``
creates credentials, checks every call's token and holds each role to what it may do.

``host`` and ``runtime`` extend autogen-ext's gRPC classes through some of their private members, which
is why autogen-ext is pinned to one version.
"""

from handoffs_runtime.distributed.credentials import (
    ClientCredentials,
    HostCredentials,
    create_credentials,
    rotate_token,
)
from handoffs_runtime.distributed.frontend import FrontEnd, chat_remote
from handoffs_runtime.distributed.host import Host, security_notice, serve
from handoffs_runtime.distributed.host_servicer import TeamHostServicer, placement_conflict
from handoffs_runtime.distributed.launch import ChildProcess, launch_host, launch_worker
from handoffs_runtime.distributed.options import (
    DEFAULT_MAX_MESSAGE_MB,
    Address,
    grpc_options,
    max_message_bytes,
)
from handoffs_runtime.distributed.relay import RelayChannel, StreamingRelayChannel
from handoffs_runtime.distributed.roles import RolePolicy
from handoffs_runtime.distributed.session_subscriptions import IndexedSubscriptions, SessionSubscription
from handoffs_runtime.distributed.worker import parse_shard_option, start_worker
from handoffs_runtime.distributed.worker_runtime import Backoff, WorkerRuntime
from handoffs_runtime.errors import DistributedError

__all__ = [
    "DEFAULT_MAX_MESSAGE_MB",
    "Address",
    "Backoff",
    "ChildProcess",
    "ClientCredentials",
    "DistributedError",
    "FrontEnd",
    "Host",
    "HostCredentials",
    "IndexedSubscriptions",
    "RelayChannel",
    "RolePolicy",
    "SessionSubscription",
    "StreamingRelayChannel",
    "TeamHostServicer",
    "WorkerRuntime",
    "chat_remote",
    "create_credentials",
    "grpc_options",
    "launch_host",
    "launch_worker",
    "max_message_bytes",
    "parse_shard_option",
    "placement_conflict",
    "rotate_token",
    "security_notice",
    "serve",
    "start_worker",
]
