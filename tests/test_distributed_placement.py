"""Placement and options of the distributed mode, without processes: shards, front-end sessions, addresses."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest
from autogen_core import TopicId, TypePrefixSubscription, TypeSubscription
from autogen_core._runtime_impl_helpers import SubscriptionManager

from handoffs_runtime.distributed import (
    Address,
    IndexedSubscriptions,
    SessionSubscription,
    max_message_bytes,
    parse_shard_option,
)
from handoffs_runtime.distributed.host import security_notice
from handoffs_runtime.distributed.host_servicer import placement_conflict
from handoffs_runtime.errors import DistributedError
from handoffs_runtime.topics import (
    accepts,
    base_agent_type,
    check_session_id,
    parse_shard,
    session_agent_type,
    shard_agent_type,
    shard_of,
)


def test_shard_of_is_a_stable_hash_not_pythons_salted_one() -> None:
    digest = hashlib.blake2b(b"session-42", digest_size=8).digest()
    assert shard_of("session-42", 7) == int.from_bytes(digest, "big") % 7
    assert shard_of("session-42", 1) == 0


def test_shards_spread_sessions_and_exactly_one_shard_accepts_each() -> None:
    sessions = [f"s{n}" for n in range(2000)]
    counts = Counter(shard_of(s, 4) for s in sessions)
    assert set(counts) == {0, 1, 2, 3} and min(counts.values()) > 400
    types = [shard_agent_type("SalesAgent", i, 4) for i in range(4)]
    for session in sessions[:200]:
        assert [t for t in types if accepts(t, session)] == [types[shard_of(session, 4)]]


def test_agent_type_names_round_trip() -> None:
    assert shard_agent_type("SalesAgent", 1, 4) == "SalesAgent.shard-1-of-4"
    assert parse_shard("SalesAgent.shard-1-of-4") == ("SalesAgent", 1, 4)
    assert parse_shard("SalesAgent") is None
    assert base_agent_type("SalesAgent.shard-1-of-4") == "SalesAgent"
    assert base_agent_type(session_agent_type("User", "abc-1")) == "User"
    assert accepts("User.session-abc-1", "abc-1") and not accepts("User.session-abc-1", "abc-2")
    assert accepts("TriageAgent", "anything")


@pytest.mark.parametrize("bad", [(-1, 2), (2, 2), (0, 0)])
def test_bad_shard_numbers_are_refused(bad: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="shard"):
        shard_agent_type("SalesAgent", *bad)


def test_a_session_id_that_cannot_name_an_agent_type_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="letters, digits"):
        session_agent_type("User", "a b/c")


@pytest.mark.parametrize("session", ["a.session-b", "x.shard-0-of-2", "a.session-"])
def test_a_session_id_that_would_read_as_another_placement_is_refused(session: str) -> None:
    # Without the check, the front end of "a.session-b" would be read as the front end of session "b".
    with pytest.raises(ValueError, match="pick an id without it"):
        session_agent_type("User", session)
    assert check_session_id("a.session_b-shard.2") == "a.session_b-shard.2"


@pytest.mark.parametrize(("text", "expected"), [("0/2", (0, 2)), ("3/4", (3, 4)), (None, None)])
def test_parse_shard_option(text: str | None, expected: tuple[int, int] | None) -> None:
    assert parse_shard_option(text) == expected


@pytest.mark.parametrize("text", ["2/2", "1", "a/b", "-1/2", "0/0", "1/2/3"])
def test_parse_shard_option_refuses_bad_input(text: str) -> None:
    with pytest.raises(DistributedError, match="--shard"):
        parse_shard_option(text)


def test_placement_conflicts() -> None:
    assert placement_conflict("SalesAgent.shard-1-of-2", ["SalesAgent.shard-0-of-2", "TriageAgent"]) is None
    mixed = placement_conflict("SalesAgent.shard-0-of-2", ["SalesAgent"])
    assert mixed is not None and "sharded on every worker" in mixed
    assert placement_conflict("SalesAgent", ["SalesAgent.shard-0-of-2"]) is not None
    counts = placement_conflict("SalesAgent.shard-0-of-3", ["SalesAgent.shard-1-of-2"])
    assert counts is not None and "same N" in counts
    assert placement_conflict("User.session-a", ["User.session-b", "TriageAgent"]) is None
    unpinned = placement_conflict("User.session-a", ["User.session-b", "User"])
    assert unpinned is not None and "pinned=False" in unpinned
    pinned = placement_conflict("User", ["TriageAgent", "User.session-b"])
    assert pinned is not None and "User.session-b" in pinned
    assert placement_conflict("SalesAgent.shard-0-of-2", ["SalesAgentX.shard-0-of-3"]) is None


def test_session_subscription_delivers_only_accepted_sessions() -> None:
    inner = TypeSubscription(topic_type="User", agent_type="User.session-s1")
    subscription = SessionSubscription(inner)
    assert subscription.is_match(TopicId("User", "s1"))
    assert not subscription.is_match(TopicId("User", "s2"))
    assert not subscription.is_match(TopicId("SalesAgent", "s1"))
    assert subscription.map_to_agent(TopicId("User", "s1")).type == "User.session-s1"


def test_addresses() -> None:
    assert Address.parse("127.0.0.1:50051") == Address("127.0.0.1", 50051)
    assert Address.parse("localhost:1").is_loopback
    assert not Address.parse("10.0.0.5:1").is_loopback
    assert str(Address.parse("[::1]:7")) == "[::1]:7" and Address.parse("[::1]:7").is_loopback
    for bad in ("127.0.0.1", ":80", "host:port", "h:99999"):
        with pytest.raises(DistributedError, match="HOST:PORT"):
            Address.parse(bad)


def test_message_size_limit() -> None:
    assert max_message_bytes(64) == 64 * 1024 * 1024
    with pytest.raises(DistributedError, match="positive"):
        max_message_bytes(0)


def test_a_host_without_credentials_says_who_can_join_and_refuses_the_network() -> None:
    for loopback in ("127.0.0.1:50051", "localhost:50051", "[::1]:50051"):
        notice = security_notice(Address.parse(loopback), credentials=False)
        assert notice is not None and "every process and user on it can join" in notice
    with pytest.raises(DistributedError, match=r"refusing to listen on .* without credentials"):
        security_notice(Address.parse("0.0.0.0:50051"), credentials=False)
    insecure = security_notice(Address.parse("0.0.0.0:50051"), credentials=False, insecure=True)
    assert insecure is not None and "read every conversation" in insecure
    assert security_notice(Address.parse("0.0.0.0:50051"), credentials=True) is None


async def test_indexed_subscriptions_match_like_autogens_and_keep_nothing_per_session() -> None:
    ours, theirs = IndexedSubscriptions(), SubscriptionManager()
    subscriptions = [
        TypeSubscription(topic_type="SalesAgent", agent_type="SalesAgent.shard-0-of-2"),
        TypeSubscription(topic_type="SalesAgent", agent_type="SalesAgent.shard-1-of-2"),
        TypeSubscription(topic_type="User", agent_type="User"),
        TypePrefixSubscription(topic_type_prefix="Sales", agent_type="Audit"),
    ]
    for subscription in subscriptions:
        await ours.add_subscription(subscription)
        await theirs.add_subscription(subscription)
    topics = [TopicId(t, f"s{n}") for n in range(300) for t in ("SalesAgent", "User", "Nobody")]
    for topic in topics:
        assert await ours.get_subscribed_recipients(topic) == await theirs.get_subscribed_recipients(topic)
    assert not ours._seen_topics and not ours._subscribed_recipients
    await ours.remove_subscription(subscriptions[0].id)
    assert [a.type for a in await ours.get_subscribed_recipients(TopicId("SalesAgent", "s1"))] == [
        "SalesAgent.shard-1-of-2",
        "Audit",
    ]
    with pytest.raises(ValueError, match="already exists"):
        await ours.add_subscription(subscriptions[2])
    with pytest.raises(ValueError, match="does not exist"):
        await ours.remove_subscription(subscriptions[0].id)


async def test_session_subscriptions_are_indexed_by_their_topic_type() -> None:
    ours = IndexedSubscriptions()
    await ours.add_subscription(
        SessionSubscription(TypeSubscription(topic_type="User", agent_type="User.session-a"))
    )
    await ours.add_subscription(
        SessionSubscription(TypeSubscription(topic_type="User", agent_type="User.session-b"))
    )
    assert [a.type for a in await ours.get_subscribed_recipients(TopicId("User", "b"))] == ["User.session-b"]
    assert await ours.get_subscribed_recipients(TopicId("User", "c")) == []
