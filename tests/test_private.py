"""The fenced module says when autogen or pydantic is not the version it was written for, in one line, and
names a private part that is gone instead of building wrong objects mid-turn."""

from __future__ import annotations

import warnings

import pytest
from autogen_core import AgentId, RoutedAgent, SingleThreadedAgentRuntime
from autogen_ext.models.openai import BaseOpenAIChatCompletionClient

from handoffs_runtime import private
from handoffs_runtime.private import (
    PrivatePartsError,
    PrivatePartsVersionWarning,
    autogen_grpc,
    autogen_openai,
)
from handoffs_runtime.private.autogen_grpc import HostConnectionParts


def installed(versions: dict[str, str | None]) -> object:
    return lambda distribution: versions[distribution]


def test_a_version_it_was_not_written_for_is_reported_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    versions = {"autogen-core": "0.8.0", "autogen-ext": "0.7.5", "pydantic": "2.14.9"}
    monkeypatch.setattr(private, "installed_version", installed(versions))
    with pytest.warns(PrivatePartsVersionWarning) as record:
        private.check_versions()
    assert len(record) == 1
    message = str(record[0].message)
    assert "\n" not in message
    assert "written for autogen-core 0.7.5, autogen-ext 0.7.5, pydantic 2.14; " in message
    assert "installed: autogen-core 0.8.0, autogen-ext 0.7.5, pydantic 2.14.9" in message


def test_a_pydantic_of_another_minor_version_is_reported_too(monkeypatch: pytest.MonkeyPatch) -> None:
    versions = {"autogen-core": "0.7.5", "autogen-ext": None, "pydantic": "2.15.0"}
    monkeypatch.setattr(private, "installed_version", installed(versions))
    with pytest.warns(
        PrivatePartsVersionWarning, match=r"installed: .*autogen-ext not installed, pydantic 2\.15\.0"
    ):
        private.check_versions()


def test_the_versions_it_was_written_for_pass_silently(monkeypatch: pytest.MonkeyPatch) -> None:
    """A patch release of pydantic keeps the private parts used here; autogen has to match exactly."""
    versions = {"autogen-core": "0.7.5", "autogen-ext": "0.7.5", "pydantic": "2.14.1"}
    monkeypatch.setattr(private, "installed_version", installed(versions))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        private.check_versions()


def test_it_was_written_for_the_installed_versions() -> None:
    """If this fails, autogen or pydantic was upgraded: run the whole suite, then update WRITTEN_FOR."""
    assert private.version_mismatch() is None
    assert private.missing_private_parts() == []


def test_a_private_part_that_is_gone_fails_the_import_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(RoutedAgent, "_discover_handlers")
    assert private.missing_private_parts() == ["RoutedAgent has _discover_handlers: no longer true"]
    with pytest.raises(PrivatePartsError, match="RoutedAgent has _discover_handlers: no longer true"):
        private._check_private_parts()


def test_a_stock_constructor_that_sets_more_than_the_shortcut_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``agent_id_of`` sets what ``AgentId.__init__`` sets: a new attribute there would be missing here."""

    def init(self: AgentId, type: str, key: str) -> None:
        self._type, self._key, self._namespace = type, key, ""  # type: ignore[attr-defined]

    monkeypatch.setattr(AgentId, "__init__", init)
    assert private.missing_private_parts() == ["AgentId.__init__ sets _type and _key only: no longer true"]


def test_an_agent_id_that_no_longer_hashes_as_its_tuple_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """``agent_id_of``'s ids are tuples so that they hash in C: valid only while a stock id hashes so too."""
    monkeypatch.setattr(AgentId, "__hash__", lambda self: hash(str(self)))
    assert private.missing_private_parts() == [
        "AgentId hashes as the tuple (type, key) and equals a KnownAgentId of them both ways: no longer true"
    ]


async def test_the_runtime_state_it_reads_is_the_runtimes() -> None:
    runtime = SingleThreadedAgentRuntime()
    agents, subscriptions, agent_types = private.runtime_state(runtime)
    assert (agents, agent_types) == ({}, set()) and subscriptions.subscriptions == []
    assert private.cached_routes(subscriptions) == (set(), {})
    assert not private.is_running(runtime)
    runtime.start()
    assert private.is_running(runtime)
    await runtime.stop()
    assert not private.is_running(runtime)


def test_each_module_of_the_fence_holds_on_the_installed_versions() -> None:
    """The fence is one package: autogen-ext's gRPC and OpenAI parts are checked like the rest."""
    assert private.missing_parts(autogen_grpc.PRIVATE_PARTS) == []
    assert private.missing_parts(autogen_openai.PRIVATE_PARTS) == []


def test_a_replaced_private_method_whose_parameters_changed_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    async def changed(self: object, tool_params: object, oai_messages: object, create_args: object) -> None:
        pass

    monkeypatch.setattr(BaseOpenAIChatCompletionClient, "_create_stream_chunks", changed)
    with pytest.raises(PrivatePartsError, match=r"has _create_stream_chunks\(.*\): no longer true"):
        private.require(autogen_openai.PRIVATE_PARTS)


def test_a_host_connection_that_keeps_its_state_elsewhere_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def init(self: HostConnectionParts, channel: object, stub: object) -> None:
        self._channel, self._stub = channel, stub  # type: ignore[assignment]

    monkeypatch.setattr(HostConnectionParts.__mro__[1], "__init__", init)  # autogen-ext's HostConnection
    assert private.missing_parts(autogen_grpc.PRIVATE_PARTS) == [
        "HostConnection keeps _channel, _send_queue, _recv_queue and _connection_task: no longer true"
    ]
