"""The language-model settings: one definition of each source setting, shared by a run and its frontier, without torch."""

import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from engines.lm.settings import EMBEDDED, SEED_LR, LMFrontierSettings, LMSettings, LMSource, default_lr
from engines.settings import field_docs


def test_a_run_and_its_frontier_share_the_source_settings_and_their_defaults():
    source = {f.name for f in fields(LMSource)}
    assert source <= {f.name for f in fields(LMSettings)} and source <= {f.name for f in fields(LMFrontierSettings)}
    assert {k: getattr(LMSettings(), k) for k in source} == {k: getattr(LMFrontierSettings(), k) for k in source} \
        == {k: getattr(LMSource(), k) for k in source}
    assert LMSettings().model == EMBEDDED and LMSettings(model="gpt2").learning_rate == SEED_LR == default_lr("gpt2")


def test_every_field_has_its_one_line_of_documentation():
    for cls in (LMSettings, LMFrontierSettings):
        docs = field_docs(cls)
        assert set(docs) == {f.name for f in fields(cls)} and all(docs.values())
    assert field_docs(LMSettings)["prompts"] != field_docs(LMFrontierSettings)["prompts"]  # each its own meaning


@pytest.mark.parametrize("cls", [LMSettings, LMFrontierSettings])
@pytest.mark.parametrize("bad", [dict(model=""), dict(reward=" "), dict(T=0), dict(prompt_tokens=1.5), dict(prompt_set="poems"),
                                 dict(seed=-1), dict(device="tpu"), dict(device=3)])
def test_a_bad_source_setting_is_refused_by_both(cls, bad):
    with pytest.raises(ValueError):
        cls(**bad)


@pytest.mark.server
def test_the_settings_module_does_not_import_torch():
    code = "import sys, engines.lm.settings; assert 'torch' not in sys.modules, 'torch was imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[3])
