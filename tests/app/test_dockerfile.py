"""The Dockerfile's steps, run without Docker (there is no engine here): its torch build argument, the files
it copies building the package, its CMD serving the app from those files, and its HEALTHCHECK against it."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.servers import ROOT, Server, stop_server, wait_for_health
from tests.servers import free_port

DOCKERFILE = ROOT / "Dockerfile"
PORT = "5006"
"""The port the image serves on (EXPOSE, CMD and HEALTHCHECK say it; the test swaps in a free one)."""


def instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) of every instruction, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip()) for line in joined.splitlines() if line.strip()]


STEPS = instructions(DOCKERFILE.read_text())


def only(keyword: str) -> str:
    found = [args for key, args in STEPS if key == keyword]
    assert len(found) == 1, (keyword, found)
    return found[0]


def environment() -> dict[str, str]:
    """The ENV instructions' variables (KEY=VALUE forms)."""
    env = {}
    for key, args in STEPS:
        if key == "ENV":
            env.update(part.split("=", 1) for part in shlex.split(args))
    return env


def test_torch_comes_from_a_build_argument_that_defaults_to_the_cpu_build_and_cuda_is_documented():
    args = [a for key, a in STEPS if key == "ARG"]
    assert "TORCH_INDEX=https://download.pytorch.org/whl/cpu" in args
    torch_runs = [i for i, (key, a) in enumerate(STEPS) if key == "RUN" and "torch" in a]
    assert len(torch_runs) == 1
    line = STEPS[torch_runs[0]][1]
    assert re.search(r'--index-url\s+"?\$\{?TORCH_INDEX\}?"?', line), line
    keys = [key for key, _ in STEPS]
    assert keys.index("FROM") < keys.index("ARG") < torch_runs[0]  # an ARG before FROM would not reach the RUN
    assert re.search(r"--build-arg TORCH_INDEX=https://download\.pytorch\.org/whl/cu\d+", DOCKERFILE.read_text())


def test_the_runs_folder_is_one_the_servers_user_can_write():
    runs, user = environment()["FEEDBACK_LAB_RUNS"], only("USER")
    assert any(key == "RUN" and f"chown {user} {runs}" in a for key, a in STEPS)
    assert STEPS.index(("USER", user)) > max(i for i, (key, a) in enumerate(STEPS) if key == "RUN" and "chown" in a)


@pytest.fixture(scope="module")
def image_tree(tmp_path_factory) -> Path:
    """WORKDIR as the image has it: what the COPY instructions copy, and nothing else from the repository."""
    tree = tmp_path_factory.mktemp("image") / "srv"
    tree.mkdir()
    for key, args in STEPS:
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
    return tree


def test_the_copied_files_hold_every_package_and_build_it(image_tree, tmp_path):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for pattern in project["tool"]["setuptools"]["packages"]["find"]["include"]:
        assert (image_tree / pattern.rstrip("*")).is_dir(), pattern
    assert (image_tree / project["project"]["readme"]).is_file()
    assert any((image_tree / "assets" / "models").iterdir())  # the embedded model
    # The Dockerfile's `pip install -e .` builds the package from these files; here without network or dependencies.
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                            "-w", str(tmp_path), "."], cwd=image_tree, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    assert list(tmp_path.glob("feedback_lab-*.whl"))


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


def test_the_cmd_serves_the_copied_app_and_the_healthcheck_follows_it(image_tree, tmp_path):
    port = free_port()
    cmd = json.loads(with_port(only("CMD"), port))
    health = with_port(re.sub(r"^(--\S+\s+)*CMD\s+", "", only("HEALTHCHECK")), port)
    workdir = only("WORKDIR")
    env = {
        **os.environ,
        # The image's variables, its WORKDIR being the copied tree here, and its python and feedback-lab the test's.
        **{k: v.replace(workdir, str(image_tree)).replace(PORT, str(port)) for k, v in environment().items()},
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(image_tree),  # the copied app wins over the repository's editable install
        "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "OMP_NUM_THREADS": "1",
    }
    (image_tree / "runs").mkdir(exist_ok=True)
    where = subprocess.run([sys.executable, "-c", "import app; print(app.__file__)"], cwd=image_tree, env=env,
                           capture_output=True, text=True, check=True)
    assert where.stdout.strip().startswith(str(image_tree))

    def healthy() -> int:
        return subprocess.run(["/bin/sh", "-c", health], cwd=image_tree, env=env, capture_output=True, timeout=30).returncode

    assert healthy() != 0  # nothing serves yet: the check must fail
    log = tmp_path / "server.log"
    process = subprocess.Popen(cmd, cwd=image_tree, env=env, stdout=subprocess.DEVNULL, stderr=log.open("w"))
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
