"""The lab's notebook executed headless (nbclient), as shipped and with its own solutions, and the ways to get it.

Two executions are shared by the tests of this module: the notebook as shipped (every stub in
place: each checkpoint fails with its sentence and the notebook runs to the end) and the notebook
with each stub replaced by the solution folded beneath it (every checkpoint passes, the reward
model is trained and saved). The wrong answers are tested on the checkpoints directly, in
test_checkpoints.py, rather than by executing the notebook again for each.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import panel as pn
import pytest
from nbclient import NotebookClient

from app.cli import main
from app.lab import EXERCISES, NOTEBOOK, notebook, tags
from app.pages import lab as lab_page
from engines.lm.reward_model import load_reward_model

ROOT = Path(__file__).resolve().parents[3]


def execute(nb: dict, workdir: Path, runs: Path) -> nbformat.NotebookNode:
    """Run every cell in a fresh kernel that imports this checkout, with the runs folder at `runs`."""
    node = nbformat.reads(json.dumps(nb), as_version=4)
    env = {"FEEDBACK_LAB_RUNS": str(runs), "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)  # the kernel inherits this process's environment
    try:
        NotebookClient(node, timeout=600, kernel_name="python3", allow_errors=False,
                       resources={"metadata": {"path": str(workdir)}}).execute()
    finally:
        for key, value in saved.items():
            os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)
    return node


def text(cell) -> str:
    """Everything a code cell printed or showed, as plain text."""
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.get("outputs", []))


def checkpoint_texts(node) -> list[str]:
    """The verdict each checkpoint cell shows (its result; what it printed before comes first and is left out)."""
    return ["".join(o["data"]["text/plain"] for o in cell.outputs if o.output_type == "execute_result")
            for cell in node.cells if "checkpoint" in tags(cell)]


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shipped")
    return execute(notebook(), folder, folder / "runs")


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("solved")
    return execute(notebook(solutions=True), folder, folder / "runs"), folder / "runs"


def test_every_exercise_has_its_stub_hint_solution_and_checkpoint_in_that_order():
    cells = notebook()["cells"]
    kinds = [next((t for t in tags(c) if t in ("stub", "hint", "solution", "checkpoint")), None) for c in cells]
    sequence = [k for k in kinds if k]
    assert sequence == ["stub", "hint", "solution", "checkpoint"] * len(EXERCISES)
    for cell in cells:
        if "stub" in tags(cell):
            assert "TODO" in "".join(cell["source"])
        if {"hint", "solution"} & set(tags(cell)):
            assert cell["cell_type"] == "markdown" and "".join(cell["source"]).startswith("<details>")


def test_the_notebook_copies_no_engine_code():
    """The provided pieces are imported from the engines; only the learner's functions are defined in it."""
    source = "\n".join("".join(c["source"]) for c in notebook(solutions=True)["cells"] if c["cell_type"] == "code")
    defined = sorted(line.split("(")[0][4:] for line in source.splitlines() if line.startswith("def "))
    assert defined == sorted(["returns_to_go", "reinforce_loss", "loo_baseline", "bt_prob", "bt_loss", "fit_normalizer"])
    assert "class " not in source


@pytest.mark.slow
def test_as_shipped_every_checkpoint_fails_with_its_sentence_and_the_notebook_runs_to_the_end(shipped):
    texts = checkpoint_texts(shipped)
    assert len(texts) == len(EXERCISES)
    for number, out in enumerate(texts):
        assert out.startswith(f"Checkpoint {number} failed: "), out
        assert "still the stub" in out or "still None" in out, out
    assert "Traceback" not in "".join(text(c) for c in shipped.cells if c.cell_type == "code")
    last = [c for c in shipped.cells if c.cell_type == "code"][-1]
    assert "runs once checkpoint 4 passes" in text(last)  # the stretch waits, and the last cell ran


@pytest.mark.slow
def test_with_its_solutions_every_checkpoint_passes(solved):
    node, _ = solved
    texts = checkpoint_texts(node)
    assert [t.split(":")[0] for t in texts] == [f"Checkpoint {n} passed" for n in range(len(EXERCISES))], texts


@pytest.mark.slow
def test_with_its_solutions_the_provided_cells_train_measure_and_save(solved):
    node, runs = solved
    out = "\n".join(text(c) for c in node.cells if c.cell_type == "code")
    assert "step 0: J = 0.125" in out  # Exercise 1's training, from the uniform policy
    assert "From the smallest variance to the largest: token, loo, none." in out
    assert "leave-one-out  steps to J >= 0.9" in out
    assert "Held-out pairwise accuracy" in out and "Acc* = 0.727" in out
    assert "one positive word repeated" in out  # the probe
    assert "     2.00" in out  # the stretch's last row
    (path,) = (runs / "reward-models").glob("*.pt")
    assert f"--reward reward-model:{path}" in out
    assert load_reward_model(path).evaluation.pairs == 400


def test_the_command_writes_the_notebook_and_the_teachers_copy(tmp_path, capsys):
    assert main(["lab", "--out", str(tmp_path / "lab")]) == 0
    written = tmp_path / "lab" / NOTEBOOK.name
    assert json.loads(written.read_text()) == json.loads(NOTEBOOK.read_text())
    assert f"jupyter lab {written}" in capsys.readouterr().out
    assert main(["lab", "--out", str(tmp_path / "lab"), "--solutions"]) == 0
    teacher = json.loads((tmp_path / "lab" / "lab9-solutions.ipynb").read_text())
    assert "NotImplementedError" not in json.dumps([c for c in teacher["cells"] if c["cell_type"] == "code"])


def test_the_command_refuses_a_folder_it_cannot_write_with_one_sentence(tmp_path, capsys):
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert main(["lab", "--out", str(blocked / "lab")]) == 2
    assert "cannot write into" in capsys.readouterr().err


def test_the_lab_page_lists_every_exercise_and_offers_the_notebook():
    page = lab_page.page()
    listing = lab_page.exercises_html()
    assert all(f"Exercise {e.number} · {e.title}" in listing for e in EXERCISES) and "Stretch" in listing
    assert page.download.file == str(NOTEBOOK) and page.download.filename == "lab9.ipynb"
    root = pn.panel(page).get_root()
    assert len(list(root.references())) < 40  # one HTML pane and a button: cheap for a room of learners
