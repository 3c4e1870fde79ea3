"""Hostile links through the real server: every page route, every control, answered with 200 and no traceback."""

import inspect
import urllib.parse

import panel as pn
import pytest

from app.pages import available_pages

HOSTILE = (
    "", "%00%01%1b[31m%7f%0a", "%ff%fe%c3%28", "nan", "NaN", "inf", "-inf", "-1", "-1e308", "1e308",
    "99999999999999999999999", "0x10", "[1, 2", "{}", "../../etc/passwd", "unknown-model-id", "true%e2%80%ae",
)
"""Empty, control characters, bytes that are not UTF-8, NaN and infinities, negative and huge numbers,
malformed JSON, a path outside every folder, an unknown name (already percent-encoded where they must be)."""
LONG = "9" * 100_000
"""A value of 100,000 characters."""


def controls(module) -> list[str]:
    """The query names of a page: its Viewer class's parameters."""
    viewers = [c for _, c in inspect.getmembers(module, inspect.isclass) if issubclass(c, pn.viewable.Viewer) and c.__module__ == module.__name__]
    return sorted({name for cls in viewers for name in cls.param if name != "name"})


def queries(names: list[str]) -> list[str]:
    """A few links that between them give every hostile value to several controls, and one long value each."""
    def encode(value: str) -> str:
        return value if "%" in value else urllib.parse.quote(value, safe="")

    links = []
    for shift in range(3):
        pairs = [(n, HOSTILE[(shift * 5 + j) % len(HOSTILE)]) for j, n in enumerate(names)]
        pairs += [(f"no_such_control_{shift}", HOSTILE[shift]), ("page", "../x")]
        links.append("?" + "&".join(f"{n}={encode(v)}" for n, v in pairs))
    links.append("?" + "&".join(f"{n}={LONG}" for n in names[:1]) + f"&{LONG[:5000]}=1")
    links.append("?" + "&".join(names))  # names without '=' or values
    return links


ROUTES = [("", [])] + [(p.route, controls(p.module)) for p in available_pages()]


@pytest.mark.parametrize("route,names", ROUTES, ids=[r or "index" for r, _ in ROUTES])
def test_every_hostile_link_is_answered_and_the_server_goes_on(roomy_server, route, names):
    server = roomy_server
    for query in queries(names):
        status, body = server.get(f"/{route}{query}")
        assert status == 200, (query[:200], body[:500])
        assert "Traceback" not in body
    assert server.get("/healthz") == (200, "ok")
    log = server.log()
    for marker in ("Traceback", "Exception", "ERROR"):
        assert marker not in log, log[-3000:]


def test_a_hostile_link_over_the_websocket_builds_a_page_with_a_notice(roomy_server):
    server = roomy_server
    names = dict(ROUTES)["baselines"]
    document = server.open_session("baselines", f"?{names[0]}=nan&{names[-1]}=-1e308")
    assert "ignored" in document and "Traceback" not in document
    assert server.get("/healthz") == (200, "ok")


# --- values a hostile browser sends to a number box or slider, past its limits in the page ---------------------

CLIENT_VALUES = (None, "", float("nan"), float("inf"), float("-inf"), -1, -1e308, 10**30, "abc", "\x00\x1b[31m", "9" * 100_000)
"""What a page's websocket may carry as a control's new value: an emptied box, a string, NaN, infinities, huge numbers."""
OWN_PAGES = ("baselines", "bandit", "token_world", "toy_target", "preferences", "reward_model")


def build_page(name, monkeypatch, tmp_path):
    info = {p.name: p for p in available_pages()}[name]
    if name == "reward_model":  # no language model here: the pairs never come
        monkeypatch.setattr(info.module, "generate_pairs", lambda settings, *_: iter(()))
        return info.module.RewardModelPage(query={}, root=tmp_path)
    return info.module.page(query={})


def valid_values(pg) -> dict:
    """The page's parameters, each checked against its own declaration (bounds, type, objects)."""
    values = {}
    for name, parameter in pg.param.objects("existing").items():
        if name != "name":
            parameter._validate(getattr(pg, name))
            values[name] = getattr(pg, name)
    return values


@pytest.mark.parametrize("name", OWN_PAGES)
def test_every_control_refuses_a_hostile_client_value_in_one_sentence_and_keeps_its_value(name, monkeypatch, tmp_path, caplog):
    from app.serving import server

    monkeypatch.setattr(pn.config, "exception_handler", server.session_exception)
    pg = build_page(name, monkeypatch, tmp_path)
    try:
        if hasattr(pg, "guide"):
            pg.guide.prompts = False  # every prediction card answered: the controls it guards are built too
        layout = pg.__panel__()
        widgets = [w for w in layout.select(pn.widgets.Widget)
                   if isinstance(getattr(w, "value", None), (int, float)) and not isinstance(w.value, bool)]
        assert widgets, "the page has number controls"
        before = valid_values(pg)
        for widget in widgets:
            for value in CLIENT_VALUES:
                try:
                    widget._process_events({"value": value})  # as a browser's change arrives
                except Exception as error:
                    pn.state._handle_exception(error)  # as Panel's session then hands it on, to the app's handler
        after = valid_values(pg)  # every parameter still valid
        assert set(after) == set(before)
        refusals = [r for r in caplog.records if r.name == "feedback_lab" and r.getMessage().startswith("A session's value was refused")]
        assert refusals  # logged; the session's user reads the sentence of each
        told = [server.exception_message(record.args[0]) for record in refusals]
        assert all(t.startswith("That value was not taken") and t.endswith(".") and "Traceback" not in t and "\n" not in t for t in told)
    finally:
        close = getattr(pg, "close", None)
        if close:
            close()


# --- run folders: damaged files, and paths from a user -----------------------------------------------------------


def damaged_runs(root):
    """Run folders as a crash, a full disk or a careless hand leaves them."""
    import json

    def folder(name, config: bytes, metrics: bytes = b"", samples: bytes = b"", evals: bytes = b""):
        path = root / name
        path.mkdir(parents=True)
        for file, data in (("config.json", config), ("metrics.jsonl", metrics), ("samples.jsonl", samples), ("eval.jsonl", evals)):
            (path / file).write_bytes(data)
        return path

    good_config = json.dumps({"settings": {"steps": 5, "beta": 0.1}}).encode()
    line = lambda step: (json.dumps({"step": step, "reward": 0.5}) + "\n").encode()  # noqa: E731
    return [
        folder("a-cut-short", good_config, line(1) + line(2) + b'{"step": 3, "rew'),
        folder("b-garbled-config", b'{"settings": {"steps": 5,', line(1)),
        folder("c-config-not-an-object", b"[1, 2, 3]", line(1)),
        folder("d-settings-not-an-object", b'{"settings": "steps"}', line(1)),
        folder("e-binary", b"\xff\xfe\x00\x81" * 50, b"\x00\x9f\x92\x96" * 100, b"\xff" * 30, line(1)[:5]),
        folder("f-foreign-lines", good_config, b'[1]\n"text"\n{"no_step": 1}\n{"step": "1"}\n{"step": true}\n' + line(1)),
        folder("g-empty", b""),
    ]


def test_damaged_run_files_are_read_as_far_as_they_go_and_never_break_the_list(tmp_path):
    from app.jobs.runs import list_runs, read_run

    damaged_runs(tmp_path)
    runs = {run.id: run for run in list_runs(tmp_path)}
    assert len(runs) == 7
    assert [m["step"] for m in runs["a-cut-short"].metrics] == [1, 2] and not runs["a-cut-short"].finished
    for name in ("b-garbled-config", "c-config-not-an-object", "d-settings-not-an-object", "e-binary", "g-empty"):
        assert runs[name].config == {} and not runs[name].finished  # a run of unknown length is never "finished"
    assert runs["e-binary"].metrics == [] and runs["e-binary"].evals == []
    assert [m["step"] for m in runs["f-foreign-lines"].metrics] == [1]
    (tmp_path / "h-config-is-a-folder" / "config.json").mkdir(parents=True)
    assert read_run(tmp_path / "h-config-is-a-folder").config == {}


def test_the_live_run_page_lists_damaged_runs_as_interrupted(app_server, tmp_path):
    runs = tmp_path / "runs"
    folders = damaged_runs(runs)
    server = app_server(env={"FEEDBACK_LAB_RUNS": str(runs)})
    document = server.open_session("live-run", "?section=runs")  # the list of runs, a tab built when opened
    for folder in folders:
        assert folder.name in document
    assert "interrupted" in document and "Traceback" not in document
    assert server.get("/healthz") == (200, "ok")
    assert "Traceback" not in server.log(), server.log()[-3000:]


@pytest.mark.parametrize("model", ["/", "..", "../../etc", "a/../../b", "/etc/passwd", "C:\\x\\..\\y", "x\x00y"])
def test_a_run_folder_from_any_model_name_stays_one_folder_under_the_runs_root(model, tmp_path):
    from app.jobs.runs import new_run_id
    from engines.lm.settings import LMSettings

    try:
        settings = LMSettings(model=model)
    except ValueError:
        return  # refused with its sentence: no folder at all
    run_id = new_run_id(settings)
    folder = (tmp_path / run_id).resolve()
    assert folder.parent == tmp_path.resolve() and "/" not in run_id


def test_the_reward_model_page_loads_only_files_of_its_pairs_folder(monkeypatch, tmp_path):
    pg = build_page("reward_model", monkeypatch, tmp_path)
    outside = tmp_path / "elsewhere.npz"
    outside.write_bytes(b"PK\x03\x04")
    try:
        for path in ("/etc/passwd", str(outside), str(tmp_path / "pairs" / ".." / "elsewhere.npz"), "../../etc/passwd"):
            pg.pairs_files.load(path)
            notice = pg.pairs_job.notice
            assert notice.visible and notice.object == f"Only the pairs files listed, in {tmp_path / 'pairs'}, can be loaded."
            assert pg.data is None
    finally:
        pg.close()
