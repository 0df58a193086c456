"""The token check on every call, and what a misconfigured client is told."""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import hmac
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias

import grpc  # type: ignore[import-untyped]
from cryptography import x509

from handoffs_runtime.distributed.certificates import day
from handoffs_runtime.distributed.credentials import ClientCredentials, Role, token_file
from handoffs_runtime.distributed.options import logger

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
    if "handshake failed" in text or "expired" in text:
        expired, starts = await _outside_validity(host)
        if expired is not None:
            return (
                f"the host's certificate expired on {expired}; run `handoffs credentials renew DIR` on the "
                f"host's credentials and restart the host at {host}"
            )
        if starts is not None:
            return (
                f"the certificate of the host at {host} is valid only from {starts} UTC: this machine's "
                "clock is behind the one that made it; set the clocks right"
            )
    if "handshake failed" in text:
        return (
            f"the certificate of the host at {host} is not signed by the CA in ca.pem (wrong CA): use the "
            "ca.pem of the credentials the host was started with"
        )
    return None


async def speaks_tls(host: str, timeout: float = 2.0) -> bool:
    """Whether the server at ``host`` answers a TLS handshake (to tell a plain client what is wrong)."""
    return await _peer_certificate(host, timeout) is not None


async def _outside_validity(host: str) -> tuple[str | None, str | None]:
    """The day the certificate the server at ``host`` presents expired, or the moment it becomes valid
    if that is still to come (a clock behind); ``(None, None)`` if it is valid now (or there is none)."""
    der = await _peer_certificate(host)
    if not der:
        return None, None
    certificate = x509.load_der_x509_certificate(der)
    now = datetime.datetime.now(datetime.UTC)
    if certificate.not_valid_after_utc <= now:
        return day(certificate.not_valid_after_utc), None
    if certificate.not_valid_before_utc > now:
        return None, f"{certificate.not_valid_before_utc:%Y-%m-%d %H:%M}"
    return None, None


async def _peer_certificate(host: str, timeout: float = 2.0) -> bytes | None:
    """The certificate (DER) the server at ``host`` presents, unchecked; ``None`` if it speaks no TLS."""
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
        return None
    tls = writer.get_extra_info("ssl_object")
    der = tls.getpeercert(binary_form=True) if tls is not None else None
    writer.transport.abort()  # no TLS goodbye: the server need not answer it
    return der or b""
