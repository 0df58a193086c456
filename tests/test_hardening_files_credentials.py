"""Credentials on a shared machine: weak tokens, a clock behind the certificate, folders others may write
to, a planted ``host.pem`` and a dangling link are each one clear line, and change nothing."""

from __future__ import annotations

import datetime
import secrets
from pathlib import Path

import grpc  # type: ignore[import-untyped]
import pytest
from cryptography import x509

from handoffs_runtime.distributed.certificates import (
    HOST_DAYS,
    lifetime_days,
    names_of,
    new_ca,
    new_host_certificate,
    pem,
)
from handoffs_runtime.distributed.credentials import (
    ClientCredentials,
    HostCredentials,
    create_credentials,
    new_token,
    renew_host_certificate,
)
from handoffs_runtime.errors import DistributedError

from .cli_support import run_handoffs
from .test_distributed_cli import run

NOW = datetime.datetime.now(datetime.UTC)


def _one_line(args: list[str], timeout: float = 60) -> str:
    """``handoffs ARGS``, which must fail with exit status 2 and one line, no traceback; that line."""
    done = run_handoffs(*args, timeout=timeout)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    [line] = done.stderr.splitlines()
    return line


@pytest.fixture
def creds(tmp_path: Path) -> Path:
    directory = tmp_path / "creds"
    create_credentials(directory)
    return directory


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if not p.is_symlink()}


# --- item 10 (the token-file half): a weak token is refused ---------------------------------------------


@pytest.mark.parametrize("weak", ["aaaaaaaaaaaaaaaa", "abcd" * 8, "abcdefghijklmnopqrstuvwxyz", "x"])
def test_a_token_file_with_a_weak_token_is_refused_naming_the_fix(creds: Path, weak: str) -> None:
    token = creds / "worker.token"
    token.write_text(weak + "\n")
    for load in (lambda: ClientCredentials.load(creds, "worker"), lambda: HostCredentials.load(creds)):
        with pytest.raises(DistributedError, match="holds a weak token") as caught:
            load()
        assert f"handoffs credentials rotate {creds} --role worker" in str(caught.value)
    line = _one_line(["host", "--address", "127.0.0.1:0", "--credentials", str(creds)])
    assert f"{token} holds a weak token (about" in line and weak not in line


@pytest.mark.parametrize(
    "strong", [new_token(), secrets.token_hex(16), secrets.token_urlsafe(16), secrets.token_hex(32)]
)
def test_a_random_token_of_sixteen_bytes_or_more_is_accepted(creds: Path, strong: str) -> None:
    (creds / "frontend.token").write_text(strong + "\n")
    assert ClientCredentials.load(creds, "frontend").token == strong.encode()


# --- item 16: a certificate not valid yet stops the host at start ---------------------------------------


def test_a_host_certificate_not_yet_valid_stops_the_host_with_one_line(tmp_path: Path) -> None:
    directory = tmp_path / "creds"
    create_credentials(directory, now=NOW + datetime.timedelta(days=2))  # this machine's clock is behind
    with pytest.raises(DistributedError, match="valid only from"):
        HostCredentials.load(directory).check_expiry()
    line = _one_line(["host", "--address", "127.0.0.1:0", "--credentials", str(directory)])
    assert "the host's certificate is valid only from" in line and "set the clock right" in line


async def test_a_client_of_a_host_whose_certificate_is_not_valid_yet_is_told_so_not_wrong_ca(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "creds"
    create_credentials(directory, now=NOW + datetime.timedelta(days=2))
    server = grpc.aio.server()  # a host that ignores the start of validity, as an old version would
    port = server.add_secure_port("127.0.0.1:0", HostCredentials.load(directory).server_credentials())
    await server.start()
    try:
        code, _, err = await run("worker", "--host", f"127.0.0.1:{port}", "--credentials", str(directory))
    finally:
        await server.stop(0)
    [line] = err.splitlines()
    assert code == 2 and "is valid only from" in line and "set the clocks right" in line, line
    assert "wrong CA" not in line


# --- item 17: renew refuses a folder others may write to ------------------------------------------------


@pytest.mark.parametrize(("mode", "who"), [(0o770, "its group"), (0o707, "everyone"), (0o720, "its group")])
def test_renew_refuses_a_folder_others_may_write_to(creds: Path, mode: int, who: str) -> None:
    before = _files(creds)
    creds.chmod(mode)
    try:
        line = _one_line(["credentials", "renew", str(creds)])
    finally:
        creds.chmod(0o700)
    assert f"{creds} is writable by {who}" in line and f"run `chmod 700 {creds}`" in line
    assert _files(creds) == before


# --- item 18: renew copies nothing from a host.pem that is not ours -------------------------------------


def _planted(creds: Path, *, own_ca: bool, names: list[str], days: int) -> None:
    """A ``host.pem`` someone with write access left: signed by our CA (``own_ca``) or another one."""
    if own_ca:
        from cryptography.hazmat.primitives import serialization

        ca_key = serialization.load_pem_private_key((creds / "ca.key").read_bytes(), password=None)
        ca_cert = x509.load_pem_x509_certificate((creds / "ca.pem").read_bytes())
    else:
        ca_key, ca_cert = new_ca(NOW)
    _, cert = new_host_certificate(ca_key, ca_cert, names, NOW, days)  # type: ignore[arg-type]
    (creds / "host.pem").write_bytes(pem(cert))


@pytest.mark.parametrize(
    ("own_ca", "names", "days", "why"),
    [
        (False, ["localhost"], 365, "it is not signed by the CA in the same folder"),
        (True, ["*.example.com", "localhost"], 365, "'*.example.com' is a wildcard"),
        (True, ["localhost"], 3650, f"it was made to last 3650 days, more than {HOST_DAYS}"),
        (True, ["localhost", "bad name!"], 365, "'bad name!' is neither a DNS name nor an IP address"),
    ],
)
def test_renew_refuses_a_host_certificate_that_is_not_one_it_would_make(
    creds: Path, own_ca: bool, names: list[str], days: int, why: str
) -> None:
    _planted(creds, own_ca=own_ca, names=names, days=days)
    before = _files(creds)
    line = _one_line(["credentials", "renew", str(creds)])
    assert f"{creds / 'host.pem'} is not a host certificate to renew: {why}" in line, line
    assert "--host-name NAME" in line
    assert _files(creds) == before


def test_renew_keeps_the_names_and_lifetime_of_a_certificate_it_made(tmp_path: Path) -> None:
    directory = tmp_path / "creds"
    create_credentials(directory, ["host.example"], valid_days=90)
    renew_host_certificate(directory)
    cert = x509.load_pem_x509_certificate((directory / "host.pem").read_bytes())
    assert "host.example" in names_of(cert) and lifetime_days(cert) == 90


def test_a_wildcard_host_name_is_refused_when_credentials_are_made(tmp_path: Path) -> None:
    line = _one_line(["credentials", "create", str(tmp_path / "creds"), "--host-name", "*.example.com"])
    assert "--host-name: '*.example.com' is a wildcard" in line
    assert not (tmp_path / "creds").exists() or list((tmp_path / "creds").iterdir()) == []


# --- item 19: a dangling symbolic link is one line, not a traceback -------------------------------------


@pytest.mark.parametrize("name", ["ca.pem", "host.key", "worker.token"])
def test_create_with_a_dangling_link_in_the_folder_is_one_line(tmp_path: Path, name: str) -> None:
    directory = tmp_path / "creds"
    directory.mkdir(mode=0o700)
    (directory / name).symlink_to(tmp_path / "nowhere")
    line = _one_line(["credentials", "create", str(directory)])
    expected = f"{directory} already holds {name}; pick an empty directory (nothing was written)"
    assert line == f"handoffs: {expected}"
    assert [p.name for p in directory.iterdir()] == [name]
    assert not (tmp_path / "nowhere").exists()


def test_create_in_a_folder_that_is_a_dangling_link_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "creds").symlink_to(tmp_path / "nowhere")
    line = _one_line(["credentials", "create", str(tmp_path / "creds")])
    assert line.startswith(f"handoffs: cannot make the directory {tmp_path / 'creds'} (")
    assert not (tmp_path / "nowhere").exists()
