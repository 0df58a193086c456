"""Trust across processes: credentials, TLS, tokens, identities the host gives, roles, and the person's side
checking who talks to it. Real hosts, workers and front ends on loopback; the attacker is ``Intruder``."""

from __future__ import annotations

import asyncio
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import grpc  # type: ignore[import-untyped]
import pytest
from autogen_core import AgentId, TopicId
from autogen_core.models import AssistantMessage
from autogen_ext.runtimes.grpc.protos import agent_worker_pb2
from cryptography import x509

from handoffs_runtime import QueueChannel, Reply, TeamSpec
from handoffs_runtime.distributed import FrontEnd, Host, WorkerRuntime, start_worker
from handoffs_runtime.distributed.auth import TokenCheck
from handoffs_runtime.distributed.credentials import ClientCredentials, create_credentials, rotate_token
from handoffs_runtime.distributed.roles import RolePolicy
from handoffs_runtime.errors import DistributedError
from handoffs_runtime.messages import (
    AgentResponse,
    Delta,
    HandoffEvent,
    Notice,
    PersonEvent,
    PersonQuestion,
    ToolFinished,
    ToolStarted,
    UserTask,
)
from handoffs_runtime.models.offline import OfflineModel
from handoffs_runtime.team.spec import streaming_team
from handoffs_runtime.teams.acme import acme_team

from .distributed_support import FAST, TIMEOUT, Process
from .intruder import Intruder
from .test_distributed import DONE, PROPOSAL, REFUND, notice, reply

TEAM = acme_team()
FILES = ["ca.pem", "ca.key", "host.pem", "host.key", "worker.token", "frontend.token"]


@pytest.fixture(scope="module")
def credentials(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("deployment") / "credentials"
    create_credentials(directory)
    return directory


@pytest.fixture(scope="module")
def other_credentials(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("other") / "credentials"
    create_credentials(directory)
    return directory


def role(directory: Path, name: str) -> ClientCredentials:
    return ClientCredentials.load(directory, name)  # type: ignore[arg-type]


@pytest.fixture
async def secure_host(credentials: Path) -> AsyncIterator[str]:
    async with Host("127.0.0.1:0", credentials=credentials, agent_types=TEAM.names, grace=0.5) as host:
        yield str(host.address)


@pytest.fixture
async def open_host() -> AsyncIterator[str]:
    """A host without credentials (loopback): the identity and grace-period rules hold here too."""
    async with Host("127.0.0.1:0", agent_types=TEAM.names, grace=0.5) as host:
        yield str(host.address)


@pytest.fixture
async def intruders() -> AsyncIterator[list[Intruder]]:
    started: list[Intruder] = []
    yield started
    await asyncio.gather(*(i.close() for i in started))


async def team_workers(address: str, credentials: Path | None, team: TeamSpec = TEAM) -> list[WorkerRuntime]:
    """The ACME team on two workers in this process (real gRPC runtimes)."""
    runtimes = []
    for agents in (["TriageAgent"], ["IssuesAndRepairsAgent", "SalesAgent", "HumanAgent"]):
        runtime, _ = await start_worker(
            team, address, model=OfflineModel(), agents=agents, backoff=FAST, credentials=credentials
        )
        runtimes.append(runtime)
    return runtimes


async def refund(channel: QueueChannel, session: str) -> None:
    """The refund conversation, asserting every line the person sees: nothing forged slips in."""
    await channel.say(session, REFUND)
    assert await notice(channel, "has joined", session) == ("↪ ACME repairs has joined")
    assert await reply(channel, session) == PROPOSAL
    await channel.say(session, "yes")
    assert await reply(channel, session) == DONE


async def until_reply(channel: QueueChannel, session: str) -> list[object]:
    """Everything the session shows up to and including the next agent reply."""
    shown: list[object] = []
    while not shown or not isinstance(shown[-1], Reply):
        shown.append(await channel.next_output(session, TIMEOUT))
    return shown


async def denied(call: asyncio.Future[None] | object, code: grpc.StatusCode) -> str:
    """Await ``call``; it must fail with ``code``. Returns the reason."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    assert caught.value.code() == code, caught.value.details()
    return str(caught.value.details())


# --- credentials -------------------------------------------------------------------------------------------


def test_credentials_are_six_owner_only_files_naming_the_hosts(tmp_path: Path) -> None:
    written = create_credentials(tmp_path / "creds", ["gateway.example", "10.1.2.3"])
    assert sorted(p.name for p in written) == sorted(FILES)
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE((tmp_path / "creds").stat().st_mode) == 0o700
    certificate = x509.load_pem_x509_certificate((tmp_path / "creds" / "host.pem").read_bytes())
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"localhost", "gateway.example"} <= set(names.get_values_for_type(x509.DNSName))
    assert {str(ip) for ip in names.get_values_for_type(x509.IPAddress)} >= {"127.0.0.1", "::1", "10.1.2.3"}
    tokens = {(tmp_path / "creds" / f).read_text() for f in ("worker.token", "frontend.token")}
    assert len(tokens) == 2 and all(len(t.strip()) >= 40 for t in tokens)


def test_credentials_never_overwrite_and_a_rotated_token_is_new(tmp_path: Path) -> None:
    create_credentials(tmp_path)
    before = (tmp_path / "worker.token").read_text()
    with pytest.raises(DistributedError, match=r"already holds ca\.pem"):
        create_credentials(tmp_path)
    assert (tmp_path / "worker.token").read_text() == before
    rotate_token(tmp_path, "worker")
    assert (tmp_path / "worker.token").read_text() != before
    assert stat.S_IMODE((tmp_path / "worker.token").stat().st_mode) == 0o600


def test_missing_credentials_say_which_file(tmp_path: Path) -> None:
    with pytest.raises(DistributedError, match=r"a worker needs .*ca\.pem"):
        ClientCredentials.load(tmp_path, "worker")
    with pytest.raises(DistributedError, match=r"host\.pem"):
        Host("127.0.0.1:0", credentials=tmp_path)


def test_the_token_check_compares_every_role_and_knows_no_other_scheme() -> None:
    check = TokenCheck({"worker": b"w-secret", "frontend": b"f-secret"})
    assert check.role_of([("authorization", "Bearer w-secret")]) == "worker"
    assert check.role_of([("authorization", "bearer f-secret")]) == "frontend"
    for metadata in ([], [("authorization", "Bearer nope")], [("authorization", "Basic w-secret")]):
        assert check.role_of(metadata) is None


def test_the_role_policy() -> None:
    policy = RolePolicy(agent_types=frozenset(TEAM.names))
    mine = {"User.session-alice"}
    assert policy.register("frontend", "User.session-alice") is None
    for refused in (
        "Spy",
        "User",
        "TriageAgent",
        "SalesAgent.shard-0-of-2",
        "User.session-",
        "User.session-a/b",
    ):
        assert "frontend credential may register only" in (policy.register("frontend", refused) or "")
    assert policy.register("worker", "SalesAgent.shard-1-of-2") is None
    assert policy.register("worker", "User") is None  # a front end of every session
    assert policy.register("worker", "Spy") is not None
    assert policy.register("worker", "User.session-bob") is not None
    assert policy.register(None, "Spy") is None  # no credentials: no roles
    assert policy.subscribe("frontend", "User.session-alice", "User", mine) is None
    assert policy.subscribe("frontend", "User.session-alice", "TriageAgent", mine) is not None
    assert policy.subscribe("worker", "Spy", "User", {"TriageAgent"}) is not None  # not its type
    task = "UserTask"
    assert policy.publish("frontend", "TriageAgent", "alice", task, "User.session-alice", mine) is None
    assert policy.publish("frontend", "TriageAgent", "bob", task, "unknown", mine) is not None
    assert policy.publish("frontend", "User", "alice", "AgentResponse", "unknown", mine) is not None
    assert policy.publish("worker", "User", "bob", "AgentResponse", "SalesAgent", mine) is not None
    assert policy.request("frontend", "User", "bob", "", mine) is not None
    progress, triage = "PersonEvent", {"TriageAgent"}
    assert policy.publish("worker", "User", "bob", progress, "TriageAgent", triage) is None
    for topic in ("SalesAgent", "HandoffEvents"):  # progress is for the person only
        reason = policy.publish("worker", topic, "bob", progress, "TriageAgent", triage) or ""
        assert f"PersonEvent goes only to the User topic, not to {topic}" in reason
    assert policy.publish(None, "SalesAgent", "bob", progress, "TriageAgent", triage) is None  # no roles
    assert policy.publish("frontend", "User", "alice", progress, "unknown", mine) is not None  # even its own


# --- end to end ----------------------------------------------------------------------------------------


async def test_the_refund_conversation_across_a_host_and_two_worker_processes_with_credentials(
    credentials: Path,
) -> None:
    started: list[Process] = []
    secured = ["--credentials", str(credentials)]
    try:
        from handoffs_runtime.distributed import launch_host, launch_worker

        host, address = await launch_host("127.0.0.1:0", *secured)
        started.append(host)
        assert "TLS, tokens required" in host.lines[-1]
        for agents in (["TriageAgent"], ["IssuesAndRepairsAgent", "SalesAgent", "HumanAgent"]):
            started.append(await launch_worker(address, agents=agents, options=secured))
        channel = QueueChannel()
        async with FrontEnd(TEAM, address, channel, credentials=credentials) as front:
            await front.open("alice")
            await refund(channel, "alice")
            await channel.leave("alice")
            await front.wait("alice")
    finally:
        await asyncio.gather(*(p.kill() for p in started))


# --- attacks -------------------------------------------------------------------------------------------


async def test_a_client_without_a_token_is_refused_and_the_secret_is_not_logged(
    secure_host: str, credentials: Path, intruders: list[Intruder], caplog: pytest.LogCaptureFixture
) -> None:
    plain = Intruder(secure_host)
    intruders.append(plain)
    await denied(plain.register("Spy"), grpc.StatusCode.UNAVAILABLE)  # no TLS: no conversation at all
    ca_only = ClientCredentials("worker", role(credentials, "worker").ca, b"guessed")
    guesser = Intruder(secure_host, ca_only)
    intruders.append(guesser)
    reason = await denied(guesser.register("Spy"), grpc.StatusCode.UNAUTHENTICATED)
    assert "not authenticated" in reason
    await denied(guesser.subscribe("User", "Spy"), grpc.StatusCode.UNAUTHENTICATED)
    await guesser.open()
    assert (await guesser.refusal()).code() == grpc.StatusCode.UNAUTHENTICATED
    assert "a token that matches no role" in caplog.text
    for secret in ("guessed", role(credentials, "worker").token.decode()):
        assert secret not in caplog.text


async def test_a_stolen_client_id_steals_nothing(open_host: str, intruders: list[Intruder]) -> None:
    workers = await team_workers(open_host, None)
    victim = workers[0]
    assert victim._host_connection is not None
    victim_id = victim._host_connection._client_id
    thief = Intruder(open_host, client_id=victim_id)
    intruders.append(thief)
    reason = await denied(thief.register("TriageAgent"), grpc.StatusCode.INVALID_ARGUMENT)
    assert "already registered by another connection" in reason and victim_id not in reason
    listing = await thief.stub.GetSubscriptions(
        agent_worker_pb2.GetSubscriptionsRequest(), metadata=thief.metadata
    )
    assert list(listing.subscriptions) == []  # nobody else's, under anybody's id
    await thief.open()  # the victim's id, on another connection: a client of its own
    await thief.close()
    channel = QueueChannel()
    async with FrontEnd(TEAM, open_host, channel, backoff=FAST) as front:
        await front.open("alice")
        await refund(channel, "alice")  # the worker still has TriageAgent and its messages
        await channel.leave("alice")
        await front.wait("alice")
    assert victim.connections == 1
    for worker in workers:
        await worker.stop()


async def test_nobody_removes_another_clients_subscription(open_host: str, intruders: list[Intruder]) -> None:
    workers = await team_workers(open_host, None)
    channel = QueueChannel()
    async with FrontEnd(TEAM, open_host, channel, backoff=FAST) as front:
        await front.open("alice")
        intruder = Intruder(open_host)
        intruders.append(intruder)
        for runtime in (front.runtime, *workers):
            for subscription in runtime._subscriptions:
                await denied(intruder.unsubscribe(subscription.id), grpc.StatusCode.NOT_FOUND)
        await refund(channel, "alice")
        await channel.leave("alice")
        await front.wait("alice")
    for worker in workers:
        await worker.stop()


async def open_when_released(front: FrontEnd, session: str) -> None:
    """Open ``session``; it is refused until the host lets a squatter's agent type go."""
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while True:
        try:
            await front.open(session)
            return
        except DistributedError:
            assert asyncio.get_running_loop().time() < deadline, "the squatter was never released"
            await asyncio.sleep(0.1)


@pytest.mark.parametrize("squatted", ["User", "User.session-bob"])
async def test_a_registration_without_a_channel_is_released_after_the_grace_period(
    squatted: str, open_host: str, intruders: list[Intruder]
) -> None:
    squatter = Intruder(open_host)
    intruders.append(squatter)
    await squatter.register(squatted)  # "User" refuses every pinned front end; the other locks bob out
    workers = await team_workers(open_host, None)
    channel = QueueChannel()
    async with FrontEnd(TEAM, open_host, channel, backoff=FAST) as front:
        await open_when_released(front, "bob")
        await refund(channel, "bob")
        await channel.leave("bob")
        await front.wait("bob")
    for worker in workers:
        await worker.stop()


async def test_a_frontend_credential_may_not_act_as_an_agent_or_reach_another_session(
    secure_host: str, credentials: Path, intruders: list[Intruder]
) -> None:
    workers = await team_workers(secure_host, credentials)
    channel = QueueChannel()
    async with FrontEnd(TEAM, secure_host, channel, credentials=credentials) as alice:
        await alice.open("alice")
        mallory = Intruder(secure_host, role(credentials, "frontend"))
        intruders.append(mallory)
        denied_code = grpc.StatusCode.PERMISSION_DENIED
        for agent_type in ("Spy", "TriageAgent", "User", "SalesAgent.shard-0-of-2"):
            reason = await denied(mallory.register(agent_type), denied_code)
            assert "frontend credential may register only User.session-<id>" in reason
        reason = await denied(mallory.register("User.session-alice"), grpc.StatusCode.INVALID_ARGUMENT)
        assert "already registered by another connection" in reason
        await mallory.register("User.session-mallory")
        for topic in ("TriageAgent", "IssuesAndRepairsAgent"):
            reason = await denied(mallory.subscribe(topic, "User.session-mallory"), denied_code)
            assert "may subscribe only to the User and HandoffEvents topics" in reason
        await denied(mallory.subscribe("User", "Spy"), denied_code)  # a type it does not hold
        for subscription in alice.runtime._subscriptions:
            await denied(mallory.unsubscribe(subscription.id), grpc.StatusCode.NOT_FOUND)
        await refund(channel, "alice")
        await channel.leave("alice")
        await alice.wait("alice")
    for worker in workers:
        await worker.stop()


FORGERIES = {
    "a question to alice's person": (
        "ask",
        PersonQuestion(prompt="please type your account password"),
        AgentId("User", "alice"),
        "may call only the team's agents of its own sessions",
    ),
    "a reply on alice's screen": (
        "publish",
        AgentResponse(
            context=[AssistantMessage(content="pay here", source="SalesAgent")],
            reply_to_topic_type="SalesAgent",
        ),
        TopicId("User", "alice"),
        "may publish only into its own sessions",
    ),
    "a handoff event in alice's transcript": (
        "publish",
        HandoffEvent(session_id="alice", source="TriageAgent", target="SalesAgent", tool="t"),
        TopicId("HandoffEvents", "alice"),
        "may publish only into its own sessions",
    ),
    "a task in alice's name": (
        "publish",
        UserTask(context=[]),
        TopicId("TriageAgent", "alice"),
        "may publish only into its own sessions",
    ),
    "words streamed onto alice's screen": (
        "publish",
        PersonEvent(event=Delta(agent="SalesAgent", text="pay here")),
        TopicId("User", "alice"),
        "may publish only into its own sessions",
    ),
    "progress into its own session": (
        "publish",
        PersonEvent(event=Delta(agent="SalesAgent", text="pay here")),
        TopicId("User", "mallory"),
        "may publish only a UserTask to the team's agents, not PersonEvent to User",
    ),
    "a reply to itself claiming to be SalesAgent": (
        "publish",
        PersonEvent(event=Notice(text="hi")),
        TopicId("User", "mallory"),
        "only an agent type of its own connection, not SalesAgent",
    ),
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
async def test_a_frontend_cannot_send_into_another_session(
    forgery: str, secure_host: str, credentials: Path, intruders: list[Intruder]
) -> None:
    how, message, target, expected = FORGERIES[forgery]
    channel = QueueChannel()
    async with FrontEnd(TEAM, secure_host, channel, credentials=credentials) as alice:
        await alice.open("alice")
        mallory = Intruder(secure_host, role(credentials, "frontend"))
        intruders.append(mallory)
        await mallory.register("User.session-mallory")
        await mallory.open()
        sender = AgentId("SalesAgent", "alice")
        if how == "ask":
            await mallory.ask(message, target, sender=None)  # type: ignore[arg-type]
        else:
            await mallory.publish(message, target, sender=sender if "SalesAgent" in expected else None)  # type: ignore[arg-type]
        refusal = await mallory.refusal()
        assert refusal.code() == grpc.StatusCode.PERMISSION_DENIED
        assert expected in (refusal.details() or "")
        assert channel.outbox("alice").empty()  # alice's screen shows nothing of it
        await channel.leave("alice")
        await alice.wait("alice")


async def test_with_credentials_a_streaming_workers_progress_reaches_its_sessions_person(
    secure_host: str, credentials: Path
) -> None:
    workers = await team_workers(secure_host, credentials, streaming_team(TEAM, stream=True))
    channel = QueueChannel(progress=True)
    async with FrontEnd(TEAM, secure_host, channel, credentials=credentials) as alice:
        await alice.open("alice")
        await channel.say("alice", REFUND)
        shown = await until_reply(channel, "alice")
        assert (
            Delta(agent=PROPOSAL[0], text=PROPOSAL[1], label="ACME repairs") in shown
        )  # the offline model writes its reply in one piece
        await channel.say("alice", "yes")
        shown = await until_reply(channel, "alice")
        tools = [
            (a.tool, a.result if isinstance(a, ToolFinished) else None)
            for a in shown
            if isinstance(a, ToolStarted | ToolFinished)
        ]
        assert tools == [
            ("look_up_item", None),
            ("look_up_item", "item_132612938"),
            ("execute_refund", None),
            ("execute_refund", "success"),
        ]
        assert shown[-1] == Reply(agent=DONE[0], text=DONE[1], label="ACME repairs")
        await channel.leave("alice")
        await alice.wait("alice")
    for worker in workers:
        await worker.stop()


# --- misconfigured clients -----------------------------------------------------------------------------


async def test_a_pinned_front_end_uses_the_frontend_token_and_an_unpinned_one_the_worker_token(
    secure_host: str, credentials: Path, other_credentials: Path
) -> None:
    workers = await team_workers(secure_host, credentials)
    mixed = other_credentials.parent / "mixed"
    mixed.mkdir()
    (mixed / "ca.pem").write_bytes((credentials / "ca.pem").read_bytes())
    (mixed / "frontend.token").write_bytes((credentials / "frontend.token").read_bytes())
    (mixed / "worker.token").write_bytes((other_credentials / "worker.token").read_bytes())
    for token in ("frontend.token", "worker.token"):
        (mixed / token).chmod(0o600)  # a token others may read is refused
    async with FrontEnd(TEAM, secure_host, QueueChannel(), credentials=mixed, backoff=FAST):
        pass  # the frontend token is right
    unpinned = FrontEnd(TEAM, secure_host, QueueChannel(), credentials=mixed, pinned=False, backoff=FAST)
    with pytest.raises(DistributedError, match="refused this worker's token"):
        await unpinned.start()
    for worker in workers:
        await worker.stop()
