"""The engines' imports: engines.lm in the order its docstring draws, the core without it, no UI library.

Every import statement counts, at module level or inside a function (tests/imports.py). That no
circle runs through engines/, and that they import nothing above them, tests/test_layers.py checks
for the whole project.
"""

import re

import engines.lm
from tests.imports import edges, import_graph, libraries

GRAPH = import_graph(["engines"])
"""Each engines module -> its import statements."""
EDGES = edges(GRAPH)
"""Each engines module -> the engines modules it imports."""
UI_LIBRARIES = {"panel", "param", "holoviews", "bokeh"}


def documented_layers() -> list[str]:
    """engines.lm's modules from its docstring's table, bottom first."""
    table = re.findall(r"^    (\w+) {2,}\S", engines.lm.__doc__, flags=re.M)
    return [f"engines.lm.{name}" for name in reversed(table)]


def lm_climbs(edges: dict[str, set[str]]) -> list[str]:
    """Every import by an engines.lm module of one its docstring draws above it (or beside it), as a sentence."""
    layers = documented_layers()
    return [f"{module} imports {target}, which the docstring draws above it"
            for height, module in enumerate(layers) for target in sorted(edges[module])
            if target in layers and layers.index(target) >= height]


def test_lm_modules_import_only_layers_below_them():
    assert set(documented_layers()) == {m for m in GRAPH if m.startswith("engines.lm.")}, "the docstring lists every module once"
    assert lm_climbs(EDGES) == []


def test_a_planted_climb_in_engines_lm_is_caught():
    planted = EDGES | {"engines.lm.models": EDGES["engines.lm.models"] | {"engines.lm.reinforce"}}
    assert lm_climbs(planted) == ["engines.lm.models imports engines.lm.reinforce, which the docstring draws above it"]


def test_the_core_does_not_import_the_language_model_package():
    for module in GRAPH:
        if not module.startswith("engines.lm"):
            assert not {m for m in EDGES[module] if m.startswith("engines.lm")}, module


def test_no_engine_imports_a_user_interface_library():
    for module, statements in GRAPH.items():
        assert not libraries(statements) & UI_LIBRARIES, module
