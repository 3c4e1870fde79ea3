"""Feedback Lab as pip installs it: the wheel built from the sources, installed into a fresh virtual environment
(its dependencies this test environment's, so nothing is downloaded) and run from a folder outside the source
tree. The wheel's files are checked against what the code opens; the server's pages are loaded over HTTP and in
Chromium; train-lm, lab and figures run on the installed files, writing only into the working folder."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import tomllib
import zipfile
from pathlib import Path

import pytest

from app.pages import available_pages
from bench.servers import CHROMIUM, CHROMIUM_ARGS, ROOT, Server, free_port, stop_server, wait_for_health
from tests.packaging import build_wheel, fresh_venv, install, run_env

pytestmark = pytest.mark.slow  # every test here builds the wheel

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PACKAGES = [pattern.rstrip("*") for pattern in PROJECT["tool"]["setuptools"]["packages"]["find"]["include"]]
"""The top-level packages the wheel holds: app, widgets, engines, assets."""
ROUTES = [""] + [page.route for page in available_pages()]
"""The index and every page's route."""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of what pyproject.toml names: in the repository itself setuptools would reuse
    its build/ folder, whose copies of deleted files would still go into the wheel."""
    source = tmp_path_factory.mktemp("source")
    for name in PACKAGES:
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", PROJECT["project"]["readme"]):
        shutil.copy(ROOT / name, source / name)
    return build_wheel(source, tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def python(tmp_path_factory, wheel) -> Path:
    """The python of a fresh virtual environment with the wheel installed."""
    python = fresh_venv(tmp_path_factory.mktemp("venv"))
    install(python, "install", str(wheel))
    return python


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """The folder the installed commands run in: outside the source tree."""
    return tmp_path_factory.mktemp("work")


def environment(python: Path, workdir: Path) -> dict[str, str]:
    """The installed environment's commands first on PATH, an empty Hugging Face cache, and no FEEDBACK_LAB_RUNS:
    the runs must go to the working folder by default."""
    env = run_env(python, HF_HOME=str(workdir / "hf-cache"))
    env.pop("FEEDBACK_LAB_RUNS", None)
    return env


def feedback_lab(python: Path, workdir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["feedback-lab", *args], cwd=workdir, env=environment(python, workdir), capture_output=True,
                          text=True, timeout=timeout)


def files_of(folder: Path) -> set[Path]:
    """The files under `folder`, bytecode caches left out (Python writes those beside any module it imports)."""
    return {f for f in folder.rglob("*") if f.is_file() and "__pycache__" not in f.parts}


def opened_by_code() -> set[str]:
    """The files and folders, as paths inside the wheel, that the code opens as package resources: every
    `assets.path("a", "b")` and `files(__name__) / "name"` (a package's own file) in app, widgets and engines.
    `assets.path()` alone names the package's folder to find the source checkout around it, and is left out."""
    opened = set()
    for package in ("app", "widgets", "engines"):
        for source in (ROOT / package).rglob("*.py"):
            module = source.relative_to(ROOT).with_suffix("")
            for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "path"
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == "assets" and node.args):
                    opened.add("/".join(["assets", *(arg.value for arg in node.args)]))
                if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.left, ast.Call)
                        and getattr(node.left.func, "id", None) == "files" and isinstance(node.right, ast.Constant)):
                    assert module.name == "__init__", f"{source}: files(__name__) names a package only in its __init__"
                    opened.add(f"{module.parent.as_posix()}/{node.right.value}")
    return opened


def test_the_wheel_holds_every_file_the_code_opens_and_nothing_else(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    opened = opened_by_code()
    assert {"assets/app.css", "assets/models/embedded", "assets/prompts", "app/lab/lab9.ipynb"} <= opened, opened
    needed = set()
    for path in opened:
        in_source = [f.relative_to(ROOT).as_posix() for f in files_of(ROOT / path)] if (ROOT / path).is_dir() else [path]
        shipped = {f for f in in_source if Path(f).name != "README.md"}  # a folder's README says how its files were made
        assert shipped, path
        needed |= shipped
    data = {n for n in names if not n.endswith(".py") and ".dist-info/" not in n}
    assert data == needed, (sorted(needed - data), sorted(data - needed))  # all that is read, nothing that is not
    code = {f.relative_to(ROOT).as_posix() for package in PACKAGES for f in (ROOT / package).rglob("*.py")}
    assert {n for n in names if n.endswith(".py")} == code  # every module, every subpackage
    assert {n.split("/")[0] for n in names} == set(PACKAGES) | {f"feedback_lab-{PROJECT['project']['version']}.dist-info"}
    assert not [n for n in names if n.split("/")[0] in ("tests", "bench", "docs", "deploy")]


def test_the_installed_package_runs_from_its_own_files(python, workdir):
    env = environment(python, workdir)
    where = subprocess.run(["python", "-c", "import app, assets, engines, widgets as w; print(app.__file__, assets.path(), "
                            "engines.__file__, w.__file__)"], cwd=workdir, env=env, capture_output=True, text=True, check=True)
    site = str(python.parents[1])
    assert all(f.startswith(site) for f in where.stdout.split()), where.stdout
    version = feedback_lab(python, workdir, "--version")
    assert version.returncode == 0 and version.stdout == f"feedback-lab {PROJECT['project']['version']}\n", version


def test_train_lm_lab_and_figures_run_on_the_bundled_files_and_write_only_to_the_working_folder(python, workdir):
    venv = python.parents[1]
    before = files_of(venv)
    trained = feedback_lab(python, workdir, "train-lm", "--steps", "1", "--prompts", "2", "--replies", "2",
                           "--eval-prompts", "2", "--eval-replies", "1", "--keep-samples", "1", "--device", "cpu",
                           "--quiet")
    assert trained.returncode == 0, trained.stderr[-3000:]
    [run] = (workdir / "runs").iterdir()  # the embedded model, the review prompts and the VADER reward, from the wheel
    assert {"config.json", "metrics.jsonl", "eval.jsonl"} <= {f.name for f in run.iterdir()}
    assert [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()] == [1]

    lab = feedback_lab(python, workdir, "lab", "--out", str(workdir / "lab"))
    assert lab.returncode == 0, lab.stderr
    assert json.loads((workdir / "lab" / "lab9.ipynb").read_text()) == json.loads((ROOT / "app/lab/lab9.ipynb").read_text())

    figures = feedback_lab(python, workdir, "figures", "token-world", "--json")
    assert figures.returncode == 0, figures.stderr
    assert {"T", "returns", "V"} <= set(json.loads(figures.stdout))

    # The operator's command that rebuilds the bundled model refuses to write into the installed package.
    remade = feedback_lab(python, workdir, "make-embedded-model")
    assert remade.returncode == 2 and remade.stderr.count("\n") == 1 and "give --out DIR" in remade.stderr, remade.stderr
    assert files_of(venv) == before


@pytest.fixture(scope="module")
def served(python, workdir, tmp_path_factory):
    """`feedback-lab serve` of the installed package, started in the working folder; stopped after the module."""
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "server.log"
    process = subprocess.Popen(["feedback-lab", "serve", "--port", str(port)], cwd=workdir,
                               env=environment(python, workdir), stdout=subprocess.DEVNULL, stderr=log.open("w"))
    server = Server(f"http://localhost:{port}", process, log)
    try:
        wait_for_health(server)
        yield server
    finally:
        stop_server(server)
    assert "Traceback" not in server.log(), server.log()[-3000:]


def test_every_page_answers_over_http(served):
    for route in ROUTES:
        status, body = served.get(f"/{route}")
        assert status == 200 and "<title>" in body and "Feedback Lab" in body, (route, status, body[:300])


@pytest.mark.browser
def test_every_page_draws_in_chromium_with_the_packaged_stylesheet_and_no_console_error(served):
    # Playwright started and stopped here, not pytest-playwright's session-long instance: that one keeps its event
    # loop running in this thread, and the tests/app modules after this one call asyncio.run (bench/servers.py).
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        for route in ROUTES:
            page.goto(f"{served.url}/{route}")
            page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
            # Drawn: a plot's canvas, a guided question before it, or the index's and the lab's listings.
            page.locator(".bk-Canvas, .fl-index, .fl-lab, .fl-predict").first.wait_for(state="attached", timeout=30_000)
            current = page.locator('.fl-nav a[aria-current="page"]').first
            assert current.evaluate("link => getComputedStyle(link).fontWeight") == "700", route  # app.css's rule
            assert errors == [], (route, errors)
        browser.close()
