"""Train a language model with REINFORCE from the command line: `feedback-lab train-lm [options] --out DIR`.

Seed 000 sections 6.11 and 6.12 without a browser: the same engine and the same run files
as the live-run page (see app/jobs/runs.py), a progress bar on stderr, and the seed's `[eval]`
lines and worked example on stdout. Every option is a field of LMSettings, with its default
and one-line help; an invalid value or a model that cannot be loaded is refused with one
sentence and exit status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from app.cli.options import add_settings_options, settings_from_args
from app.jobs.runs import RUNS_DIR, RunWriter, new_run_id, run_config
from engines.lm.models import ModelNotAvailable, resolve_device
from engines.lm.reinforce import LMRun
from engines.lm.results import EvalResult, format_eval, format_worked_example, worked_example
from engines.lm.settings import LMSettings, Recipe, model_defaults

MODEL_SETTINGS = tuple(f.name for f in dataclasses.fields(Recipe))
"""The options whose default is the model's own (its recipe, engines.lm.settings.RECIPES) when not given."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One `--field-name` option per LMSettings field, plus --out and --quiet."""
    add_settings_options(parser, LMSettings)
    for action in parser._actions:
        if action.dest in MODEL_SETTINGS:
            action.help = action.help.rsplit(" (default:", 1)[0] + " (default: the model's; see docs/models.md)"
    parser.set_defaults(**dict.fromkeys(MODEL_SETTINGS))
    parser.add_argument("--out", type=Path, default=None, help=f"run folder to write (default: a new folder under {RUNS_DIR}/)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    """Train, writing the run folder; 0 when done, 2 for a refused setting or an unavailable model."""
    from tqdm import tqdm

    try:
        settings = settings_with_model_defaults(args)
        lm = LMRun(settings)
    except (ValueError, ModelNotAvailable) as error:
        print(f"feedback-lab train-lm: error: {error}", file=sys.stderr)
        return 2
    folder = args.out if args.out is not None else RUNS_DIR / new_run_id(settings)
    config = run_config(settings, lm)
    bar = tqdm(total=settings.steps, file=sys.stderr, disable=args.quiet, desc="train-lm", unit="step")
    last = None
    with RunWriter(folder, config) as writer:
        for result in lm.steps():
            writer.write(result)
            if isinstance(result, EvalResult):
                last = result
                bar.write(format_eval(result, settings), file=sys.stdout)
            else:
                bar.update(1)
                gold = {} if result.gold is None else {"gold": f"{result.gold:+.2f}"}
                bar.set_postfix(reward=f"{result.reward:+.2f}", **gold, kl=f"{result.kl:.1f}", s_per_step=f"{result.step_time:.2f}")
    bar.close()
    print(format_worked_example(worked_example(last, 0), settings.reward))
    print(f"run written to {folder}")
    return 0


def settings_with_model_defaults(args: argparse.Namespace) -> LMSettings:
    """The settings of the options, each model setting not given taken from the model's recipe for the device the run
    will use (a CUDA GPU's recipe where there is one), then from LMSettings' defaults."""
    device_type = resolve_device(args.device).type
    recipe = model_defaults(args.model, device_type)
    defaults = LMSettings()
    chosen = {name: getattr(args, name) if getattr(args, name) is not None else recipe.get(name, getattr(defaults, name))
              for name in MODEL_SETTINGS}
    return settings_from_args(LMSettings, argparse.Namespace(**(vars(args) | chosen)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="feedback-lab train-lm", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
