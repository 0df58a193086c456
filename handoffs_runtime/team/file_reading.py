"""Reading a team file as untrusted input: a bounded size, a regular file, YAML with bounded aliases.

A team file may come from a shared folder, so reading it must not cost more than a team is worth: the
size is checked before anything is parsed (a link to ``/dev/zero`` or a FIFO is refused, never read),
the YAML is parsed with PyYAML's safe loader, and nesting and aliases are bounded before the document
is built, so that a few hundred bytes of anchors cannot become gigabytes::

    text = read_team_text(Path("team.yaml"))
    data, lines = parse_yaml(text)
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 1024 * 1024
"""A team file is a page of settings; a megabyte is far more than any team needs."""
MAX_DEPTH = 32
"""Nesting deeper than this is a mistake or an attack: the schema itself is five levels deep."""
MAX_VALUES = 100_000
"""Values in the document once every alias is followed: aliases that repeat aliases stop here."""

Lines = dict[tuple[str | int, ...], int]


def read_team_text(path: Path) -> str:
    """The text of the team file ``path``; ``ValueError`` (one line) if it is not a small regular file.

    Opened without blocking and checked on the open descriptor, so a FIFO or a device behind a link
    is refused before a byte is read, and a file that grows meanwhile is cut at the bound.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc)) from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a device, a FIFO or a socket"
            raise ValueError(f"not a regular file ({kind}); name the team file itself")
        if info.st_size > MAX_FILE_BYTES:
            raise ValueError(f"{info.st_size} bytes is too large for a team file (at most {MAX_FILE_BYTES})")
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"too large for a team file (at most {MAX_FILE_BYTES} bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start})") from None


def parse_json(text: str) -> Any:
    """The JSON document in ``text``; ``ValueError`` for invalid or too deeply nested JSON."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep") from None
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        stack.extend((child, depth + 1) for child in children)
    return data


def parse_yaml(text: str) -> tuple[Any, Lines]:
    """The document and the line of every value in it, by its path (for the messages); ``ValueError``
    for invalid YAML, nesting deeper than ``MAX_DEPTH`` or more than ``MAX_VALUES`` values."""
    import yaml  # type: ignore[import-untyped]  # a dependency; imported here so that code without team files never loads it

    try:
        _check_nesting(yaml.parse(text, Loader=yaml.SafeLoader), yaml)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        lines = _lines(node, yaml) if node is not None else {}
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}: " if mark is not None else ""
        written = text.splitlines()
        line = written[mark.line] if mark is not None and mark.line < len(written) else ""
        problem = f"not valid YAML ({getattr(exc, 'problem', None) or exc})"
        raise ValueError(f"{at}{problem}{_quoting_hint(line)}") from None
    return data, lines


def _check_nesting(events: Any, yaml: Any) -> None:
    """Refuse nesting deeper than ``MAX_DEPTH``, from the parser's events (nothing is built yet)."""
    depth = 0
    for event in events:
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1
                raise ValueError(f"line {line}: nested more than {MAX_DEPTH} levels deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _lines(root: Any, yaml: Any) -> Lines:
    """The line of every value by its path, following aliases within ``MAX_VALUES`` values; an alias
    that contains itself is refused (it has no end)."""
    lines: Lines = {}
    visited = 0
    stack: list[tuple[Any, tuple[str | int, ...], frozenset[int]]] = [(root, (), frozenset())]
    while stack:
        node, path, inside = stack.pop()
        visited += 1
        if visited > MAX_VALUES:
            raise ValueError(
                f"more than {MAX_VALUES} values once its aliases are followed (aliases of aliases?); "
                "write the values out, or use fewer aliases"
            )
        if id(node) in inside:
            raise ValueError(f"line {node.start_mark.line + 1}: an alias that contains itself never ends")
        lines[path] = node.start_mark.line + 1
        within = inside | {id(node)}
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else f"<{key.tag}>"
                lines[(*path, name)] = key.start_mark.line + 1
                stack.append((value, (*path, name), within))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, i), within) for i, item in enumerate(node.value))
    return lines


_FLOW_LIST = re.compile(r"^(?P<head>[^#\[]*?:\s*)\[(?P<items>[^\]\"']*)\](?P<tail>\s*(?:#.*)?)$")


def _quoting_hint(line: str) -> str:
    """How to write ``line`` so YAML reads it: a list written ``[a, b]`` with its items quoted (a ``?``,
    ``:`` or ``#`` inside an unquoted item means something else to YAML), else the text in quotes."""
    listed = _FLOW_LIST.match(line.strip())
    if listed is not None:
        items = ", ".join(json.dumps(i.strip(), ensure_ascii=False) for i in listed["items"].split(","))
        return f"; quote each item of the list: {listed['head']}[{items}]"
    if re.search(r":\s.*[:?#\[\]{}]", line):
        return "; put text that holds ':', '?', '#' or brackets in quotes (\"...\")"
    return ""
