"""Your own team from a file or a module: ``--team FILE.yaml|FILE.json|FILE.py|module:attribute``.

A YAML or JSON file is checked against :mod:`.file_schema`, then every reference is resolved (tools and
input types as ``module:name``, handoff targets, models as autogen component configurations) and the team
is built once to catch the rest. Every mistake is reported once, with its place in the file and, where a
near name exists, a suggestion::

    team.yaml:14: agents[2].handoffs[0].target: unknown agent 'Biling'; did you mean 'Billing'?

A ``.py`` file or a module exposes a ``TeamSpec``, or a function that returns one (``team`` unless
``:attribute`` names another). A module the file names is loaded from the file's folder when it is there
(see :mod:`.imports`: nothing else there runs); the file is read within bounds (:mod:`.file_reading`).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from autogen_core.models import ChatCompletionClient
from autogen_core.tools import Tool
from pydantic import BaseModel, ValidationError

from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.handoffs.filters import keep_last_messages, remove_all_tools
from handoffs_runtime.handoffs.handoff import Handoff, InputFilter, handoff
from handoffs_runtime.handoffs.policy import TeamPolicy
from handoffs_runtime.messages import Person
from handoffs_runtime.private import WELL_KNOWN_PROVIDERS
from handoffs_runtime.team.build import build_team
from handoffs_runtime.team.file_reading import Lines, parse_json, parse_yaml, read_team_text
from handoffs_runtime.team.file_schema import (
    AgentEntry,
    HandoffEntry,
    McpEntry,
    ModelEntry,
    PolicyEntry,
    TeamFile,
    ToolEntry,
)
from handoffs_runtime.team.imports import NameClashError, import_named, load_python_file
from handoffs_runtime.team.spec import AgentSpec, TeamSpec
from handoffs_runtime.tools.approval import requires_approval
from handoffs_runtime.tools.effects import irreversible, runs_code
from handoffs_runtime.tools.functions import function_tool

FILE_SUFFIXES = (".yaml", ".yml", ".json")
KNOWN_PROVIDERS = (
    "autogen_ext.models.openai.OpenAIChatCompletionClient",
    "autogen_ext.models.openai.AzureOpenAIChatCompletionClient",
    "autogen_ext.models.ollama.OllamaChatCompletionClient",
    "autogen_ext.models.anthropic.AnthropicChatCompletionClient",
    "OpenAIChatCompletionClient",
    "AzureOpenAIChatCompletionClient",
    "OllamaChatCompletionClient",
    "offline",
)


class TeamFileError(TeamConfigError):
    """A team file or module that cannot become a team; ``problems`` holds one line per mistake."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


REMOTE_A2A_PROVIDER = "handoffs_runtime.protocols.a2a.remote.RemoteA2AAgent"
"""The model component a remote A2A agent is, named (not imported: it needs the ``a2a`` extra)."""


def load_team(reference: str) -> TeamSpec:
    """The team that ``reference`` names: a YAML/JSON team file, a ``.py`` file, or ``module:attribute``."""
    path_part, _, attribute = reference.partition(":")
    if reference.endswith(FILE_SUFFIXES):
        return load_team_file(Path(reference))
    if path_part.endswith(".py"):
        return _team_from_module(_import_file(Path(path_part)), attribute or "team", reference)
    if attribute and path_part.replace(".", "").replace("_", "").isalnum():
        try:
            module = import_named(path_part, [Path.cwd()])
        except ImportError as exc:
            raise TeamFileError([f"--team {reference}: cannot import module {path_part!r} ({exc})"]) from None
        return _team_from_module(module, attribute, reference)
    raise TeamFileError(
        [f"--team {reference}: not a team; give FILE.yaml, FILE.json, FILE.py or module:attribute"]
    )


def load_team_file(path: Path) -> TeamSpec:
    """The team of a YAML or JSON file; a ``TeamFileError`` lists every mistake with its place."""
    where = str(path)
    try:
        text = read_team_text(path)
    except OSError as exc:
        raise TeamFileError([f"{where}: cannot read the team file ({exc.strerror or exc})"]) from None
    except ValueError as exc:
        raise TeamFileError([f"{where}: {exc}"]) from None
    lines: Lines = {}
    try:
        if path.suffix == ".json":
            raw = parse_json(text)
        else:
            raw, lines = parse_yaml(text)
    except ValueError as exc:
        raise TeamFileError([f"{where}: {exc}"]) from None
    problems = _Problems(where, lines)
    if not isinstance(raw, dict):
        problems.add((), "a team file holds a mapping (name, agents, ...)")
        raise TeamFileError(problems.lines)
    try:
        parsed = TeamFile.model_validate(_normalised(raw))
    except ValidationError as exc:
        for error in exc.errors():
            problems.add(tuple(error["loc"]), _explain(error))
        raise TeamFileError(problems.lines) from None
    team = _Resolver(parsed, problems, path.resolve().parent).team()
    if problems.lines:
        raise TeamFileError(problems.lines)
    try:
        build_team(team)
    except TeamConfigError as exc:
        raise TeamFileError([f"{where}: {exc}"]) from None
    return team


# --- reading ---------------------------------------------------------------------------------------


def _normalised(raw: dict[str, Any]) -> dict[str, Any]:
    """Short forms made long (a tool as its reference, a handoff as its target), so that each value has
    one schema and a mistake gets one message."""
    agents = raw.get("agents")
    if isinstance(agents, list):
        for agent in agents:
            if not isinstance(agent, dict):
                continue
            for key, field in (("tools", "ref"), ("handoffs", "target")):
                items = agent.get(key)
                if isinstance(items, list):
                    agent[key] = [{field: item} if isinstance(item, str) else item for item in items]
            if agent.get("model") == "offline":
                agent["model"] = {"provider": "offline"}
    if raw.get("model") == "offline":
        raw["model"] = {"provider": "offline"}
    return raw


_SCHEMAS: dict[tuple[str, ...], type[BaseModel]] = {
    (): TeamFile,
    ("policy",): PolicyEntry,
    ("model",): ModelEntry,
    ("agents",): AgentEntry,
    ("agents", "tools"): ToolEntry,
    ("agents", "handoffs"): HandoffEntry,
    ("agents", "mcp"): McpEntry,
    ("agents", "model"): ModelEntry,
}


def _explain(error: Any) -> str:
    loc = tuple(error["loc"])
    if error["type"] == "extra_forbidden":
        schema = _SCHEMAS.get(tuple(p for p in loc[:-1] if isinstance(p, str)))
        known = list(schema.model_fields) if schema is not None else []
        return f"unknown key {loc[-1]!r}{_did_you_mean(str(loc[-1]), known)}"
    if error["type"] == "missing":
        return "is required"
    return str(error["msg"])


class _Problems:
    def __init__(self, where: str, lines: dict[tuple[str | int, ...], int]) -> None:
        self.where, self._lines = where, lines
        self.lines: list[str] = []

    def add(self, loc: tuple[str | int, ...], message: str) -> None:
        """One line: the file and line, the place as ``agents[2].handoffs[0].target``, the message."""
        line = next((self._lines[loc[:n]] for n in range(len(loc), -1, -1) if loc[:n] in self._lines), None)
        place = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        text = f"{self.where}{f':{line}' if line else ''}: {f'{place}: ' if place else ''}{message}"
        if text not in self.lines:
            self.lines.append(text)


# --- resolving -------------------------------------------------------------------------------------


class _Resolver:
    """Turns a checked ``TeamFile`` into a ``TeamSpec``, noting every reference that does not resolve."""

    def __init__(self, parsed: TeamFile, problems: _Problems, folder: Path) -> None:
        self.parsed, self.problems, self.folder = parsed, problems, folder
        self.names = [a.name for a in parsed.agents]

    def team(self) -> TeamSpec:
        parsed = self.parsed
        seen: set[str] = set()
        for i, agent in enumerate(parsed.agents):
            if agent.name in seen:
                self.problems.add(("agents", i, "name"), f"two agents are named {agent.name!r}")
            seen.add(agent.name)
        entry = parsed.entry or parsed.agents[0].name
        self._agent_name(("entry",), entry)
        policy = TeamPolicy(**{k: v for k, v in parsed.policy.model_dump().items() if v is not None})
        return TeamSpec(
            name=parsed.name,
            title=parsed.title,
            greeting=parsed.greeting,
            suggestions=tuple(parsed.suggestions),
            entry=entry,
            policy=policy,
            model=self._model(("model",), parsed.model),
            agents=[self._agent(i, a) for i, a in enumerate(parsed.agents)],
        )

    def _agent(self, i: int, agent: AgentEntry) -> AgentSpec:
        at = ("agents", i)
        for j, name in enumerate(agent.agent_tools):
            self._agent_name((*at, "agent_tools", j), name)
        tools = [t for j, e in enumerate(agent.tools) for t in self._tools((*at, "tools", j), e)]
        tools += [t for j, e in enumerate(agent.mcp) for t in self._mcp_tools((*at, "mcp", j), e)]
        handoffs = [
            h
            for j, e in enumerate(agent.handoffs)
            if (h := self._handoff((*at, "handoffs", j), e)) is not None
        ]
        return AgentSpec(
            name=agent.name,
            display_name=agent.display_name,
            system_message=agent.system_message,
            description=agent.description,
            tools=tools,
            handoffs=handoffs,
            model=self._remote(at, agent)
            if agent.a2a is not None
            else self._model((*at, "model"), agent.model),
            kind=agent.kind,
            agent_tools=list(agent.agent_tools),
            examples=tuple(agent.examples),
            max_tokens=agent.max_tokens,
        )

    def _agent_name(self, loc: tuple[str | int, ...], name: str) -> bool:
        if name in self.names:
            return True
        self.problems.add(loc, f"unknown agent {name!r}{_did_you_mean(name, self.names)}")
        return False

    def _tools(self, loc: tuple[str | int, ...], entry: ToolEntry) -> list[Tool]:
        found = self._reference((*loc, "ref"), entry.ref)
        if found is None:
            return []
        tools: list[Tool]
        try:
            if entry.call is not None:
                made = found(**entry.call) if callable(found) else None
                listed: list[object] = list(made) if isinstance(made, list | tuple) else [made]
                tools = [t for t in listed if isinstance(t, Tool)]
                if not tools or len(tools) != len(listed):
                    self.problems.add((*loc, "call"), f"{entry.ref}(...) did not return Tools")
                    return []
            elif isinstance(found, Tool):
                tools = [found]
            elif callable(found):
                tools = [function_tool(found, owner=f"tool {entry.ref}", description=entry.description)]
            else:
                self.problems.add((*loc, "ref"), f"{entry.ref} is neither a function nor a Tool")
                return []
        except TeamConfigError as exc:
            self.problems.add(loc, str(exc))
            return []
        except TypeError as exc:
            self.problems.add((*loc, "call"), f"cannot call {entry.ref}: {exc}")
            return []
        return [self._marked(tool, entry) for tool in tools]

    def _mcp_tools(self, loc: tuple[str | int, ...], entry: McpEntry) -> list[Tool]:
        """The tools of an MCP server, which is started now (once per process) to read them."""
        try:
            from handoffs_runtime.tools.mcp import McpServer, McpServerDown, mcp_tools
        except ImportError:
            self.problems.add(loc, "MCP servers need the mcp extra: pip install 'handoffs-runtime[mcp]'")
            return []
        headers = dict(entry.headers) | {k: f"${{{v}}}" for k, v in entry.headers_from_env.items()}
        options: dict[str, Any] = {"call_timeout": entry.call_timeout, "max_restarts": entry.max_restarts}
        if entry.command is not None:  # a command's relative paths are the team file's
            options["cwd"] = str(self.folder / entry.cwd) if entry.cwd is not None else str(self.folder)
        else:
            options["cwd"] = entry.cwd  # refused with a url
        try:
            server = McpServer(
                entry.server,
                command=entry.command,
                args=tuple(entry.args),
                env=entry.env,
                url=entry.url,
                headers=headers,
                **{k: v for k, v in options.items() if v is not None},
            )
            return mcp_tools(
                server, allow=entry.allow, deny=entry.deny, prefix=entry.prefix, unannotated=entry.unannotated
            )
        except (TeamConfigError, McpServerDown) as exc:
            self.problems.add(loc, str(exc))
            return []

    @staticmethod
    def _marked(tool: Tool, entry: ToolEntry) -> Tool:
        if entry.irreversible:
            tool = irreversible(tool)
        if entry.runs_code:
            tool = runs_code(tool)
        if entry.requires_approval:
            person: Person = "operator" if entry.requires_approval == "operator" else "customer"
            tool = requires_approval(tool, person=person)
        return tool

    def _handoff(self, loc: tuple[str | int, ...], entry: HandoffEntry) -> Handoff | None:
        ok = self._agent_name((*loc, "target"), entry.target)
        input_type = None
        if entry.input_type is not None:
            found = self._reference((*loc, "input_type"), entry.input_type)
            if found is not None and not (isinstance(found, type) and issubclass(found, BaseModel)):
                self.problems.add((*loc, "input_type"), f"{entry.input_type} is not a pydantic model")
                found = None
            input_type = found
        input_filter = self._filter((*loc, "input_filter"), entry.input_filter)
        if not ok:
            return None
        return handoff(
            entry.target,
            tool_name_override=entry.tool_name,
            tool_description_override=entry.tool_description,
            input_type=input_type,
            input_filter=input_filter,
            nest_handoff_history=entry.nest_history,
            strict_json_schema=entry.strict_json_schema,
            returns=entry.returns if entry.returns is not None else self._is_remote(entry.target),
        )

    def _is_remote(self, name: str) -> bool:
        return any(a.name == name and a.a2a is not None for a in self.parsed.agents)

    def _remote(self, at: tuple[str | int, ...], agent: AgentEntry) -> ChatCompletionClient | None:
        """The remote A2A agent that answers for ``agent``: its model, loaded as any model component is."""
        assert agent.a2a is not None
        own = [
            key
            for key in ("tools", "handoffs", "agent_tools", "model", "system_message")
            if getattr(agent, key)
        ]
        if own or agent.kind != "ai":
            what = ", ".join(own) if own else f"kind {agent.kind!r}"
            self.problems.add(
                (*at, "a2a"), f"a remote A2A agent has no {what} here: the remote side has its own"
            )
            return None
        if importlib.util.find_spec("a2a") is None:
            self.problems.add(
                (*at, "a2a"), "a remote A2A agent needs the a2a extra: pip install 'handoffs-runtime[a2a]'"
            )
            return None
        config = {**agent.a2a.model_dump(exclude_none=True), "name": agent.display_name or agent.name}
        entry = ModelEntry(provider=REMOTE_A2A_PROVIDER, config=config)
        return self._model((*at, "a2a"), entry)

    def _filter(self, loc: tuple[str | int, ...], value: str | None) -> InputFilter | None:
        if value is None:
            return None
        if value == "remove_all_tools":
            return remove_all_tools
        name, _, count = value.partition(":")
        if name == "keep_last_messages":
            if count.isdigit():
                return keep_last_messages(int(count))
            self.problems.add(loc, "write keep_last_messages:N, with N the number of messages to keep")
            return None
        found = self._reference(loc, value, builtins=("remove_all_tools", "keep_last_messages:N"))
        if found is not None and not callable(found):
            self.problems.add(loc, f"{value} is not a function")
            return None
        return found  # type: ignore[no-any-return]

    def _model(self, loc: tuple[str | int, ...], entry: ModelEntry | None) -> ChatCompletionClient | None:
        if entry is None:
            return None
        if entry.provider == "offline":
            from handoffs_runtime.models.offline import OfflineModel

            return OfflineModel()
        provider = WELL_KNOWN_PROVIDERS.get(entry.provider, entry.provider)
        module_name, _, class_name = provider.rpartition(".")
        try:
            getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError, ValueError):
            hint = _did_you_mean(entry.provider, KNOWN_PROVIDERS)
            self.problems.add((*loc, "provider"), f"cannot load model provider {entry.provider!r}{hint}")
            return None
        try:
            return ChatCompletionClient.load_component(entry.model_dump(exclude_none=True))
        except ValidationError as exc:
            detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            self.problems.add((*loc, "config"), f"not a valid configuration of {entry.provider}: {detail}")
        except Exception as exc:
            self.problems.add(loc, f"cannot create the model: {type(exc).__name__}: {exc}")
        return None

    def _reference(self, loc: tuple[str | int, ...], reference: str, builtins: tuple[str, ...] = ()) -> Any:
        """What ``module:name`` names, or ``None`` after noting why it cannot be imported."""
        module_name, sep, name = reference.partition(":")
        if not sep or not module_name or not name:
            also = f" or one of {', '.join(builtins)}" if builtins else ""
            self.problems.add(loc, f"{reference!r} is not a reference; write module:name{also}")
            return None
        try:
            module = import_named(module_name, [self.folder])
        except NameClashError as exc:
            self.problems.add(loc, f"cannot import {reference!r}: {exc}")
            return None
        except ImportError as exc:
            missing = getattr(exc, "name", None) or module_name
            nearby = [p.stem for p in self.folder.glob("*.py")]
            hint = _did_you_mean(module_name, nearby) if missing == module_name else ""
            self.problems.add(loc, f"cannot import {reference!r}: no module {missing!r}{hint}")
            return None
        except Exception as exc:
            self.problems.add(
                loc, f"cannot import {reference!r}: importing it raised {type(exc).__name__}: {exc}"
            )
            return None
        found = module
        for part in name.split("."):
            if not hasattr(found, part):
                options = [n for n in dir(found) if not n.startswith("_")]
                self.problems.add(loc, f"cannot import {reference!r}{_did_you_mean(part, options)}")
                return None
            found = getattr(found, part)
        return found


# --- Python teams ----------------------------------------------------------------------------------


def _team_from_module(module: ModuleType, attribute: str, reference: str) -> TeamSpec:
    if not hasattr(module, attribute):
        teams = [n for n, v in vars(module).items() if isinstance(v, TeamSpec) or _returns_team(v)]
        hint = _did_you_mean(attribute, teams) or (f"; it has {', '.join(teams)}" if teams else "")
        raise TeamFileError([f"--team {reference}: no {attribute!r} in {module.__name__}{hint}"])
    value = getattr(module, attribute)
    if callable(value) and not isinstance(value, TeamSpec):
        value = value()
    if not isinstance(value, TeamSpec):
        raise TeamFileError(
            [
                f"--team {reference}: {attribute} is a {type(value).__name__}, "
                "not a TeamSpec or a function returning one"
            ]
        )
    build_team(value)
    return value


def _returns_team(value: object) -> bool:
    annotations = getattr(value, "__annotations__", None)
    return (
        callable(value) and isinstance(annotations, dict) and "TeamSpec" in str(annotations.get("return", ""))
    )


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise TeamFileError([f"--team {path}: no such file"])
    try:
        return load_python_file(path.resolve(), f"handoffs_team_{abs(hash(path.resolve()))}")
    except TeamConfigError:
        raise
    except Exception as exc:
        raise TeamFileError([f"--team {path}: importing it raised {type(exc).__name__}: {exc}"]) from None


def _did_you_mean(word: str, options: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
