"""``handoffs credentials``, ``--credentials`` and ``--insecure`` as an operator runs them: a misconfigured
worker or front end ends with one clear line and a non-zero status, never a traceback or a retry loop."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from handoffs_runtime.distributed import launch_host

from .distributed_support import Process
from .test_distributed_cli import run


@pytest.fixture
def deployments(tmp_path: Path) -> tuple[Path, Path]:
    """Two independent deployments' credentials, made with the command itself."""
    return tmp_path / "ours", tmp_path / "theirs"


async def create(directory: Path, *names: str) -> str:
    options = [arg for name in names for arg in ("--host-name", name)]
    code, out, err = await run("credentials", "create", str(directory), *options)
    assert code == 0, err
    return out


@pytest.fixture
async def secure_host(deployments: tuple[Path, Path]) -> AsyncIterator[tuple[str, Path, Path]]:
    ours, theirs = deployments
    await create(ours)
    await create(theirs)
    host, address = await launch_host("127.0.0.1:0", "--credentials", str(ours))
    try:
        yield address, ours, theirs
    finally:
        await host.stop()


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


async def test_credentials_create_says_which_file_goes_where(tmp_path: Path) -> None:
    out = await create(tmp_path / "creds", "gateway.example")
    assert "wrote ca.pem, ca.key, host.pem, host.key, worker.token, frontend.token" in out
    assert "each worker ca.pem and worker.token" in out
    code, _, err = await run("credentials", "create", str(tmp_path / "creds"))
    assert code == 2 and "already holds" in one_line(err)
    code, out, _ = await run("credentials", "rotate", str(tmp_path / "creds"), "--role", "frontend")
    assert code == 0 and "restart the host and every frontend" in out


def mixed(ours: Path, theirs: Path, tmp: Path) -> Path:
    """Our CA, their tokens: TLS works, the token does not."""
    directory = tmp / "mixed"
    directory.mkdir()
    shutil.copy(ours / "ca.pem", directory)
    for token in ("worker.token", "frontend.token"):
        shutil.copy(theirs / token, directory)
    return directory


async def test_misconfigured_workers_and_front_ends_end_with_one_clear_line(
    secure_host: tuple[str, Path, Path], tmp_path: Path
) -> None:
    address, ours, theirs = secure_host
    wrong_token = str(mixed(ours, theirs, tmp_path))
    cases = [
        (["worker", "--host", address, "--credentials", wrong_token], "refused this worker's token"),
        (["chat", "--host", address, "--credentials", wrong_token], "refused this frontend's token"),
        (["worker", "--host", address, "--credentials", str(theirs)], "not signed by the CA in ca.pem"),
        (["chat", "--host", address, "--credentials", str(theirs)], "not signed by the CA in ca.pem"),
        (["worker", "--host", address], "requires TLS and credentials: pass --credentials DIR"),
        (["chat", "--host", address], "requires TLS and credentials: pass --credentials DIR"),
    ]
    for args, expected in cases:
        code, _, err = await run(*args)
        assert code == 2, (args, err)
        line = one_line(err)
        assert line.startswith("handoffs: ") and expected in line, (args, line)


async def test_a_tls_client_of_a_plain_host_is_told_so(tmp_path: Path) -> None:
    await create(tmp_path / "creds")
    host, address = await launch_host("127.0.0.1:0")
    try:
        code, _, err = await run("worker", "--host", address, "--credentials", str(tmp_path / "creds"))
        assert code == 2 and "does not speak TLS" in one_line(err)
    finally:
        await host.stop()


async def test_a_host_says_who_can_join_and_refuses_the_network_without_credentials() -> None:
    started: list[Process] = []
    try:
        host, _ = await launch_host("127.0.0.1:0")
        started.append(host)
        assert "no credentials" in host.lines[-1]
        code, _, err = await run("host", "--address", "0.0.0.0:0")
        assert code == 2 and "refusing to listen on 0.0.0.0:0 without credentials" in one_line(err)
        exposed, _ = await launch_host("0.0.0.0:0", "--insecure")
        started.append(exposed)
    finally:
        for process in started:
            await process.stop()
    assert started[0].proc.stderr is not None and started[1].proc.stderr is not None
    assert "every process and user on it can join" in (await started[0].proc.stderr.read()).decode()
    assert "read every conversation" in (await started[1].proc.stderr.read()).decode()
