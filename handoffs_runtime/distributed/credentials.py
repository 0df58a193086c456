"""Credentials of a deployment: the CA, the host's certificate and a token per role."""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

import grpc  # type: ignore[import-untyped]
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from handoffs_runtime.errors import DistributedError

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


"""What autogen's gRPC runtime writes as the sender of a message published outside any agent."""
"""What a front end sends to its own person's topic: the login that starts a session, and the notice
that a message of theirs was too large to send."""
