"""The Dockerfile's steps, run without Docker (there is no engine here): its torch build argument, the build stage's
copied files and the wheel it builds from them, the image stage's install of that wheel (into a fresh virtual
environment here), its CMD serving the installed app and its HEALTHCHECK against it."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tomllib
import zipfile
from pathlib import Path

import pytest

from bench.servers import ROOT, Server, free_port, stop_server, wait_for_health
from tests.packaging import build_wheel, fresh_venv, install, run_env

pytestmark = pytest.mark.slow  # every test here builds the wheel

DOCKERFILE = ROOT / "Dockerfile"
PORT = "5006"
"""The port the image serves on (EXPOSE, CMD and HEALTHCHECK say it; the test swaps in a free one)."""


def instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) of every instruction, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip()) for line in joined.splitlines() if line.strip()]


STEPS = instructions(DOCKERFILE.read_text())


def stages(steps: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The steps of each stage, each starting with its FROM."""
    starts = [i for i, (key, _) in enumerate(steps) if key == "FROM"] + [len(steps)]
    return [steps[a:b] for a, b in zip(starts, starts[1:])]


BUILD, IMAGE = stages(STEPS)
"""The stage that builds the wheel, and the image's stage, which installs it."""


def only(keyword: str, stage: list[tuple[str, str]] = IMAGE) -> str:
    found = [args for key, args in stage if key == keyword]
    assert len(found) == 1, (keyword, found)
    return found[0]


def environment() -> dict[str, str]:
    """The image's ENV instructions' variables (KEY=VALUE forms)."""
    env = {}
    for key, args in IMAGE:
        if key == "ENV":
            env.update(part.split("=", 1) for part in shlex.split(args))
    return env


def rooted(root: Path, path: str) -> Path:
    """Where an absolute path of a stage's file system lies in the folder `root` standing in for it."""
    return root / Path(path).relative_to("/")


def pip_runs(stage: list[tuple[str, str]], command: str) -> list[list[str]]:
    """The words of the stage's `pip COMMAND ...` RUN instructions."""
    return [words for key, args in stage if key == "RUN" and (words := shlex.split(args))[:2] == ["pip", command]]


def test_torch_comes_from_a_build_argument_that_defaults_to_the_cpu_build_and_cuda_is_documented():
    args = [a for key, a in IMAGE if key == "ARG"]
    assert "TORCH_INDEX=https://download.pytorch.org/whl/cpu" in args
    assert not [a for key, a in BUILD if key == "RUN" and "torch" in a]  # the wheel is built without torch
    torch_runs = [i for i, (key, a) in enumerate(IMAGE) if key == "RUN" and "torch" in a]
    assert len(torch_runs) == 1
    line = IMAGE[torch_runs[0]][1]
    assert re.search(r'--index-url\s+"?\$\{?TORCH_INDEX\}?"?', line), line
    keys = [key for key, _ in IMAGE]
    assert keys.index("FROM") < keys.index("ARG") < torch_runs[0]  # an ARG before FROM would not reach the RUN
    assert re.search(r"--build-arg TORCH_INDEX=https://download\.pytorch\.org/whl/cu\d+", DOCKERFILE.read_text())


def test_the_runs_folder_is_one_the_servers_user_can_write():
    runs, user = environment()["FEEDBACK_LAB_RUNS"], only("USER")
    assert any(key == "RUN" and f"chown {user} {runs}" in a for key, a in IMAGE)
    assert IMAGE.index(("USER", user)) > max(i for i, (key, a) in enumerate(IMAGE) if key == "RUN" and "chown" in a)


def wheel_installs() -> list[list[str]]:
    """The image's `pip install` RUN instructions of wheel files."""
    return [words for words in pip_runs(IMAGE, "install") if any(w.endswith(".whl") for w in words)]


def test_the_image_installs_the_wheel_of_the_build_stage_and_copies_no_source():
    name = re.fullmatch(r"\S+\s+AS\s+(\S+)", only("FROM", BUILD), re.I).group(1)
    [wheel_dir] = [words[words.index("--wheel-dir") + 1] for words in pip_runs(BUILD, "wheel")]
    # One COPY, of the built wheels: nothing comes from the build context.
    assert shlex.split(only("COPY"))[:2] == [f"--from={name}", wheel_dir]
    copied_to = Path(shlex.split(only("COPY"))[2])
    [words] = wheel_installs()
    assert words[2:] and all(Path(w).parent == copied_to and w.endswith(".whl") for w in words[2:]), words
    installs = pip_runs(IMAGE, "install")
    assert not any("-e" in words or "--editable" in words or "." in words for words in installs), installs


@pytest.fixture(scope="module")
def build_stage(tmp_path_factory) -> Path:
    """A folder standing for the build stage's file system, its WORKDIR holding what the COPY instructions copy
    (and nothing else from the repository), then the wheel its `pip wheel` writes, run here offline with this
    environment's setuptools."""
    root = tmp_path_factory.mktemp("build")
    tree = rooted(root, only("WORKDIR", BUILD))
    tree.mkdir(parents=True)
    for key, args in BUILD:
        if key != "COPY":
            continue
        *sources, target = shlex.split(args)
        for source in sources:
            destination = tree / target / (Path(source).name if target.endswith("/") else "")
            if (ROOT / source).is_dir():
                shutil.copytree(ROOT / source, destination, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(ROOT / source, destination)
    [words] = pip_runs(BUILD, "wheel")
    out = rooted(root, words[words.index("--wheel-dir") + 1])
    build_wheel(tree, out, [str(rooted(root, w)) if w.startswith("/") else w for w in words[1:]])
    return root


def test_the_copied_files_hold_every_package_and_build_a_wheel_with_the_assets(build_stage):
    tree = rooted(build_stage, only("WORKDIR", BUILD))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for pattern in project["tool"]["setuptools"]["packages"]["find"]["include"]:
        assert (tree / pattern.rstrip("*")).is_dir(), pattern
    assert (tree / project["project"]["readme"]).is_file()
    [wheel_path] = build_stage.glob("**/feedback_lab-*.whl")
    with zipfile.ZipFile(wheel_path) as wheel:
        assert "assets/models/embedded/model.safetensors" in wheel.namelist()


@pytest.fixture(scope="module")
def image(tmp_path_factory, build_stage) -> tuple[Path, Path]:
    """(the image's WORKDIR, its python): the image stage's COPY from the build stage and its `pip install` of the
    wheel, run here into a fresh virtual environment (torch and the other dependencies: this environment's)."""
    root = tmp_path_factory.mktemp("image")
    _, source, target = shlex.split(only("COPY"))
    shutil.copytree(rooted(build_stage, source), rooted(root, target))
    python = fresh_venv(root / "venv")
    [words] = wheel_installs()
    wheels = [str(path) for word in words[2:] for path in sorted(root.glob(word.lstrip("/")))]
    assert len(wheels) == 1, (words, wheels)
    install(python, "install", *wheels)
    workdir = rooted(root, only("WORKDIR"))
    workdir.mkdir(parents=True)
    return workdir, python


def test_the_image_allows_websockets_from_one_named_origin_not_any(monkeypatch):
    from app.cli import ORIGIN_VARIABLE, websocket_origins

    assert "*" not in only("CMD") and "allow-websocket-origin" not in only("CMD")
    assert environment()[ORIGIN_VARIABLE] == f"localhost:{PORT}"
    assert websocket_origins(["a.example:80"]) == ["a.example:80"]  # the option wins
    monkeypatch.setenv(ORIGIN_VARIABLE, " lab.example:5006, 10.0.0.2:5006 ")
    assert websocket_origins(None) == ["lab.example:5006", "10.0.0.2:5006"]
    monkeypatch.delenv(ORIGIN_VARIABLE)
    assert websocket_origins(None) is None  # serve's default: the address served and localhost


def with_port(text: str, port: int) -> str:
    assert PORT in text
    return text.replace(PORT, str(port))


def test_the_cmd_serves_the_installed_app_and_the_healthcheck_follows_it(image, tmp_path):
    workdir, python = image
    port = free_port()
    cmd = json.loads(with_port(only("CMD"), port))
    health = with_port(re.sub(r"^(--\S+\s+)*CMD\s+", "", only("HEALTHCHECK")), port)
    env = run_env(
        python,
        # The image's variables, its WORKDIR being a folder here; its python and feedback-lab the fresh environment's.
        **{k: v.replace(only("WORKDIR"), str(workdir)).replace(PORT, str(port)) for k, v in environment().items()},
        HF_HOME=str(tmp_path / "hf"),
    )
    runs = Path(env["FEEDBACK_LAB_RUNS"])
    runs.mkdir(exist_ok=True)
    where = subprocess.run(["python", "-c", "import app, assets; print(app.__file__, assets.__file__)"], cwd=workdir,
                           env=env, capture_output=True, text=True, check=True)
    site = str(python.parents[1])
    assert all(f.startswith(site) for f in where.stdout.split()), where.stdout  # the installed wheel, not the sources

    def healthy() -> int:
        return subprocess.run(["/bin/sh", "-c", health], cwd=workdir, env=env, capture_output=True, timeout=30).returncode

    assert healthy() != 0  # nothing serves yet: the check must fail
    log = tmp_path / "server.log"
    process = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    server = Server(f"http://localhost:{port}", process, log)
    try:
        wait_for_health(server)
        assert healthy() == 0
        for path in ("/", "/baselines"):
            status, body = server.get(path)
            assert status == 200 and "Feedback Lab" in body, (path, body[:300])
        assert "Baseline" in server.open_session("baselines")  # the websocket too, with the CMD's origin rule
    finally:
        stop_server(server)
    assert "Traceback" not in server.log(), server.log()[-3000:]
    assert healthy() != 0
