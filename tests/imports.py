"""The project's import graph, read from its source files, and a finder of import circles in it.

Every import statement counts, at module level or inside a function, so a circle or a climb
cannot hide in a function-level import. A module imported by its name through `importlib` (the
command line's commands, the pages) is imported by no statement and does not count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The repository's root: its top-level folders are the project's packages."""


@dataclass(frozen=True)
class Import:
    """One import statement."""

    module: str
    """The module it names, absolute (`from . import x` in package p names p)."""
    names: tuple[str, ...]
    """What `from module import ...` takes from it; empty for `import module`."""


def module_name(path: Path) -> str:
    """`engines/lm/models.py` -> "engines.lm.models"; a package's `__init__.py` is the package."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> tuple[Import, ...]:
    """Every import statement in the file, at any depth."""
    package = module_name(path).split(".")[: None if path.name == "__init__.py" else -1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [Import(alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            found.append(Import(".".join(base + [node.module] if node.module else base), tuple(a.name for a in node.names)))
    return tuple(found)


def import_graph(packages: Iterable[str]) -> dict[str, tuple[Import, ...]]:
    """Each module of the top-level `packages` -> its import statements."""
    return {module_name(p): imports(p) for package in packages for p in sorted((ROOT / package).rglob("*.py"))}


def libraries(statements: Iterable[Import]) -> set[str]:
    """The top-level packages the statements import from: "panel" for `from panel.widgets import Select`."""
    return {s.module.split(".")[0] for s in statements}


def own_imports(graph: Mapping[str, tuple[Import, ...]], module: str) -> set[str]:
    """The modules of `graph` that `module` imports: for `from a.b import c`, a.b.c where it is a module, else a.b."""
    found = set()
    for statement in graph[module]:
        for target in [f"{statement.module}.{name}" for name in statement.names] or [statement.module]:
            found.add(target if target in graph else statement.module)
    return (found & graph.keys()) - {module}


def edges(graph: Mapping[str, tuple[Import, ...]]) -> dict[str, set[str]]:
    """Each module of `graph` -> the modules of `graph` it imports."""
    return {module: own_imports(graph, module) for module in graph}


def find_circle(edges: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One circle of `edges` (module -> the modules it imports) as a list, first = last, or None.

    Depth-first search with colours: a module reached again while it is still open closes a circle.
    """
    state, stack = {}, []

    def visit(module):
        state[module] = "open"
        stack.append(module)
        for nxt in sorted(edges.get(module, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (circle := visit(nxt)):
                return circle
        stack.pop()
        state[module] = "done"
        return None

    for module in sorted(edges):
        if module not in state and (circle := visit(module)):
            return circle
    return None
