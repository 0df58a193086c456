"""Trust across processes: credentials, the token check on every call, and what each role may do.

A deployment has one CA, one host certificate (TLS) and one secret token per role:

- ``worker``: may register the team's agent types (and their shards), or the plain ``User`` type of a
  front end that serves every session;
- ``frontend``: may register only ``User.session-<id>`` types, subscribe them only to the ``User`` and
  ``HandoffEvents`` topics, publish only into its own sessions (``UserTask`` to the team's agents,
  ``UserLogin`` / ``Undeliverable`` to its own person) and call only agents of its own sessions.

Progress for the person (``PersonProgress``: text deltas, tool activity) goes only to ``User`` topics,
and only from a worker: a front end never sends it, not even into its own session.

The token travels as ``authorization: Bearer <token>`` (gRPC call credentials, so only over TLS) and is
compared in constant time by ``TokenCheck``, a server interceptor, for unary and streaming calls alike.
Without credentials there are no roles: every client may do everything, which is why a host without
credentials listens on loopback only unless told ``insecure``.

Example::

    create_credentials("creds", host_names=["gateway.example"])
    host = Host("0.0.0.0:50051", credentials="creds")
    runtime, _ = await start_worker(team, "gateway.example:50051", model=m, credentials="creds")
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import hmac
import ipaddress
import os
import secrets
import ssl
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

import grpc  # type: ignore[import-untyped]
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ..errors import DistributedError
from ..messages import PersonProgress, Undeliverable, UserLogin, UserTask
from ..topics import HANDOFF_EVENTS, USER, base_agent_type, check_session_id, parse_shard
from .options import logger
from .serializers import type_name

Role: TypeAlias = Literal["worker", "frontend"]
ROLES: tuple[Role, ...] = ("worker", "frontend")

CA_FILE = "ca.pem"
HOST_CERT_FILE = "host.pem"
HOST_KEY_FILE = "host.key"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
"""Always in the host certificate, so a deployment on one machine needs no ``--host-name``."""

CreateCredentials = Callable[..., list[Path]]


def token_file(role: Role) -> str:
    """``worker.token`` / ``frontend.token``: operators and tools rely on these names."""
    return f"{role}.token"


# --- creating credentials ------------------------------------------------------------------------------


def create_credentials(
    directory: str | os.PathLike[str], host_names: Iterable[str] = (), *, valid_days: int = 825
) -> list[Path]:
    """Write a CA, a host certificate and key, and one token per role into ``directory`` (mode 0600).

    The host certificate names ``host_names`` (DNS names or IP addresses) and loopback. The CA's key is
    not kept: nobody can sign another host later, so adding a name means new credentials for everyone.
    Existing files are never overwritten.
    """
    folder = Path(directory)
    names = list(dict.fromkeys([*LOOPBACK_NAMES, *(n.strip() for n in host_names if n.strip())]))
    targets = [CA_FILE, HOST_CERT_FILE, HOST_KEY_FILE, *(token_file(r) for r in ROLES)]
    existing = [t for t in targets if (folder / t).exists()]
    if existing:
        raise DistributedError(
            f"{folder} already holds {', '.join(existing)}; pick an empty directory (nothing was written)"
        )
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    host_key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "handoffs-runtime deployment CA")])
    ca_cert = (
        _certificate(ca_name, ca_name, ca_key.public_key(), now, valid_days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(signs_certificates=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    host_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    host_cert = (
        _certificate(host_name, ca_name, host_key.public_key(), now, valid_days)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(signs_certificates=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([_general_name(n) for n in names]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    contents = {
        CA_FILE: ca_cert.public_bytes(serialization.Encoding.PEM),
        HOST_CERT_FILE: host_cert.public_bytes(serialization.Encoding.PEM),
        HOST_KEY_FILE: host_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        **{token_file(r): new_token().encode() + b"\n" for r in ROLES},
    }
    return [_write_private(folder / name, data) for name, data in contents.items()]


def new_token() -> str:
    """A fresh secret: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def rotate_token(directory: str | os.PathLike[str], role: Role) -> Path:
    """Replace ``role``'s token in ``directory``; restart the host and that role's processes with it."""
    path = Path(directory) / token_file(role)
    if not path.exists():
        raise DistributedError(f"{path} does not exist; create credentials first")
    fresh = path.with_name(path.name + ".new")
    fresh.unlink(missing_ok=True)
    _write_private(fresh, new_token().encode() + b"\n")
    fresh.replace(path)
    return path


def _certificate(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePublicKey, now: datetime.datetime, days: int
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
    )


def _key_usage(*, signs_certificates: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs_certificates,
        crl_sign=signs_certificates,
        encipher_only=False,
        decipher_only=False,
    )


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name.strip("[]")))
    except ValueError:
        return x509.DNSName(name)


def _write_private(path: Path, data: bytes) -> Path:
    """Create ``path`` readable only by its owner (never a moment with wider permissions)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as file:
        file.write(data)
    return path


# --- loading credentials -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HostCredentials:
    """What the host reads: its certificate and key, and every role's token."""

    certificate: bytes
    key: bytes
    tokens: Mapping[Role, bytes]

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> HostCredentials:
        folder = Path(directory)
        return cls(
            certificate=_read(folder, HOST_CERT_FILE, "the host"),
            key=_read(folder, HOST_KEY_FILE, "the host"),
            tokens={r: _read_token(folder, r, "the host") for r in ROLES},
        )

    def server_credentials(self) -> Any:
        return grpc.ssl_server_credentials([(self.key, self.certificate)])


@dataclass(frozen=True, slots=True)
class ClientCredentials:
    """What a worker or front end reads: the CA that signed the host, and its role's token."""

    role: Role
    ca: bytes
    token: bytes

    @classmethod
    def load(cls, directory: str | os.PathLike[str], role: Role) -> ClientCredentials:
        folder = Path(directory)
        who = f"a {role}"
        return cls(role, _read(folder, CA_FILE, who), _read_token(folder, role, who))

    def channel_credentials(self) -> Any:
        """TLS checked against our CA, plus ``authorization: Bearer <token>`` on every call."""
        return grpc.composite_channel_credentials(
            grpc.ssl_channel_credentials(root_certificates=self.ca),
            grpc.access_token_call_credentials(self.token.decode()),
        )


def _read(folder: Path, name: str, who: str) -> bytes:
    path = folder / name
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DistributedError(
            f"{who} needs {path} ({exc.strerror or exc}); create credentials with "
            "`handoffs credentials create DIR`"
        ) from None
    if not data.strip():
        raise DistributedError(f"{path} is empty; create credentials with `handoffs credentials create DIR`")
    return data


def _read_token(folder: Path, role: Role, who: str) -> bytes:
    return _read(folder, token_file(role), who).strip()


# --- checking every call -------------------------------------------------------------------------------

_CALLER_ROLE: contextvars.ContextVar[Role | None] = contextvars.ContextVar("handoffs_role", default=None)


def caller_role() -> Role | None:
    """The role the current call authenticated as (``None`` on a host without credentials)."""
    return _CALLER_ROLE.get()


Handler: TypeAlias = Any  # grpc.RpcMethodHandler, untyped


class TokenCheck(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Refuses every call without a valid ``authorization: Bearer`` token with ``UNAUTHENTICATED``, and
    tells the handler which role the caller is (``caller_role()``). The token itself is never logged."""

    def __init__(self, tokens: Mapping[Role, bytes]) -> None:
        self._tokens = dict(tokens)

    def role_of(self, metadata: Sequence[tuple[str, str | bytes]] | None) -> Role | None:
        """The role whose token ``metadata`` carries, compared in constant time; ``None`` if none."""
        value = next((v for k, v in metadata or () if k == "authorization"), None)
        if value is None:
            return None
        given = value.encode() if isinstance(value, str) else value
        scheme, _, token = given.partition(b" ")
        if scheme.lower() != b"bearer":
            return None
        found: Role | None = None
        for role, expected in self._tokens.items():  # every token compared: the time says nothing
            if hmac.compare_digest(token, expected):
                found = role
        return found

    async def intercept_service(
        self, continuation: Callable[[Any], Awaitable[Handler]], handler_call_details: Any
    ) -> Handler:
        metadata = handler_call_details.invocation_metadata
        role = self.role_of(metadata)
        handler = await continuation(handler_call_details)
        if role is not None or handler is None:
            _CALLER_ROLE.set(role)  # the handler runs in this same context
            return handler
        has_token = any(k == "authorization" for k, _ in metadata or ())
        reason = "a token that matches no role" if has_token else "no token"
        return _refusing(handler, handler_call_details.method, reason)


def _refusing(handler: Handler, method: str, reason: str) -> Handler:
    """A handler of the same shape as ``handler`` that logs and fails with ``UNAUTHENTICATED``."""
    message = (
        "not authenticated: this host needs the token of a role (worker.token or frontend.token from its "
        "credentials directory)"
    )

    async def refuse(context: Any) -> None:
        logger.warning("refused %s from %s: %s", method.rsplit("/", 1)[-1], context.peer(), reason)
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    async def unary(request: Any, context: Any) -> Any:
        await refuse(context)

    async def streaming(request: Any, context: Any) -> Any:
        await refuse(context)
        yield  # pragma: no cover - abort raised

    kinds = {
        (False, False): grpc.unary_unary_rpc_method_handler,
        (True, False): grpc.stream_unary_rpc_method_handler,
        (False, True): grpc.unary_stream_rpc_method_handler,
        (True, True): grpc.stream_stream_rpc_method_handler,
    }
    make = kinds[(bool(handler.request_streaming), bool(handler.response_streaming))]
    return make(
        streaming if handler.response_streaming else unary,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


# --- what each role may do -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RolePolicy:
    """Which role may register, subscribe, publish and call what. Each check returns the reason for a
    refusal, or ``None``; a caller without a role (no credentials) may do everything.

    ``agent_types``: the team's agents (``None``: any type that is not the person's side).
    """

    agent_types: frozenset[str] | None = None
    user_topic: str = USER

    def is_agent(self, topic_or_type: str) -> bool:
        name = base_agent_type(topic_or_type)
        if name in (self.user_topic, HANDOFF_EVENTS):
            return False
        return self.agent_types is None or name in self.agent_types

    def session_of(self, agent_type: str) -> str | None:
        """The session a front end's type ``User.session-<id>`` serves, else ``None``."""
        prefix = f"{self.user_topic}.session-"
        if not agent_type.startswith(prefix):
            return None
        try:
            return check_session_id(agent_type[len(prefix) :])
        except ValueError:
            return None

    def register(self, role: Role | None, agent_type: str) -> str | None:
        if role is None:
            return None
        if role == "frontend":
            if self.session_of(agent_type) is not None:
                return None
            return (
                f"a frontend credential may register only {self.user_topic}.session-<id> types, "
                f"not {agent_type}"
            )
        if agent_type == self.user_topic:
            return None  # a front end that serves every session: as trusted as a worker
        if self.session_of(agent_type) is not None:
            return f"a worker credential may not register {agent_type}: a front end's session type"
        if self.is_agent(agent_type) and (
            agent_type == base_agent_type(agent_type) or parse_shard(agent_type) is not None
        ):
            return None
        known = ", ".join(sorted(self.agent_types or ())) or "the team's agents"
        return (
            f"a worker credential may register only the team's agents ({known}) and their shards, "
            f"not {agent_type}"
        )

    def subscribe(
        self,
        role: Role | None,
        agent_type: str,
        topic: str,
        own_types: Collection[str],
        *,
        prefix: bool = False,
    ) -> str | None:
        """``topic`` is a topic type, or with ``prefix`` a topic-type prefix (autogen subscribes every agent
        type to ``<type>:`` for the messages sent to it directly)."""
        if agent_type not in own_types:
            return f"{agent_type} is not an agent type of this connection; register it first"
        if role != "frontend":
            return None
        if topic == f"{agent_type}:" if prefix else topic in (self.user_topic, HANDOFF_EVENTS):
            return None
        what = f"the topic prefix {topic}" if prefix else f"the {topic} topic"
        return (
            f"a frontend credential may subscribe only to the {self.user_topic} and {HANDOFF_EVENTS} "
            f"topics, not to {what}"
        )

    def publish(
        self,
        role: Role | None,
        topic_type: str,
        session: str,
        schema: str,
        sender_type: str,
        own_types: Collection[str],
    ) -> str | None:
        """``schema`` is the message's type name; ``sender_type`` the sender it claims."""
        refused = self._sender(sender_type, own_types) or self._progress(role, topic_type, schema)
        if refused is not None or role != "frontend":
            return refused
        if f"{self.user_topic}.session-{session}" not in own_types:
            return f"a frontend may publish only into its own sessions, not into session {session}"
        if topic_type == self.user_topic and schema in FRONTEND_OWN_MESSAGES:
            return None
        if self.is_agent(topic_type) and schema == USER_TASK:
            return None
        return f"a frontend may publish only a UserTask to the team's agents, not {schema} to {topic_type}"

    def request(
        self,
        role: Role | None,
        target_type: str,
        target_key: str,
        sender_type: str,
        own_types: Collection[str],
    ) -> str | None:
        refused = self._sender(sender_type, own_types)
        if refused is not None or role != "frontend":
            return refused
        if f"{self.user_topic}.session-{target_key}" in own_types and self.is_agent(target_type):
            return None
        return (
            f"a frontend may call only the team's agents of its own sessions, not {target_type}/{target_key}"
        )

    def _progress(self, role: Role | None, topic_type: str, schema: str) -> str | None:
        if role is None or schema != PERSON_PROGRESS or topic_type == self.user_topic:
            return None
        return f"{schema} goes only to the {self.user_topic} topic, not to {topic_type}"

    @staticmethod
    def _sender(sender_type: str, own_types: Collection[str]) -> str | None:
        if sender_type in ("", ANONYMOUS_SENDER) or sender_type in own_types:
            return None
        return f"a message may name as its sender only an agent type of its own connection, not {sender_type}"


ANONYMOUS_SENDER = "unknown"
"""What autogen's gRPC runtime writes as the sender of a message published outside any agent."""
USER_TASK = type_name(UserTask)
PERSON_PROGRESS = type_name(PersonProgress)
FRONTEND_OWN_MESSAGES = frozenset({type_name(UserLogin), type_name(Undeliverable)})
"""What a front end sends to its own person's topic: the login that starts a session, and the notice
that a message of theirs was too large to send."""


# --- telling a misconfigured client what is wrong ------------------------------------------------------


async def misconfiguration(
    exc: BaseException, host: str, credentials: ClientCredentials | None
) -> str | None:
    """One line saying which credential is wrong when ``exc`` shows a misconfiguration, not a host that
    is merely down (which is retried); ``None`` otherwise."""
    if not isinstance(exc, grpc.aio.AioRpcError):
        return None
    code, details = exc.code(), exc.details() or ""
    text = details.lower()
    if code == grpc.StatusCode.UNAUTHENTICATED:
        if credentials is None:
            return f"the host at {host} requires credentials: pass --credentials DIR"
        return (
            f"the host at {host} refused this {credentials.role}'s token: {token_file(credentials.role)} is "
            "not the one the host was started with (wrong token, or the host's credentials were rotated)"
        )
    if code == grpc.StatusCode.PERMISSION_DENIED:
        who = credentials.role if credentials is not None else "client"
        return f"the host at {host} refused this {who}: {details}"
    if code != grpc.StatusCode.UNAVAILABLE:
        return None
    if credentials is None:
        if "socket closed" in text and await speaks_tls(host):
            return (
                f"the host at {host} requires TLS and credentials: pass --credentials DIR (the directory "
                "with ca.pem and this process's role token)"
            )
        return None
    if "wrong_version_number" in text or "wrong version number" in text:
        return (
            f"the host at {host} does not speak TLS: start it with --credentials DIR, or drop --credentials"
        )
    if "peer name" in text or "hostname" in text:
        return (
            f"the certificate of the host at {host} does not name that address: create credentials "
            "with --host-name for it, or connect by a name the certificate has"
        )
    if "handshake failed" in text:
        return (
            f"the certificate of the host at {host} is not signed by the CA in ca.pem (wrong CA): use the "
            "ca.pem of the credentials the host was started with"
        )
    return None


async def speaks_tls(host: str, timeout: float = 2.0) -> bool:
    """Whether the server at ``host`` answers a TLS handshake (to tell a plain client what is wrong)."""
    name, _, port = host.rpartition(":")
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(name.strip("[]"), int(port), ssl=context), timeout
        )
    except (OSError, ValueError, TimeoutError):
        return False
    writer.transport.abort()  # no TLS goodbye: the server need not answer it
    return True
