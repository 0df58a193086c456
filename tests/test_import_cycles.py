"""The package's modules import each other without cycles, imports inside functions included.

A cycle means two modules are one concept or a helper lives in the wrong one; this test names the
modules of any cycle so the next one is caught where it is made.
"""

from __future__ import annotations

import ast
from pathlib import Path

import handoffs_runtime

PACKAGE = Path(handoffs_runtime.__file__).parent


def module_name(path: Path) -> tuple[str, bool]:
    """The dotted name of ``path`` and whether it is a package's ``__init__``."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def import_graph() -> dict[str, set[str]]:
    """Each module of the package, and the modules of the package it imports (anywhere in its code)."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = {name for name, _ in files}
    graph: dict[str, set[str]] = {}
    for (name, is_package), path in files.items():
        here = name.split(".") if is_package else name.split(".")[:-1]
        imported: set[str] = set()
        tree = ast.parse(path.read_text())
        typing_only = {  # ``if TYPE_CHECKING:`` imports never run: they are annotations, not a cycle
            id(inner)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and ast.unparse(block.test).endswith("TYPE_CHECKING")
            for inner in ast.walk(block)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                target = ".".join([*base, *([node.module] if node.module else [])])
                submodules = [f"{target}.{alias.name}" for alias in node.names]
                # ``from . import leases`` imports the submodule, not the package's whole surface
                only_submodules = all(m in modules for m in submodules)
                candidates = submodules if only_submodules else [target, *submodules]
            elif isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            else:
                continue
            imported.update(c for c in candidates if c in modules and c != name)
        graph[name] = imported
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that ends where it starts, or ``None``."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_the_graph_is_read_from_the_source() -> None:
    graph = import_graph()
    assert "handoffs_runtime.models.offline" in graph["handoffs_runtime.models"]
    assert "handoffs_runtime.agents.toolloop" in graph["handoffs_runtime.agents.ai"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_module_imports_itself_through_others() -> None:
    assert find_cycle(import_graph()) is None
