"""What a server lets its learners load: the models and reward classifiers its teacher offers, and room for them.

    feedback-lab serve --models embedded,gpt2,distilgpt2,FOLDER --rewards lvwerra/distilbert-imdb --max-download-mb 1000

The pages offer the models and rewards of `Offer` as menus, never as free text: a link naming
another falls back to the default with the usual notice (widgets/url_state.py), and Start checks
again (`start_problem`), so a link can never make the server fetch what its teacher did not offer.
Without `--models` (or FEEDBACK_LAB_MODELS) a server offers the embedded model and every causal
language model already in its model folders and its Hugging Face cache; without `--rewards`
(FEEDBACK_LAB_REWARDS) the sequence classifiers already in that cache. VADER and the reward models
saved in the runs folder are always offered: they download nothing.

At start-up (`check_offer`) every offered hub model not yet on the machine is sized on the hub and
refused, with one sentence, if it is larger than `--max-download-mb` (app/serving/limits.py). Before a
download (`room_problem`) the free space of the cache's disk and this machine's available memory
are checked against it. app/jobs/model_jobs.py runs one download at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from engines.lm.settings import (
    EMBEDDED,
    EMBEDDED_DIR,
    LOCAL_REWARDS,
    PACKAGED,
    REWARD_PREFIX,
    is_classifier,
    is_folder,
    is_shipped,
)

MODELS_VARIABLE = "FEEDBACK_LAB_MODELS"
REWARDS_VARIABLE = "FEEDBACK_LAB_REWARDS"
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
"""The form of a hub id: a name, or owner/name."""
CAUSAL_LM = ("ForCausalLM", "LMHeadModel")
"""How the architectures of a causal language model's config.json end (GPT2LMHeadModel, LlamaForCausalLM)."""
CLASSIFIER = ("ForSequenceClassification",)
"""How a sequence classifier's architectures end (DistilBertForSequenceClassification)."""
WEIGHTS = ("*.safetensors", "pytorch_model*.bin")
"""The weight files a cached snapshot must hold to load without a download."""
DISK_SPARE_BYTES = 1_000_000_000
"""Bytes the cache's disk must keep free after a download: the runs folder and the system write there too."""
MEMORY_COPIES = 5
"""Copies of a model's float32 parameters a run holds: the loaded model (the reference), the run's policy, its
gradients and Adam's two moments."""


@dataclass(frozen=True)
class Offer:
    """The models and reward classifiers a server's pages offer; nothing else is ever loaded for a learner."""

    models: tuple[str, ...] = (EMBEDDED,)
    """Causal language models: 'embedded', hub ids and folders; the first is the pages' default."""
    rewards: tuple[str, ...] = ()
    """Reward classifiers (hub ids and folders) offered besides VADER and the reward models saved in the runs folder."""


def config_kind(config: Path) -> str:
    """'causal' or 'classifier' from a config.json's architectures; '' for anything else or no readable file."""
    try:
        architectures = json.loads(config.read_text()).get("architectures") or []
    except (OSError, ValueError, AttributeError):
        return ""
    if any(str(a).endswith(CAUSAL_LM) for a in architectures):
        return "causal"
    return "classifier" if any(str(a).endswith(CLASSIFIER) for a in architectures) else ""


def model_folders(runs_dir: Path) -> tuple[Path, ...]:
    """The server's model folders: the bundled models and the runs folder."""
    return (EMBEDDED_DIR.parent, Path(runs_dir))


def shown_folder(path: Path) -> str:
    """A folder as the menus name it: relative to the working folder when inside it."""
    path = path.resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def cached_models() -> dict[str, list[str]]:
    """The hub ids in this machine's Hugging Face cache whose newest snapshot holds a config and weights, by kind."""
    from huggingface_hub import constants, scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    found = {"causal": [], "classifier": []}
    try:
        # Named, not left to the default: scan_cache_dir's default is the cache folder as it was when the hub
        # client's cache module was first imported, not the one in force now.
        repos = scan_cache_dir(constants.HF_HUB_CACHE).repos
    except CacheNotFound:
        return found
    for repo in sorted(repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model" or not repo.revisions:
            continue
        snapshot = max(repo.revisions, key=lambda r: r.last_modified).snapshot_path
        # A snapshot with a config but no weights (a download cut short) would be fetched again at load time.
        kind = config_kind(snapshot / "config.json")
        if kind and any(any(snapshot.glob(p)) for p in WEIGHTS):
            found[kind].append(repo.repo_id)
    return found


def installed_packaged() -> tuple[str, ...]:
    """The packaged models (engines.lm.settings.PACKAGED) installed here."""
    from engines.lm.models import packaged_installed

    return tuple(name for name in PACKAGED if packaged_installed(name))


def scanned_offer(runs_dir: Path) -> Offer:
    """The default offer: the embedded model, the packaged models installed, and every model already on this machine,
    in the model folders or the cache."""
    folders = {"causal": [], "classifier": []}
    for root in model_folders(runs_dir):
        for folder in sorted(root.iterdir()) if root.is_dir() else ():
            kind = config_kind(folder / "config.json")
            if kind and folder.resolve() != EMBEDDED_DIR.resolve():
                folders[kind].append(shown_folder(folder))
    cached = cached_models()
    return Offer(models=(EMBEDDED, *installed_packaged(), *folders["causal"], *cached["causal"]), rewards=(*folders["classifier"], *cached["classifier"]))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("what learners may load (each also an environment variable; an option given wins)")
    group.add_argument("--models", metavar="NAMES", default=None,
                       help="the causal language models the pages offer, comma-separated: 'embedded', hub ids, folders; the first is "
                            f"the default (default: the embedded model and every one already in the model folders and the hub cache; "
                            f"${MODELS_VARIABLE})")
    group.add_argument("--rewards", metavar="NAMES", default=None,
                       help="the reward classifiers offered besides VADER and the saved reward models, comma-separated: hub ids, "
                            f"folders (default: every one already in the hub cache; ${REWARDS_VARIABLE})")


def parse_names(text: str, option: str, what: str) -> tuple[str, ...]:
    """The comma-separated names of an option, each an existing folder holding a config.json or of a hub id's form.

    Raises ValueError with one sentence for the first that is neither.
    """
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise ValueError(f"{option} must name at least one {what}.")
    for name in names:
        if name in PACKAGED and name not in installed_packaged():
            from engines.lm.models import not_installed

            raise ValueError(f"{option}: {not_installed(PACKAGED[name])}")
        if is_shipped(name) or name in LOCAL_REWARDS:
            continue
        if is_folder(name):
            if not (Path(name).expanduser() / "config.json").is_file():
                raise ValueError(f"{option}: there is no {what} in the folder {name} (it has no config.json).")
        elif HUB_ID.match(name) is None or "--" in name or ".." in name:
            raise ValueError(f"{option}: {name!r} is neither a folder nor a hub id such as gpt2 or distilbert/distilgpt2.")
    return names


def from_environment(args: argparse.Namespace | None = None, environ: dict[str, str] | None = None,
                     runs_dir: Path | None = None) -> Offer:
    """The offer of the options given in `args`, else of the environment, else what this machine already holds.

    Raises ValueError with one sentence for a name that is neither a folder with a model nor a hub id.
    """
    from app.jobs.runs import RUNS_DIR

    environ = os.environ if environ is None else environ
    given = {}
    for field, variable, what in (("models", MODELS_VARIABLE, "model"), ("rewards", REWARDS_VARIABLE, "reward classifier")):
        text = getattr(args, field, None) if args is not None else None
        text = text if text is not None else environ.get(variable, "")
        if text.strip():
            given[field] = parse_names(text, f"--{field}", what)
    if len(given) < 2:
        scanned = scanned_offer(RUNS_DIR if runs_dir is None else runs_dir)
        given = {"models": scanned.models, "rewards": scanned.rewards} | given
    return Offer(models=given["models"], rewards=tuple(r for r in given["rewards"] if r not in LOCAL_REWARDS))


def hub_names(offer: Offer) -> list[tuple[str, str]]:
    """(name, 'model' or 'reward classifier') of every offered hub id."""
    named = [(m, "model") for m in offer.models] + [(r, "reward classifier") for r in offer.rewards]
    return [(name, what) for name, what in named if not is_shipped(name) and not is_folder(name)]


def check_offer(offer: Offer, max_download_mb: int) -> list[str]:
    """Size every offered hub id not yet on this machine; returns notes for those that cannot be sized offline.

    Raises ValueError with one sentence for the first the hub does not have, will not give this server,
    or that is larger than `max_download_mb`.
    """
    names = hub_names(offer)
    if not names:
        return []
    from engines.lm.models import ModelNotAvailable, download_size, is_local, offline

    notes = []
    for name, what in names:
        if offline():
            if not is_local(name):
                notes.append(f"the {what} '{name}' is not on this machine and HF_HUB_OFFLINE is set: a run of it will be refused.")
            continue
        try:
            download = download_size(name, what)
        except ModelNotAvailable as error:
            raise ValueError(str(error)) from None
        if download is not None and download.size > max_download_mb * 1_000_000:
            raise ValueError(size_sentence(download, max_download_mb))
    return notes


def size_sentence(download, max_download_mb: int) -> str:
    return (f"The {download.what} '{download.name}' is {download.size / 1e6:,.0f} MB to download, more than this server's "
            f"--max-download-mb of {max_download_mb:,} MB.")


_installed: Offer | None = None


def install(offer: Offer) -> None:
    """Make `offer` the one in force in this process (`feedback-lab serve` does, once, at start-up)."""
    global _installed
    _installed = offer


def current() -> Offer:
    """The offer in force: the one installed, else the environment's (tests, `panel serve`)."""
    return _installed if _installed is not None else from_environment()


# ----------------------------------------------------------------------------- the pages


def offer_menu(page, name: str, options) -> None:
    """Make `options` (a list, or a dict of labels to values) the choices of the Selector `name` of `page`; a value
    not among them becomes the first."""
    values = list(options.values()) if isinstance(options, dict) else list(options)
    page.param[name].objects = options if isinstance(options, dict) else values
    if getattr(page, name) not in values:
        setattr(page, name, values[0])


def reward_classifiers() -> tuple[str, ...]:
    """The rewards offered that read no saved reward model: VADER, then the offered classifiers."""
    return LOCAL_REWARDS + current().rewards


def reward_options(root: Path) -> dict[str, str]:
    """A run's choice of reward, label -> reward: VADER and the classifiers this server offers, then each reward
    model saved under `root` (a runs folder) by file name."""
    from app.jobs.runs import learned_rewards

    return {name: name for name in reward_classifiers()} | {f"learned: {Path(r[len(REWARD_PREFIX):]).name}": r for r in learned_rewards(root)}


def source_problem(model: str, reward: str, offer: Offer) -> str:
    """One sentence if `model` or `reward` is not offered, or is an offered folder no longer holding a model ('' otherwise)."""
    if model not in offer.models:
        return f"This server does not offer the model '{model}'; choose one of {', '.join(offer.models)}."
    if is_classifier(reward) and reward not in offer.rewards:
        return f"This server does not offer the reward '{reward}'; choose one of {', '.join(LOCAL_REWARDS + offer.rewards)}."
    files = [(model, "model")] + ([(reward, "reward classifier")] if is_classifier(reward) else [])
    for name, what in files:
        if name != EMBEDDED and is_folder(name) and not (Path(name).expanduser() / "config.json").is_file():
            return f"The {what} folder {name} that this server offers holds no model any more (it has no config.json)."
    return ""


def start_problem(offer: Offer, make_settings, highest: dict[str, int]) -> tuple[object | None, str]:
    """(the settings `make_settings()` builds, '') when a run may start with them, or (None, the one sentence why not):
    the engine refuses the settings (its ValueError), their model or reward is not offered (source_problem), or they
    ask for more than the server allows (app.serving.limits.limit_problem)."""
    from app.serving.limits import limit_problem

    try:
        settings = make_settings()
    except ValueError as error:
        return None, str(error)
    problem = source_problem(settings.model, settings.reward, offer) or limit_problem(settings, highest)
    return (None, problem) if problem else (settings, "")


# ----------------------------------------------------------------------------- room for a download


def cache_disk() -> Path:
    """The Hugging Face cache's folder, or its nearest existing parent (the cache is made by the first download)."""
    from huggingface_hub import constants

    folder = Path(constants.HF_HUB_CACHE).expanduser().resolve()
    while not folder.exists():
        folder = folder.parent
    return folder


def available_memory() -> int:
    """Bytes of memory this machine can give a process now without swapping."""
    import psutil

    return psutil.virtual_memory().available


def download_problem(download) -> str:
    """The server's word on a download a run asks for (room_problem at this server's --max-download-mb): what a live
    run is handed to check (app.jobs.model_jobs.LiveRun)."""
    from app.serving.limits import current as current_limits

    return room_problem(download, current_limits().max_download_mb)


def room_problem(download, max_download_mb: int) -> str:
    """One sentence if `download` (an engines.lm.models.Download) is larger than the server's bound, would leave the
    cache's disk with less than DISK_SPARE_BYTES free, or its model needs more memory than this machine has now
    ('' otherwise). The local cluster's workers run on this machine and load from this cache."""
    if download.size > max_download_mb * 1_000_000:
        return size_sentence(download, max_download_mb)
    disk = cache_disk()
    free = shutil.disk_usage(disk).free
    if free - download.size < DISK_SPARE_BYTES:
        return (f"The {download.what} '{download.name}' is {download.size / 1e6:,.0f} MB to download but the disk of {disk} "
                f"has {free / 1e6:,.0f} MB free, and {DISK_SPARE_BYTES / 1e6:,.0f} MB must stay free, so it was not downloaded.")
    copies = MEMORY_COPIES if download.what == "model" else 1  # a reward classifier is only loaded, never trained
    need, have = copies * download.parameter_bytes, available_memory()
    if need > have:
        return (f"The {download.what} '{download.name}' needs about {need / 1e9:.1f} GB of memory ({copies} copies "
                f"of its {download.parameter_bytes / 1e6:,.0f} MB of parameters) but this machine has {have / 1e9:.1f} GB "
                "available, so it was not downloaded.")
    return ""
