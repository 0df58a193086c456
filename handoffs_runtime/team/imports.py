"""Importing the code a team names, and nothing else: a module beside the team file by its file name.

A team file in a shared folder must not run whatever else lies there. So the file's folder and the
current folder never go first on the module path: a module the team names (``bookshop_tools:find``) is
loaded from the team file's folder when a file of that name is there, otherwise from the installed
packages. While it runs, its folder is searched *after* the installed packages, so its own helpers
beside it import, but a planted ``openai.py`` can never stand in for the real one::

    module = import_named("bookshop_tools", [Path("examples/bookshop")])
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType


class NameClashError(ImportError):
    """A module beside the team file has the name of an installed module: which one is meant is unclear."""


def import_named(name: str, folders: Sequence[Path]) -> ModuleType:
    """The module ``name`` (dotted), its top package loaded from the first of ``folders`` that holds it
    as a file, else imported from the installed packages; raises ``ImportError`` as ``import`` does."""
    top = name.partition(".")[0]
    local = next((found for folder in folders if (found := _module_file(folder, top)) is not None), None)
    if local is None:
        return importlib.import_module(name)
    installed = _installed_origin(top)
    if installed is not None and installed != local:
        raise NameClashError(
            f"{local.name} beside the team file has the name of the installed module {top!r}; "
            "rename the file (and the references to it)",
            name=top,
        )
    _load_file(top, local)
    return importlib.import_module(name)


def load_python_file(path: Path, name: str, *, package: bool = False) -> ModuleType:
    """The module of the Python file ``path`` (a package's ``__init__.py`` with ``package``), registered
    as ``name``; the folder it is in is searched last while it runs."""
    locations = [str(path.parent)] if package else None
    spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=locations)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} cannot be imported as Python", name=name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with _searched_last((path.parent.parent if package else path.parent).resolve()):
            spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    _LOADED.add(name)
    return module


def _module_file(folder: Path, top: str) -> Path | None:
    for candidate in (folder / f"{top}.py", folder / top / "__init__.py"):
        if candidate.is_file():
            return candidate.resolve()
    return None


def _installed_origin(top: str) -> Path | None:
    """Where ``import top`` finds the module without any team folder; ``None`` if nowhere (a namespace
    package, a folder without ``__init__.py``, counts as nowhere)."""
    loaded = sys.modules.get(top)
    if loaded is not None and top not in _LOADED:
        file = getattr(loaded, "__file__", None)
        return Path(file).resolve() if file else Path(f"<built in {top}>")
    if top in sys.builtin_module_names:
        return Path(f"<built in {top}>")
    spec = importlib.machinery.PathFinder.find_spec(top)
    if spec is None or spec.origin is None or not spec.has_location:
        return None
    return Path(spec.origin).resolve()


def _load_file(name: str, path: Path) -> None:
    """Load ``path`` as the module ``name`` unless that very file is loaded already."""
    file = getattr(sys.modules.get(name), "__file__", None)
    if file is not None and Path(file).resolve() == path:
        return
    load_python_file(path, name, package=path.name == "__init__.py")


@contextmanager
def _searched_last(folder: Path) -> Iterator[None]:
    """``folder`` on the module path after everything installed, while a module of the team runs."""
    entry = str(folder)
    added = entry not in sys.path
    if added:
        sys.path.append(entry)
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)


_LOADED: set[str] = set()
"""Modules loaded from a team's folder by this module (not installed ones)."""
