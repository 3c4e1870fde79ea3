"""The project's layers hold: no import circle anywhere, and no module imports one of a layer above its own.

From the bottom: the data files, the engines, the widgets, then app/ in four heights (the model
jobs, app/jobs/, the mechanism: a cluster, its jobs, run files; the server's policy that the
pages use, in app/serving/: the limits, what is offered, caches, the room's counts, handed to the
jobs by their callers; the pages, app/pages/, and the lab; the server, the rest of app/serving/),
the command line (app/cli/) on top of app/, then the benchmarks, then the tests, which may use a
benchmark's harness but never the other way round. `LAYERS` is the one place that says which
module is where. Every import statement counts, inside functions too (tests/imports.py).
"""

from tests.imports import edges, find_circle, import_graph

LAYERS = (
    ("the data files", ("assets",)),
    ("the engines", ("engines",)),
    ("the widgets", ("widgets",)),
    ("the model jobs", ("app", "app.jobs")),
    ("the server's policy the pages share", (
        "app.serving.limits", "app.serving.offered", "app.serving.results_cache", "app.serving.room",
    )),
    ("the pages", ("app.pages", "app.lab")),
    ("the server", ("app.serving",)),
    ("the command line", ("app.cli",)),
    ("the benchmarks", ("bench",)),
    ("the tests", ("tests",)),
)
"""The layers, bottom first, each with the modules and packages it holds. A module belongs to the layer of the
longest entry that is it or a package above it, so a new app module starts in the lowest of app's layers."""

EDGES = edges(import_graph(["assets", "engines", "widgets", "app", "bench", "tests"]))
"""Each of the project's modules -> the project's modules it imports."""


def layer(module: str) -> int:
    """The height of `module`'s layer in LAYERS (0 at the bottom)."""
    hits = [(len(entry), height) for height, (_, entries) in enumerate(LAYERS) for entry in entries
            if module == entry or module.startswith(entry + ".")]
    assert hits, f"{module} is in no layer: add it, or a package above it, to LAYERS"
    return max(hits)[1]


def climbs(edges: dict[str, set[str]]) -> list[str]:
    """Every import of a module in a layer above the importer's, as a sentence."""
    return [f"{module} ({LAYERS[layer(module)][0]}) imports {target} ({LAYERS[layer(target)][0]})"
            for module, targets in sorted(edges.items()) for target in sorted(targets) if layer(target) > layer(module)]


def test_the_table_places_every_module_and_lists_each_entry_once():
    entries = [entry for _, names in LAYERS for entry in names]
    assert len(entries) == len(set(entries))
    assert [e for e in entries if not any(m == e or m.startswith(e + ".") for m in EDGES)] == []
    assert all(layer(m) >= 0 for m in EDGES)  # layer() says which module is in no layer


def test_no_import_circle():
    circle = find_circle(EDGES)
    assert circle is None, f"import circle: {' -> '.join(circle)}"


def test_the_circle_finder_finds_a_planted_circle():
    assert "app.jobs.runs" in EDGES["app.jobs.shared_runs"]
    circle = find_circle(EDGES | {"app.jobs.runs": EDGES["app.jobs.runs"] | {"app.jobs.shared_runs"}})
    assert circle is not None and circle[0] == circle[-1] and {"app.jobs.runs", "app.jobs.shared_runs"} <= set(circle)


def test_no_module_imports_a_layer_above_its_own():
    assert climbs(EDGES) == []


def test_planted_climbs_are_caught():
    planted = {
        "widgets.streaming": "app.jobs.model_jobs",  # a widget reaching into app's model jobs
        "app.jobs.shared_runs": "app.serving.offered",  # a model job reading the server's offer itself
        "bench.load_test": "tests.app.conftest",  # a benchmark borrowing from the tests
        "app.jobs.model_jobs": "app.cli.preferences",  # a model job borrowing from the command line
        "app.pages.live_run.text": "app.cli.train_lm",  # a page's text borrowing from the command line
        "engines.lm.results": "widgets.downloads",  # an engine importing a widget
    }
    assert climbs(EDGES | {m: EDGES[m] | {target} for m, target in planted.items()}) == [
        "app.jobs.model_jobs (the model jobs) imports app.cli.preferences (the command line)",
        "app.jobs.shared_runs (the model jobs) imports app.serving.offered (the server's policy the pages share)",
        "app.pages.live_run.text (the pages) imports app.cli.train_lm (the command line)",
        "bench.load_test (the benchmarks) imports tests.app.conftest (the tests)",
        "engines.lm.results (the engines) imports widgets.downloads (the widgets)",
        "widgets.streaming (the widgets) imports app.jobs.model_jobs (the model jobs)",
    ]


def test_an_import_inside_a_function_counts():
    """app.serving.offered imports app.serving.limits only inside its functions."""
    assert "app.serving.limits" in EDGES["app.serving.offered"]


def test_the_command_line_sits_on_top_of_app():
    """Whatever regrouping app/ gets, nothing that serves pages or runs jobs may import the command line."""
    command_line = next(h for h, (name, _) in enumerate(LAYERS) if name == "the command line")
    assert all(layer(m) < command_line for m in EDGES if m.split(".")[0] == "app" and layer(m) != command_line)
