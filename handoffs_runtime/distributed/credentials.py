"""Credentials of a deployment: the CA, the host's certificate and a token per role, in one folder.

Created, renewed and rotated here; loaded by the host, workers and front ends, which refuse files that
others may read (secrets) or replace (anything), and a folder anyone may write to.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

import grpc  # type: ignore[import-untyped]
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from handoffs_runtime.distributed.certificates import (
    HOST_DAYS,
    WARN_DAYS,
    begins,
    check_host_names,
    check_host_profile,
    day,
    expires,
    key_pem,
    lifetime_days,
    names_of,
    new_ca,
    new_host_certificate,
    pem,
)
from handoffs_runtime.distributed.options import logger
from handoffs_runtime.errors import DistributedError
from handoffs_runtime.models.redaction import add_secret
from handoffs_runtime.tokens import token_weakness

Role: TypeAlias = Literal["worker", "frontend"]
ROLES: tuple[Role, ...] = ("worker", "frontend")

CA_FILE = "ca.pem"
CA_KEY_FILE = "ca.key"
HOST_CERT_FILE = "host.pem"
HOST_KEY_FILE = "host.key"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
"""Always in the host certificate, so a deployment on one machine needs no ``--host-name``."""


def token_file(role: Role) -> str:
    """``worker.token`` / ``frontend.token``: operators and tools rely on these names."""
    return f"{role}.token"


# --- creating and renewing credentials ----------------------------------------------------------------


def create_credentials(
    directory: str | os.PathLike[str],
    host_names: Iterable[str] = (),
    *,
    valid_days: int = HOST_DAYS,
    now: datetime.datetime | None = None,
) -> list[Path]:
    """Write a CA and its key, a host certificate and key, and one token per role into ``directory``
    (mode 0600; the directory 0700).

    The host certificate names ``host_names`` (DNS names or IP addresses) and loopback, and lasts
    ``valid_days`` from ``now``; ``handoffs credentials renew`` replaces it before then. Existing files
    are never overwritten, and a directory anyone may write to is refused.
    """
    folder = Path(directory)
    names = _host_names(LOOPBACK_NAMES, host_names)
    targets = [CA_FILE, CA_KEY_FILE, HOST_CERT_FILE, HOST_KEY_FILE, *(token_file(r) for r in ROLES)]
    existing = [t for t in targets if os.path.lexists(folder / t)]  # a dangling link is there too
    if existing:
        raise DistributedError(
            f"{folder} already holds {', '.join(existing)}; pick an empty directory (nothing was written)"
        )
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise DistributedError(f"cannot make the directory {folder} ({exc.strerror or exc})") from None
    _check_folder(folder)
    moment = now or datetime.datetime.now(datetime.UTC)
    ca_key, ca_cert = new_ca(moment)
    host_key, host_cert = new_host_certificate(ca_key, ca_cert, names, moment, valid_days)
    contents = {
        CA_FILE: pem(ca_cert),
        CA_KEY_FILE: key_pem(ca_key),
        HOST_CERT_FILE: pem(host_cert),
        HOST_KEY_FILE: key_pem(host_key),
        **{token_file(r): new_token().encode() + b"\n" for r in ROLES},
    }
    try:
        return [_write_private(folder / name, data) for name, data in contents.items()]
    except OSError as exc:
        where, why = exc.filename or folder, exc.strerror or exc
        raise DistributedError(f"cannot write {where} ({why}); pick an empty folder") from None


def _host_names(kept: Iterable[str], given: Iterable[str]) -> list[str]:
    """``kept`` and loopback and ``given`` (stripped, once each); refused if one is not a plain name."""
    names = list(dict.fromkeys([*kept, *LOOPBACK_NAMES, *(n.strip() for n in given if n.strip())]))
    try:
        check_host_names(names)
    except ValueError as exc:
        raise DistributedError(f"--host-name: {exc}") from None
    return names


def renew_host_certificate(
    directory: str | os.PathLike[str], host_names: Iterable[str] = (), *, now: datetime.datetime | None = None
) -> list[Path]:
    """Replace the host's certificate and key in ``directory`` with new ones signed by the same CA,
    naming what the old one named plus ``host_names`` and lasting as long as it did (``HOST_DAYS``
    without one); tokens and ``ca.pem`` are kept, so only the host restarts."""
    folder = Path(directory)
    _check_folder(folder)
    ca_pem = _read(folder, CA_FILE, "renewing")
    ca_key_pem = _read(folder, CA_KEY_FILE, "renewing", missing=_NO_CA_KEY)
    moment = now or datetime.datetime.now(datetime.UTC)
    ca_cert = x509.load_pem_x509_certificate(ca_pem)
    if ca_cert.not_valid_after_utc <= moment:
        raise DistributedError(
            f"the CA in {folder / CA_FILE} expired on {day(ca_cert.not_valid_after_utc)}: create new "
            "credentials with `handoffs credentials create DIR` and give them to every process"
        )
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise DistributedError(f"{folder / CA_KEY_FILE} is not the key of a handoffs-runtime CA")
    old = folder / HOST_CERT_FILE
    previous = _previous_host_certificate(old, ca_cert) if os.path.lexists(old) else None
    kept = names_of(previous) if previous is not None else []
    days = min(lifetime_days(previous), HOST_DAYS) if previous is not None else HOST_DAYS
    names = _host_names(kept, host_names)
    key, cert = new_host_certificate(ca_key, ca_cert, names, moment, days)
    return [_replace_private(folder / HOST_KEY_FILE, key_pem(key)), _replace_private(old, pem(cert))]


def _previous_host_certificate(path: Path, ca_cert: x509.Certificate) -> x509.Certificate:
    """The host certificate renewal copies names and lifetime from, once it is checked to be one this
    project makes with this CA: whoever could write it must not choose what the CA signs next."""
    start_over = (
        f"move it away and run `handoffs credentials renew {path.parent} --host-name NAME` "
        "with each name the host needs (nothing was written)"
    )
    try:
        certificate = x509.load_pem_x509_certificate(_read(path.parent, path.name, "renewing"))
        check_host_profile(certificate, ca_cert)
    except ValueError as exc:
        raise DistributedError(f"{path} is not a host certificate to renew: {exc}; {start_over}") from None
    return certificate


_NO_CA_KEY = (
    "credentials made before renewal existed keep no CA key; create new ones with `handoffs credentials "
    "create DIR` and give every worker and front end the new ca.pem and tokens"
)


def new_token() -> str:
    """A fresh secret: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def rotate_token(directory: str | os.PathLike[str], role: Role) -> Path:
    """Replace ``role``'s token in ``directory``; restart the host and that role's processes with it."""
    path = Path(directory) / token_file(role)
    if not path.exists():
        raise DistributedError(f"{path} does not exist; create credentials first")
    return _replace_private(path, new_token().encode() + b"\n")


def _write_private(path: Path, data: bytes) -> Path:
    """Create ``path`` readable only by its owner (never a moment with wider permissions, never through
    a link)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as file:
        file.write(data)
    return path


def _replace_private(path: Path, data: bytes) -> Path:
    """Give ``path`` new contents at once (a reader sees the old file or the new one), owner only."""
    fresh = path.with_name(path.name + ".new")
    fresh.unlink(missing_ok=True)
    _write_private(fresh, data)
    fresh.replace(path)
    return path


# --- who may touch the files ----------------------------------------------------------------------------


def _check_folder(folder: Path) -> None:
    """Refuse a folder others may write to (its group or everyone): they could replace the CA, the
    host's certificate or the tokens."""
    if os.name == "posix" and folder.is_dir() and folder.stat().st_mode & 0o022:
        who = "everyone" if folder.stat().st_mode & 0o002 else "its group"
        raise DistributedError(
            f"{folder} is writable by {who}, so others could replace its credentials: run "
            f"`chmod 700 {folder}` (or use another folder)"
        )


def _check_file(path: Path, info: os.stat_result) -> None:
    """Refuse a secret others may read, or any credential others may replace."""
    if os.name != "posix":
        return
    secret = path.name != CA_FILE and path.name != HOST_CERT_FILE
    if secret and info.st_mode & 0o077:
        raise DistributedError(f"{path} is a secret others may read or change: run `chmod 600 {path}`")
    if info.st_mode & 0o022:
        raise DistributedError(f"{path} may be changed by others: run `chmod 644 {path}`")


# --- loading credentials -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HostCredentials:
    """What the host reads: its certificate and key, and every role's token."""

    certificate: bytes
    key: bytes
    tokens: Mapping[Role, bytes]
    directory: Path | None = None

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> HostCredentials:
        folder = Path(directory)
        _check_folder(folder)
        return cls(
            certificate=_read(folder, HOST_CERT_FILE, "the host"),
            key=_read(folder, HOST_KEY_FILE, "the host"),
            tokens={r: _read_token(folder, r, "the host") for r in ROLES},
            directory=folder,
        )

    def check_expiry(self, now: datetime.datetime | None = None) -> None:
        """Raise if the certificate has expired or is not valid yet (one line: clients would refuse it
        as if from a wrong CA); log a warning if it expires within ``WARN_DAYS``. The host calls it at
        start, then daily (:meth:`remind_expiry`)."""
        moment = now or datetime.datetime.now(datetime.UTC)
        ends, starts = expires(self.certificate), begins(self.certificate)
        where = "DIR" if self.directory is None else str(self.directory)
        renew = f"run `handoffs credentials renew {where}` and start the host again"
        if starts > moment:
            raise DistributedError(
                f"the host's certificate is valid only from {starts:%Y-%m-%d %H:%M} UTC, and this machine's "
                f"clock says {moment:%Y-%m-%d %H:%M} UTC: set the clock right (clients refuse the "
                f"certificate until then), or {renew}"
            )
        if ends <= moment:
            raise DistributedError(f"the host's certificate expired on {day(ends)}; {renew}")
        if ends - moment <= datetime.timedelta(days=WARN_DAYS):
            left = (ends - moment).days
            logger.warning("the host's certificate expires on %s (in %d days); %s", day(ends), left, renew)

    async def remind_expiry(self, every: float = 86400.0) -> None:
        """Every ``every`` seconds, warn as :meth:`check_expiry` does (and log an error once expired)."""
        while True:
            await asyncio.sleep(every)
            try:
                self.check_expiry()
            except DistributedError as exc:
                logger.error("%s", exc)

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
        _check_folder(folder)
        who = f"a {role}"
        return cls(role, _read(folder, CA_FILE, who), _read_token(folder, role, who))

    def channel_credentials(self) -> Any:
        """TLS checked against our CA, plus ``authorization: Bearer <token>`` on every call."""
        return grpc.composite_channel_credentials(
            grpc.ssl_channel_credentials(root_certificates=self.ca),
            grpc.access_token_call_credentials(self.token.decode()),
        )


def _read(folder: Path, name: str, who: str, *, missing: str = "") -> bytes:
    path = folder / name
    try:
        with path.open("rb") as file:
            _check_file(path, os.fstat(file.fileno()))
            data = file.read()
    except OSError as exc:
        hint = missing or "create credentials with `handoffs credentials create DIR`"
        raise DistributedError(f"{who} needs {path} ({exc.strerror or exc}); {hint}") from None
    if not data.strip():
        raise DistributedError(f"{path} is empty; create credentials with `handoffs credentials create DIR`")
    return data


def _read_token(folder: Path, role: Role, who: str) -> bytes:
    """``role``'s token, refused if it is too easy to guess (a hand-written one, say)."""
    token = _read(folder, token_file(role), who).strip()
    add_secret(token)  # masked in every log record (see models/redaction.py)
    weakness = token_weakness(token.decode("utf-8", errors="replace"))
    if weakness is not None:
        raise DistributedError(
            f"{folder / token_file(role)} holds a weak token ({weakness}): run "
            f"`handoffs credentials rotate {folder} --role {role}` for a random one"
        )
    return token


"""What autogen's gRPC runtime writes as the sender of a message published outside any agent."""
"""What a front end sends to its own person's topic: the login that starts a session, and the notice
that a message of theirs was too large to send."""
