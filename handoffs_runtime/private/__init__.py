"""Others' private parts, fenced: every shortcut through autogen's and pydantic's internals.

The hot path builds topics, agent ids, messages and agents for every session, and the public
constructors re-check what is valid by construction. The shortcuts that skip those checks reach into
private modules and names of autogen-core and pydantic; they live here, and nowhere else (the runtime
subclasses in ``runtime/single_threaded.py``, ``distributed/worker_runtime.py`` and
``distributed/host_servicer.py`` aside, which extend private classes), so an upgrade breaks in this one
named place. autogen-ext's gRPC and OpenAI parts are fenced beside it, in ``private/autogen_grpc.py`` and
``private/autogen_openai.py``: only what uses gRPC or OpenAI imports them, so importing this module
stays cheap. Nothing here costs more than the inline code it replaced: callers bind the functions as
they are (``topics.session_topic`` is ``topic_id_checked_once``) or derive from the class
(``SessionAgent``), with no call in between.

At import the module checks two things. The installed versions against ``WRITTEN_FOR`` (for the whole
fence): a mismatch is a one-line ``PrivatePartsVersionWarning`` (a warning, not a log line: it names its
category, so a test run or a deployment can make it an error with ``-W error::...`` or silence it once
the new combination is tested). And every private name it relies on: one that is gone, or a stock
constructor that now sets more than the shortcut sets, is a ``PrivatePartsError`` at import, never a
wrong object mid-turn; each module of the fence checks its own the same way (``require``).
"""

from __future__ import annotations

import dis
import warnings
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import fields
from importlib import metadata
from operator import itemgetter
from types import CodeType
from typing import Any, ClassVar, TypeVar

from autogen_core import (
    Agent,
    AgentId,
    AgentInstantiationContext,
    AgentRuntime,
    BaseAgent,
    MessageContext,
    MessageHandlerContext,
    RoutedAgent,
    SingleThreadedAgentRuntime,
    TopicId,
    message_handler,
)
from pydantic import BaseModel

WRITTEN_FOR: Mapping[str, str] = {"autogen-core": "0.7.5", "autogen-ext": "0.7.5", "pydantic": "2.14"}
"""The distributions whose private parts this module uses, and the versions it was written for (a
version with fewer parts matches any release that starts with it: pydantic keeps these within a minor)."""


class PrivatePartsVersionWarning(UserWarning):
    """The installed autogen or pydantic is not the version the shortcuts here were written for."""


class PrivatePartsError(ImportError):
    """A private part of autogen or pydantic the shortcuts here rely on is gone or has changed."""


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution``, or ``None`` when it is not installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _matches(installed: str, written_for: str) -> bool:
    return installed.split(".")[: written_for.count(".") + 1] == written_for.split(".")


def version_mismatch() -> str | None:
    """One line naming the versions written for and those installed, or ``None`` when they match."""
    installed = {name: installed_version(name) for name in WRITTEN_FOR}
    if all(version is None or _matches(version, WRITTEN_FOR[name]) for name, version in installed.items()):
        return None
    wanted = ", ".join(f"{name} {version}" for name, version in WRITTEN_FOR.items())
    found = ", ".join(f"{name} {version or 'not installed'}" for name, version in installed.items())
    return (
        f"handoffs_runtime.private was written for {wanted}; installed: {found}. Its shortcuts through their "
        "private parts may misbehave: run the test suite, then update WRITTEN_FOR"
    )


def check_versions() -> None:
    """Warn, in one line, when the installed versions are not those this module was written for."""
    mismatch = version_mismatch()
    if mismatch is not None:
        warnings.warn(mismatch, PrivatePartsVersionWarning, stacklevel=2)


try:  # the private modules; a rename is reported by the check below, in one place
    from autogen_core._agent_id import is_valid_agent_type
    from autogen_core._component_config import WELL_KNOWN_PROVIDERS
    from autogen_core._routed_agent import MessageHandler
    from autogen_core._runtime_impl_helpers import SubscriptionManager
    from autogen_core._serialization import SerializationRegistry
    from autogen_core._single_threaded_agent_runtime import PublishMessageEnvelope
    from autogen_core._type_helpers import AnyType
except ImportError as error:  # an autogen-core this was not written for
    raise PrivatePartsError(f"{error}; {version_mismatch() or 'the versions match'}") from error

__all__ = [
    "AGENT_INSTANTIATION_CONTEXT",
    "MESSAGE_HANDLER_CONTEXT",
    "WELL_KNOWN_PROVIDERS",
    "WRITTEN_FOR",
    "HandlerParts",
    "HandlerTable",
    "KnownAgentId",
    "PrivatePartsError",
    "PrivatePartsVersionWarning",
    "PublishMessageEnvelope",
    "SerializationRegistry",
    "SubscriptionManager",
    "TableSharingRoutedAgent",
    "agent_id_of",
    "cached_routes",
    "check_versions",
    "constructed_model",
    "handler_parts",
    "installed_version",
    "is_running",
    "is_valid_agent_type",
    "missing_private_parts",
    "model_raw_config",
    "runtime_state",
    "topic_id_checked_once",
    "version_mismatch",
]

MESSAGE_HANDLER_CONTEXT: ContextVar[AgentId] = MessageHandlerContext._MESSAGE_HANDLER_CONTEXT
"""What ``MessageHandlerContext.agent_id()`` reads: set and reset directly, without autogen's
generator-based context manager, around each delivery."""

AGENT_INSTANTIATION_CONTEXT: ContextVar[tuple[Any, AgentId]] = (
    AgentInstantiationContext._AGENT_INSTANTIATION_CONTEXT_VAR
)
"""``(runtime, agent id)`` while an agent factory runs: what ``AgentInstantiationContext`` reads."""


# --- topics and agent ids without their regular expressions -----------------------------------------

_new = object.__new__
_set = object.__setattr__


def topic_id_checked_once(topic_type: str, session_id: str) -> TopicId:
    """The topic of ``topic_type`` for one session (``topics.session_topic``): ``TopicId(topic_type,
    session_id)``, its type checked by ``TopicId``'s regular expression the first time only (an invalid
    one fails as it does there), since a runtime makes several topics per message. Later calls do what the
    frozen dataclass's ``__init__`` does, without its ``__post_init__`` check."""
    if topic_type not in _checked_topic_types:
        topic = TopicId(topic_type, source=session_id)
        if len(_checked_topic_types) < _MAX_CHECKED:
            _checked_topic_types.add(topic_type)
        return topic
    topic = _new(TopicId)
    fields = topic.__dict__  # a frozen dataclass's fields, set without its frozen __setattr__'s two calls
    fields["type"] = topic_type
    fields["source"] = session_id
    return topic


_checked_topic_types: set[str] = set()
_MAX_CHECKED = 1024
"""Topic types are a team's agents and a few more; a program that makes up new ones is checked each time
past this many."""


class KnownAgentId(tuple[str, str], AgentId):
    """An ``AgentId`` that is also the tuple ``(type, key)``: what ``AgentId.__hash__`` hashes, so it hashes
    and compares equal as the stock one does, but in C. The runtime looks agents up by id in dictionaries
    several times per message, and the stock id's ``__hash__`` and ``__eq__`` are Python code (about 1800
    and 2400 CPU instructions a lookup). Made by :func:`agent_id_of` only; compared with a stock id, the
    stock ``__eq__`` answers (a tuple's gives way to it)."""

    __slots__ = ()
    _type = property(itemgetter(0))  # what AgentId's own methods read
    _key = property(itemgetter(1))
    type = property(itemgetter(0), doc="The agent's type.")
    key = property(itemgetter(1), doc="The agent's key: the session, or a worker's key within it.")
    __str__ = AgentId.__str__
    __repr__ = AgentId.__repr__


_new_tuple = tuple.__new__


def agent_id_of(agent_type: str, key: str) -> AgentId:
    """``AgentId(agent_type, key)`` for an ``agent_type`` known to be valid (a registered or subscribed
    agent type that was checked): the constructor checks it with a regular expression on every call, and a
    runtime makes several agent ids per message. A :class:`KnownAgentId`."""
    agent_id: AgentId = _new_tuple(KnownAgentId, (agent_type, key))
    return agent_id


# --- pydantic models without re-validation ---------------------------------------------------------

_Model = TypeVar("_Model", bound=BaseModel)


_EVERY_FIELD: dict[type[BaseModel], set[str]] = {}
"""Each model's set of all its fields, shared by the instances ``constructed_model`` builds: every field
is set, so pydantic's one change to it (adding a field as it is assigned) adds nothing, and a session in
flight carries no set per message (about 240 bytes each)."""


def constructed_model(cls: type[_Model], values: dict[str, Any]) -> _Model:
    """``cls.model_construct(**values)`` when ``values`` holds every field, in order, of a model without
    aliases, extra fields, private attributes or a post-init hook (``UserTask``, ``AgentResponse``): what
    pydantic does then, without its walk over the fields looking for aliases and defaults."""
    model = cls.__new__(cls)
    model.__dict__.update(values)  # the fresh instance's own dict: one call fewer than setting the slot
    every = _EVERY_FIELD.get(cls)
    if every is None:
        every = _EVERY_FIELD[cls] = set(cls.model_fields)
    _set(model, "__pydantic_fields_set__", every)
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


# --- a RoutedAgent that finds its handlers once per class ------------------------------------------

HandlerTable = defaultdict[type[Any], list[MessageHandler[Any, Any, Any]]]
"""A ``RoutedAgent``'s routing: message type -> its handlers, in the order the agent tries them."""


class _OwnCopy:
    """Stands for ``BaseAgent``'s read-only property of the same name: an instance's own copy of its value
    (set once, as the agent is built) is read without the property's call, else the property is."""

    __slots__ = ("_property",)

    def __init__(self, read: property) -> None:
        self._property = read

    def __get__(self, instance: object, owner: type[Any] | None = None) -> Any:
        return self._property if instance is None else self._property.__get__(instance, owner)


class TableSharingRoutedAgent(RoutedAgent):
    """A ``RoutedAgent`` whose routing table is found once per class and shared by its instances (the
    stock one walks ``dir(cls)`` on every construction), and that reads the instantiation context once
    instead of three times. The table is read only: ``RoutedAgent`` routes with ``.get()``. Its ``id``
    and ``runtime``, read several times per message, are the instance's own attributes once it is built
    in a runtime (else ``BaseAgent``'s properties, as before)."""

    _handler_tables: ClassVar[dict[type[Any], HandlerTable]] = {}
    id: AgentId = _OwnCopy(vars(BaseAgent)["id"])  # type: ignore[assignment]
    runtime: AgentRuntime = _OwnCopy(vars(BaseAgent)["runtime"])  # type: ignore[assignment]

    def __init__(self, description: str) -> None:
        cls = type(self)
        table = TableSharingRoutedAgent._handler_tables.get(cls)
        if table is None:
            table = defaultdict(list)
            for handler in cls._discover_handlers():
                for target_type in handler.target_types:
                    table[target_type].append(handler)
            TableSharingRoutedAgent._handler_tables[cls] = table
        self._handlers = table
        # What BaseAgent.__init__ does after routing, reading the instantiation context once.
        instantiating = AGENT_INSTANTIATION_CONTEXT.get(None)
        if instantiating is not None:
            self._runtime, self._id = instantiating
            self.runtime, self.id = instantiating  # read without BaseAgent's properties' calls
        if not isinstance(description, str):
            raise ValueError("Agent description must be a string")
        self._description = description


# --- a message handler without autogen's wrapper coroutine ---------------------------------------------

HandlerParts = tuple[
    Callable[..., Awaitable[Any]],
    tuple[type[Any], ...],
    tuple[type[Any], ...] | None,
    Callable[[Any, MessageContext], bool] | None,
]
"""A handler's function, its message types, its return types (``None``: any) and its router (``None``: the
default, which takes every message)."""


async def _sample(self: Any, message: int, ctx: MessageContext) -> None:
    """A handler whose wrapper shows what ``message_handler`` builds."""


_SAMPLE: Any = message_handler(_sample)
_WRAPPER: CodeType = _SAMPLE.__code__
_TAKES_ALL: CodeType = _SAMPLE.router.__code__


def handler_parts(handler: Callable[..., Any]) -> HandlerParts | None:
    """What ``message_handler``'s strict wrapper closes over, for a runtime that does its checks inline
    without the wrapper's coroutine (one per delivery); ``None`` for any other handler (``event``, ``rpc``,
    a non-strict one, someone's own), which is called as it is."""
    if getattr(handler, "__code__", None) is not _WRAPPER:
        return None
    cells = dict(zip(_WRAPPER.co_freevars, (c.cell_contents for c in handler.__closure__ or ()), strict=True))
    if cells["strict"] is not True:
        return None
    returns: tuple[type[Any], ...] = tuple(cells["return_types"])
    router = getattr(handler, "router", None)
    takes_all = getattr(router, "__code__", None) is _TAKES_ALL
    return (
        cells["func"],
        tuple(cells["target_types"]),
        None if AnyType in returns else returns,
        (None if takes_all else router),
    )


# --- the stock runtime's state, which it has no public way to read ---------------------------------


def runtime_state(
    runtime: SingleThreadedAgentRuntime,
) -> tuple[dict[AgentId, Agent], SubscriptionManager, set[str]]:
    """A stock runtime's agent instances, subscription manager and registered agent types: it keeps an
    instance per agent type and session for ever, and releasing a session forgets them by hand."""
    return runtime._instantiated_agents, runtime._subscription_manager, runtime._known_agent_names


def cached_routes(subscriptions: SubscriptionManager) -> tuple[set[TopicId], dict[TopicId, list[AgentId]]]:
    """The topics a stock ``SubscriptionManager`` has seen and the recipients it cached for each: it
    caches every topic for ever, and releasing a session forgets its topics by hand."""
    return subscriptions._seen_topics, subscriptions._subscribed_recipients


def is_running(runtime: SingleThreadedAgentRuntime) -> bool:
    """Whether ``runtime`` was started and not stopped: ``stop()`` raises otherwise, and a chat stopped
    early (Ctrl-C) must stop it without knowing how far it got."""
    return runtime._run_context is not None


def model_raw_config(client: object) -> object:
    """The configuration an autogen-ext OpenAI client was built from (``None`` for other clients): the
    model's name for a banner. Not checked at import: reading it is optional (``getattr`` with a default)
    and checking would import the OpenAI client on every start."""
    return getattr(client, "_raw_config", None)


# --- what the shortcuts rely on ------------------------------------------------------------------


def stored_attributes(function: Callable[..., Any]) -> set[str]:
    """The attribute names ``function`` assigns: what a stock constructor sets, read from its bytecode."""
    return {str(i.argval) for i in dis.get_instructions(function) if i.opname == "STORE_ATTR"}


def missing_private_parts() -> list[str]:
    """What the shortcuts above rely on and the installed autogen-core or pydantic no longer has, each as
    a sentence; empty when all is there."""
    return missing_parts(_PRIVATE_PARTS)


_PRIVATE_PARTS: Mapping[str, Callable[[], bool]] = {
    "TopicId is a dataclass of type and source, kept in its instance's __dict__": lambda: (
        [f.name for f in fields(TopicId)] == ["type", "source"] and "__slots__" not in vars(TopicId)
    ),
    "AgentId.__init__ sets _type and _key only": lambda: (
        stored_attributes(AgentId.__init__) == {"_type", "_key"}
    ),
    "AgentId hashes as the tuple (type, key) and equals a KnownAgentId of them both ways": lambda: _agrees(
        AgentId("t", "k"), _new_tuple(KnownAgentId, ("t", "k"))
    ),
    "RoutedAgent.__init__ sets _handlers only": lambda: (
        stored_attributes(RoutedAgent.__init__) == {"_handlers"}
    ),
    "RoutedAgent has _discover_handlers": lambda: callable(getattr(RoutedAgent, "_discover_handlers", None)),
    "BaseAgent.__init__ sets _runtime, _id and _description only": lambda: (
        stored_attributes(BaseAgent.__init__) == {"_runtime", "_id", "_description"}
    ),
    "the agent contexts are context variables": lambda: (
        isinstance(getattr(MessageHandlerContext, "_MESSAGE_HANDLER_CONTEXT", None), ContextVar)
        and isinstance(
            getattr(AgentInstantiationContext, "_AGENT_INSTANTIATION_CONTEXT_VAR", None), ContextVar
        )
    ),
    "the stock runtime keeps _instantiated_agents, _subscription_manager and _run_context": lambda: (
        {"_instantiated_agents", "_subscription_manager", "_run_context"}
        <= stored_attributes(SingleThreadedAgentRuntime.__init__)
    ),
    "SingleThreadedAgentRuntime has _known_agent_names": lambda: isinstance(
        getattr(SingleThreadedAgentRuntime, "_known_agent_names", None), property
    ),
    "SubscriptionManager keeps _seen_topics and _subscribed_recipients": lambda: (
        {"_seen_topics", "_subscribed_recipients"} <= stored_attributes(SubscriptionManager.__init__)
    ),
    "message_handler's wrapper closes over func, return_types, strict and target_types": lambda: (
        _WRAPPER.co_freevars == ("func", "return_types", "strict", "target_types")
    ),
    "BaseModel keeps __pydantic_fields_set__, __pydantic_extra__ and __pydantic_private__": lambda: (
        {"__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"}
        <= set(getattr(BaseModel, "__slots__", ()))
    ),
}
"""What the shortcuts above rely on, each a sentence that must hold (checked at import)."""


def _agrees(stock: AgentId, known: AgentId) -> bool:
    different = _new_tuple(KnownAgentId, ("t", "other"))
    return (
        hash(stock) == hash(known)
        and stock == known
        and known == stock
        and stock != different
        and different != stock
        and str(known) == str(stock)
        and repr(known) == repr(stock)
    )


def missing_parts(checks: Mapping[str, Callable[[], bool]]) -> list[str]:
    """Each sentence of ``checks`` that no longer holds, said so; empty when all hold."""
    return [f"{what}: no longer true" for what, holds in checks.items() if not holds()]


def require(checks: Mapping[str, Callable[[], bool]]) -> None:
    """Raise ``PrivatePartsError`` naming each sentence of ``checks`` that no longer holds, and the versions:
    what each fenced module does at import."""
    missing = missing_parts(checks)
    if missing:
        raise PrivatePartsError(
            f"{'; '.join(missing)} ({version_mismatch() or 'on the versions this was written for'})"
        )


def _check_private_parts() -> None:
    require(_PRIVATE_PARTS)


_check_private_parts()
check_versions()
