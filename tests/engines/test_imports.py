"""The engines' imports: no circle anywhere in engines/, engines.lm in the order its docstring draws, no UI library.

Every import statement counts, at module level or inside a function, so a circle cannot hide
in a function-level import.
"""

import ast
import re
from pathlib import Path

import engines.lm

ENGINES = Path(__file__).resolve().parents[2] / "engines"
UI_LIBRARIES = {"panel", "param", "holoviews", "bokeh"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ENGINES.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module an `import` or `from ... import` in the file names, at any depth of the file."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)  # `from engines.lm import x`
    return names


GRAPH = {module_name(p): imported_modules(p) for p in sorted(ENGINES.rglob("*.py"))}
"""Each engines module -> the modules it imports (any library)."""


def engine_imports(module: str) -> set[str]:
    """The engines modules `module` imports, packages' __init__ files excluded (they hold docstrings only)."""
    return {m for m in GRAPH[module] if m in GRAPH and m != module and m not in ("engines", "engines.lm")}


def find_circle() -> list[str] | None:
    """One import circle as a list of modules (first = last), or None: depth-first search with colours."""
    state, stack = {}, []

    def visit(module):
        state[module] = "open"
        stack.append(module)
        for nxt in sorted(engine_imports(module)):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (circle := visit(nxt)):
                return circle
        stack.pop()
        state[module] = "done"
        return None

    for module in sorted(GRAPH):
        if module not in state and (circle := visit(module)):
            return circle
    return None


def test_no_import_circle_in_engines():
    assert find_circle() is None, f"import circle: {' -> '.join(find_circle())}"


def test_the_circle_finder_finds_a_planted_circle():
    GRAPH["engines.lm.models"].add("engines.lm.reinforce")
    try:
        circle = find_circle()
    finally:
        GRAPH["engines.lm.models"].discard("engines.lm.reinforce")
    assert circle is not None and circle[0] == circle[-1] and "engines.lm.models" in circle


def documented_layers() -> list[str]:
    """engines.lm's modules from its docstring's table, bottom first."""
    table = re.findall(r"^    (\w+) {2,}\S", engines.lm.__doc__, flags=re.M)
    return [f"engines.lm.{name}" for name in reversed(table)]


def test_lm_modules_import_only_layers_below_them():
    layers = documented_layers()
    assert set(layers) == {m for m in GRAPH if m.startswith("engines.lm.")}, "the docstring lists every module once"
    for height, module in enumerate(layers):
        above = [m for m in engine_imports(module) if m in layers and layers.index(m) >= height]
        assert not above, f"{module} imports {above}, which the docstring draws above it"


def test_the_core_does_not_import_the_language_model_package():
    for module in GRAPH:
        if not module.startswith("engines.lm"):
            assert not {m for m in engine_imports(module) if m.startswith("engines.lm")}, module


def test_no_engine_imports_a_user_interface_library():
    for module, names in GRAPH.items():
        assert not {n.split(".")[0] for n in names} & UI_LIBRARIES, module
