"""Credentials over time and in the file system: certificates that expire and are renewed, and files
others could read or replace. Certificates are made in the past by the tests themselves."""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
from pathlib import Path

import grpc  # type: ignore[import-untyped]
import pytest
from cryptography import x509

from handoffs_runtime import QueueChannel
from handoffs_runtime.distributed import FrontEnd, Host, start_worker
from handoffs_runtime.distributed.certificates import day, expires, lifetime_days, names_of
from handoffs_runtime.distributed.credentials import (
    ClientCredentials,
    HostCredentials,
    create_credentials,
    renew_host_certificate,
)
from handoffs_runtime.errors import DistributedError
from handoffs_runtime.models.offline import OfflineModel
from handoffs_runtime.teams.acme import acme_team

from .test_distributed_cli import run
from .test_security_cli import one_line

TEAM = acme_team()
NOW = datetime.datetime.now(datetime.UTC)
EXPIRED = NOW - datetime.timedelta(days=900)
"""Made 900 days ago: the 825-day host certificate expired 75 days ago."""


def _expired_credentials(tmp_path: Path) -> tuple[Path, str]:
    directory = tmp_path / "creds"
    create_credentials(directory, now=EXPIRED)
    return directory, day(expires((directory / "host.pem").read_bytes()))


async def test_an_expired_host_certificate_stops_the_host_at_start_with_one_line(tmp_path: Path) -> None:
    directory, ended = _expired_credentials(tmp_path)
    code, _, err = await run("host", "--address", "127.0.0.1:0", "--credentials", str(directory))
    assert code == 2
    line = one_line(err)
    assert f"the host's certificate expired on {ended}" in line
    assert f"handoffs credentials renew {directory}" in line


async def test_a_client_of_a_host_with_an_expired_certificate_is_told_it_expired_not_wrong_ca(
    tmp_path: Path,
) -> None:
    directory, ended = _expired_credentials(tmp_path)
    server = grpc.aio.server()  # a host that ignores the expiry, as an old version would
    port = server.add_secure_port("127.0.0.1:0", HostCredentials.load(directory).server_credentials())
    await server.start()
    try:
        for command in ("worker", "chat"):
            code, _, err = await run(command, "--host", f"127.0.0.1:{port}", "--credentials", str(directory))
            line = one_line(err)
            assert code == 2 and f"the host's certificate expired on {ended}" in line, line
            assert "handoffs credentials renew" in line and "wrong CA" not in line
    finally:
        await server.stop(0)


async def test_renew_makes_an_expired_deployment_work_again_with_the_same_ca_and_tokens(
    tmp_path: Path,
) -> None:
    directory, _ = _expired_credentials(tmp_path)
    kept = {name: (directory / name).read_bytes() for name in ("ca.pem", "worker.token", "frontend.token")}
    old_certificate = (directory / "host.pem").read_bytes()
    code, out, err = await run("credentials", "renew", str(directory))
    assert code == 0, err
    assert "restart the host" in out
    assert {name: (directory / name).read_bytes() for name in kept} == kept
    assert (directory / "host.pem").read_bytes() != old_certificate
    assert expires((directory / "host.pem").read_bytes()) > NOW + datetime.timedelta(days=800)
    async with Host("127.0.0.1:0", credentials=directory, agent_types=TEAM.names) as host:
        address = str(host.address)
        workers = [
            (await start_worker(TEAM, address, model=OfflineModel(), agents=agents, credentials=directory))[0]
            for agents in (["TriageAgent"], ["IssuesAndRepairsAgent", "SalesAgent", "HumanAgent"])
        ]
        try:
            channel = QueueChannel()
            async with FrontEnd(TEAM, address, channel, credentials=directory) as front:
                await front.open("alice")
                await channel.say("alice", "hello")
                assert await channel.next_output("alice", 30) is not None
                await channel.leave("alice")
                await front.wait("alice")
        finally:
            await asyncio.gather(*(worker.stop() for worker in workers))


def test_a_renewed_host_certificate_lasts_as_long_as_the_one_it_replaces(tmp_path: Path) -> None:
    create_credentials(tmp_path, ["gateway.example"], valid_days=90, now=NOW - datetime.timedelta(days=80))
    renew_host_certificate(tmp_path)
    renewed = x509.load_pem_x509_certificate((tmp_path / "host.pem").read_bytes())
    assert lifetime_days(renewed) == 90 and renewed.not_valid_after_utc > NOW + datetime.timedelta(days=89)
    assert "gateway.example" in names_of(renewed)


def test_renewing_under_an_expired_ca_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    create_credentials(tmp_path, now=NOW - datetime.timedelta(days=3700))  # the CA lasts 3650 days
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(DistributedError, match=r"the CA in .* expired on .*create new credentials"):
        renew_host_certificate(tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


async def test_a_host_certificate_about_to_expire_is_warned_of_at_start_and_daily(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "creds"
    create_credentials(directory, now=NOW - datetime.timedelta(days=810))  # 15 days left
    caplog.set_level(logging.WARNING, "handoffs_runtime.distributed")
    async with Host("127.0.0.1:0", credentials=directory):
        pass
    warned = [r.getMessage() for r in caplog.records if "expires on" in r.getMessage()]
    assert len(warned) == 1 and "(in 14 days)" in warned[0] and "credentials renew" in warned[0]
    reminders = asyncio.ensure_future(HostCredentials.load(directory).remind_expiry(every=0.01))
    try:
        async with asyncio.timeout(10):  # a guard against a hang, not a measurement
            while len([r for r in caplog.records if "expires on" in r.getMessage()]) < 3:
                await asyncio.sleep(0.01)
    finally:
        reminders.cancel()


async def test_credentials_are_not_created_in_a_folder_anyone_may_write_to(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    code, _, err = await run("credentials", "create", str(shared))
    assert code == 2 and f"run `chmod 700 {shared}`" in one_line(err)
    assert list(shared.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "mode", "fix"),
    [("worker.token", 0o644, "chmod 600"), ("host.key", 0o640, "chmod 600"), ("ca.pem", 0o666, "chmod 644")],
)
def test_credentials_others_may_read_or_replace_are_refused_naming_the_file_and_the_fix(
    tmp_path: Path, name: str, mode: int, fix: str
) -> None:
    directory = tmp_path / "creds"
    create_credentials(directory)
    (directory / "ca.pem").chmod(0o644)  # a certificate is public: readable by others is fine
    ClientCredentials.load(directory, "worker")
    HostCredentials.load(directory)
    (directory / name).chmod(mode)
    with pytest.raises(DistributedError, match=f"run `{fix} {directory / name}`"):
        if name == "host.key":
            HostCredentials.load(directory)
        else:
            ClientCredentials.load(directory, "worker")


def test_loading_from_a_folder_anyone_may_write_to_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "creds"
    create_credentials(directory)
    os.chmod(directory, 0o777)
    with pytest.raises(DistributedError, match=f"run `chmod 700 {directory}`"):
        HostCredentials.load(directory)
    with pytest.raises(DistributedError, match=f"run `chmod 700 {directory}`"):
        ClientCredentials.load(directory, "worker")
