"""The lab of seed 001 ("In the Lab"): six exercises in a Jupyter notebook that runs offline.

The notebook (`lab9.ipynb` beside this file) holds each exercise's briefing, its `# TODO`
stub, a folded hint and a folded solution; the provided pieces come from the engines, and
every checkpoint cell calls `app.lab.checkpoints`, which says in one or two sentences what
is right or wrong. `feedback-lab lab --out DIR` writes the notebook out, and the `/lab`
page offers it for download with the list below.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

NOTEBOOK = Path(files(__name__) / "lab9.ipynb")
"""The notebook as shipped: stubs to fill in, solutions folded beneath them."""


@dataclass(frozen=True)
class Exercise:
    """One exercise of the lab, as seed 001's "In the Lab" table lists it."""

    number: int
    """0 to 5."""
    part: str
    """"A" (the policy gradient on a toy task) or "B" (learning a reward from comparisons)."""
    title: str
    """The exercise's title."""
    sections: str
    """The briefing sections it uses."""
    minutes: int
    """The time the seed budgets for it."""
    writes: str
    """What the learner writes."""


PARTS = {"A": "The Policy Gradient on a Toy Task", "B": "Learning a Reward From Comparisons"}
"""The lab's two parts."""

EXERCISES = (
    Exercise(0, "A", "Read the Toy Environment", "2", 3, "log π(y | x) of a response and the chance of writing y* exactly"),
    Exercise(1, "A", "Returns and the REINFORCE Loss", "2, 3, 5", 12, "returns_to_go(rewards), reinforce_loss(logp, returns, baseline=0.0)"),
    Exercise(2, "A", "A Baseline, and the Variance It Removes", "4", 9, "loo_baseline(returns)"),
    Exercise(3, "B", "The Bradley–Terry Rater", "7", 8, "bt_prob(g_a, g_b, tau_label)"),
    Exercise(4, "B", "The Reward-Model Loss, and Training", "8", 12, "bt_loss(reward_w, reward_l)"),
    Exercise(5, "B", "Normalize and Save the Reward Model", "8", 6, "fit_normalizer(raw_scores)"),
)
"""The six exercises in order; the stretch (noisier raters) follows the last checkpoint."""

STRETCH = "Noisier raters: τ_label raised, the reward model's held-out accuracy against Acc*"
"""The optional section after Exercise 5."""


SOLUTION = re.compile(r"```python\n(.*?)\n```", re.S)
"""The code block of a folded solution cell."""


def tags(cell: dict) -> list[str]:
    """A notebook cell's tags: "stub", "hint", "solution", "checkpoint" or "provided"."""
    return cell.get("metadata", {}).get("tags", [])


def notebook(solutions: bool = False) -> dict:
    """The notebook as its JSON object; with `solutions`, every stub cell holds the solution folded beneath it."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    if solutions:
        cells = nb["cells"]
        for i, cell in enumerate(cells):
            if "stub" in tags(cell):
                folded = next(c for c in cells[i + 1:] if "solution" in tags(c))
                cell["source"] = SOLUTION.search("".join(folded["source"])).group(1)
    return nb


def write_notebook(out_dir: Path | str, solutions: bool = False) -> Path:
    """Write the notebook into `out_dir` (made if missing), with the solutions filled in if asked; its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / (NOTEBOOK.stem + ("-solutions" if solutions else "") + NOTEBOOK.suffix)
    path.write_text(json.dumps(notebook(solutions), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=".", metavar="DIR", help="folder to write the notebook into (default: here)")
    parser.add_argument("--solutions", action="store_true",
                        help="write the notebook with every stub replaced by its solution (for teachers)")


def run(args: argparse.Namespace) -> int:
    try:
        path = write_notebook(args.out, args.solutions)
    except OSError as error:
        print(f"feedback-lab lab: error: cannot write into {args.out}: {error.strerror or error}.", file=sys.stderr)
        return 2
    print(f"Wrote {path}. Open it with `jupyter lab {path}` where Feedback Lab is installed "
          '(`pip install -e ".[lab]"` adds Jupyter).')
    return 0
