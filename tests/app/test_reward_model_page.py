"""The reward-models page without a browser: its pairs, training, readings, probe, sweep and files against the engines.

Most tests hand the page a small data set built from a few list words (no language model),
so that they train in a second or two; one test generates pairs with the embedded model.
"""

import os
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from bokeh.document import Document

import app.pages.reward_model as rm
import app.pages.reward_model.jobs as rm_jobs
from app.jobs.cluster import Queued, current
from app.jobs.model_cache import ModelCache
from app.jobs.model_jobs import TrainingView, generate_pairs, pairs_key
from app.jobs.runs import learned_rewards
from app.pages.reward_model.figures import GAP_AXIS, PROBE_COLUMNS, TrainingDisplay, pairs_page, probability_curve
from app.pages.reward_model.preference_html import gold, pair_html, pairs_page_html, pairs_summary
from app.pages.reward_model.text import READINGS, file_source
from engines.bradley_terry import bt_prob, oracle_accuracy
from engines.lm.preferences import (
    BUNDLED_PAIRS,
    PairSettings,
    PreferencePairs,
    gold_score,
    label_pairs,
    load_pairs,
    make_pairs,
    relabel,
    split_pairs,
)
from engines.lm.reward_model import load_reward_model, probe_rows, tau_sweep, train_reward_model

pytestmark = pytest.mark.server  # every test here starts a process (an app server, nginx, or the Dask cluster the model jobs run on)

WORDS = ("wonderful", "superb", "boring", "awful", "the", "garden", "and", "quiet")
"""Each word is one token id (100 + its index) in the small data sets."""


def word_pairs(n=200, T=6, seed=0, tau_label=0.5) -> PreferencePairs:
    """n pairs of T-word replies over WORDS, scored by the real gold score g and labelled by equation 12."""
    rng = np.random.default_rng(seed)
    ids_a, ids_b = rng.integers(0, len(WORDS), (n, T)), rng.integers(0, len(WORDS), (n, T))
    text_a, text_b = (np.array([" " + " ".join(WORDS[i] for i in row) for row in ids]) for ids in (ids_a, ids_b))
    g_a, g_b = gold_score(text_a), gold_score(text_b)
    return PreferencePairs(
        prompt=np.array(["My sister opened the letter and felt so"] * n), prompt_ids=np.full((n, 3), 7),
        ids_a=ids_a + 100, ids_b=ids_b + 100, text_a=text_a, text_b=text_b, g_a=g_a, g_b=g_b,
        label=label_pairs(g_a, g_b, tau_label, seed), tau_label=tau_label, seed=seed, model="embedded")


def wait(condition, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the page's worker did not finish in time"
        time.sleep(0.05)


@pytest.fixture
def make_page(monkeypatch, tmp_path):
    """Pages on word pairs (generated 'instantly'), writing under a temporary runs folder, training on the test
    session's local cluster, sharing a cache of their own (build(..., models=ModelCache()) for a page that shares
    nothing kept)."""
    monkeypatch.setattr(rm_jobs, "generate_pairs", lambda settings, *_: iter([word_pairs(settings.pairs, seed=settings.seed)]))
    pages, models = [], ModelCache()

    def build(query=None, **shared):
        shared = {"models": models, **shared}
        pg = rm.RewardModelPage(query={"pairs": "200", "steps": "40", **(query or {})}, root=tmp_path, **shared)
        pages.append(pg)
        return pg

    yield build
    for pg in pages:
        pg.close()
        for run in (pg.sampling.job.run, pg.training.job.run, pg.sweep.job.run):
            run.join(30)


def test_defaults_and_the_link(make_page):
    pg = rm.RewardModelPage(query={}, root=".", models=ModelCache())
    pg.close()
    for run in (pg.sampling.job.run, pg.training.job.run, pg.sweep.job.run):
        run.join(30)  # a training still running would share the cores with the next test's, and MKL's sums with them
    assert (pg.pairs, pg.tau_label, pg.steps, pg.min_count) == (2000, 0.5, 200, 2)  # the engines' defaults
    assert not pg.notice.visible
    pg = make_page({"tau_label": "1.5", "pair": "7", "min_count": "1"})
    assert (pg.pairs, pg.tau_label, pg.pair, pg.min_count, pg.steps) == (200, 1.5, 7, 1, 40)


@pytest.mark.parametrize("query,bad", [({"pairs": "10"}, "pairs"), ({"tau_label": "x"}, "tau_label"),
                                       ({"steps": "100000"}, "steps"), ({"seed": "-1"}, "seed")])
def test_bad_link_values_fall_back_with_a_notice(make_page, query, bad):
    pg = make_page(query)
    assert pg.notice.visible and f"{bad}=" in pg.notice.object
    assert getattr(pg, bad) == rm.RewardModelPage.param[bad].default


def test_pairs_table_and_equation_12_follow_the_data(make_page):
    pg = make_page({"pair": "5"})
    wait(lambda: pg.data is not None)
    base = word_pairs(200)
    d = pg.data
    np.testing.assert_array_equal(d.label, relabel(base, 0.5, 0).label)
    assert list(pg.pairs_display.table.data["index"]) == list(range(5, 5 + rm.PAGE_ROWS))
    np.testing.assert_array_equal(pg.pairs_display.table.data["g_a"], base.g_a[5:13])
    np.testing.assert_array_equal(pg.pairs_display.table.data["preferred"], np.where(d.label[5:13], "a", "b"))
    np.testing.assert_allclose(pg.pairs_display.table.data["p_a"], np.round(bt_prob(base.g_a[5:13], base.g_b[5:13], 0.5), 3))
    assert "Pair 5." in pg.pairs_display.pair.object and f"Acc* = {float(oracle_accuracy(d.g_a, d.g_b, 0.5)):.3f}" in pg.pairs_display.summary.object
    for gap, share in zip(pg.pairs_display.freq.data["gap"], pg.pairs_display.freq.data["frequency"]):
        assert share == pytest.approx(d.label[d.g_a - d.g_b == gap].mean())
    pg.tau_label = 2.0  # relabels at once, without sampling again
    np.testing.assert_array_equal(pg.data.label, relabel(base, 2.0, 0).label)
    np.testing.assert_allclose(pg.pairs_display.prob.data["p"], bt_prob(GAP_AXIS, 0.0, 2.0))
    assert pg.param.pair.bounds == (0, 199)


def test_pairs_show_whole_texts_after_their_prompts_with_whole_scores(make_page):
    """Each continuation is shown whole after its prompt, joined as the model wrote it, an ellipsis where the token
    limit cut it; the page's table holds whole texts (no fixed-width cells) and whole-number gold scores."""
    assert (gold(0.0), gold(2.0), gold(-1.0)) == ("0", "+2", "−1")
    pg = make_page({"pair": "5"})
    wait(lambda: pg.data is not None)
    d = pg.data
    shown = pg.pairs_display.page.object
    assert shown == pairs_page_html(pg.pairs_display.table.data) and shown.count("<tr>") == rm.PAGE_ROWS + 1
    for i in range(5, 5 + rm.PAGE_ROWS):
        for text in (d.text_a[i], d.text_b[i]):
            assert f'<span class="fl-prompt">{d.prompt[i]}</span>{text}' in shown
    page = {"index": [0], "prompt": ["The cat was so"], "text_a": ["laire happy. It purred"], "g_a": [2.0],
            "text_b": [" sad. The end."], "g_b": [0.0], "preferred": ["a"], "p_a": [0.8808]}
    html = pairs_page_html(page)
    assert "The cat was so</span>laire happy. It purred…" in html and "The end.</td>" in html
    assert ">+2<" in html and ">0<" in html and ">0.881<" in html and "g = +0" not in pair_html(d, 5, 0.5)


def test_training_streams_and_reads_as_the_engine(make_page):
    pg = make_page({"steps": "20"})
    wait(lambda: pg.training.trained is not None)
    settings = pg.train_settings()
    trained = train_reward_model(pg.data, settings)
    assert pg.training.trained.evaluation == trained.evaluation  # the same split, seed and steps
    assert list(pg.training.display.curve.data["step"]) == list(range(settings.eval_every, 21, settings.eval_every))
    held = split_pairs(pg.data, settings.heldout, settings.seed)[1]
    assert pg.training.display.ceiling.data["acc_star"][0] == pytest.approx(float(oracle_accuracy(held.g_a, held.g_b, held.tau_label)))
    shown = pg.training.display.metrics.values()
    assert shown["accuracy"] == trained.evaluation.heldout_accuracy and shown["spearman"] == trained.evaluation.spearman
    assert f"{trained.evaluation.heldout_accuracy:.3f} ± {trained.evaluation.heldout_se:.3f}" in pg.training.display.text.object
    # Trained in the worker process, whose torch may use another thread count: float32 sums in another order, so
    # the scores agree to float32's rounding (about 1e-7 relative), not bit for bit.
    assert pg.training.display.probe.data["r_phi"] == pytest.approx([row["r_phi"] for row in probe_rows(trained)], rel=1e-5)
    assert pg.training.display.probe.data["g"][pg.training.display.probe.data["reply"].index("one positive word repeated")] == -7.0
    pg.min_count = 1  # a training control retrains
    wait(lambda: pg.training.trained is not None and pg.training.trained.settings.min_count == 1)


def test_save_the_model_and_the_pairs_then_load_them(make_page, tmp_path):
    pg = make_page()
    wait(lambda: pg.training.trained is not None)
    path = pg.save_model()
    assert path.parent == tmp_path / "reward-models" and f"reward-model:{path}" in pg.training.display.saved.object
    assert learned_rewards(tmp_path) == [f"reward-model:{path}"]
    again = load_reward_model(path)
    np.testing.assert_allclose(again(pg.data.prompt_ids, pg.data.ids_a), pg.training.trained(pg.data.prompt_ids, pg.data.ids_a))
    pairs_path = pg.pairs_files.save()
    assert list(pg.pairs_files.files.options.values()) == [str(pairs_path)]
    assert f"Pairs saved to <code>{pairs_path}</code>." in pg.pairs_display.summary.object  # said in the pairs' part, where Save is
    np.testing.assert_array_equal(load_pairs(pairs_path).label, pg.data.label)
    pg.tau_label = 1.0
    pg.pairs_files.load(str(pairs_path))  # the file's own labels and tau_label come back
    assert pg.tau_label == 0.5 and "from pairs-200-tau0.5-seed0.npz" in pg.pairs_display.summary.object
    np.testing.assert_array_equal(pg.data.label, load_pairs(pairs_path).label)


def test_a_corrupt_pairs_file_is_one_sentence(make_page, tmp_path):
    pg = make_page()
    wait(lambda: pg.data is not None)
    before = pg.data
    (tmp_path / "pairs").mkdir()
    bad = tmp_path / "pairs" / "broken.npz"
    bad.write_bytes(b"PK\x03\x04 not really a zip file")
    pg.pairs_files.refresh()
    pg.pairs_files.load(pg.pairs_files.files.options["broken.npz"])
    notice = pg.sampling.job.notice
    assert notice.visible and notice.alert_type == "danger"
    assert notice.object == f"{bad} is not a readable pairs file: it is truncated, corrupt or not a .npz file."
    assert pg.data is before  # the page goes on with the pairs it had


def test_a_worker_killed_during_training_is_one_sentence_on_the_page_and_start_trains_again(make_page):
    (pid,) = current().client.run(os.getpid).values()
    pg = make_page({"steps": "2000"})
    wait(lambda: len(pg.training.display.curve.data["step"]) >= 1)
    os.kill(pid, signal.SIGKILL)
    wait(lambda: not pg.training.job.controls.running)
    shown = int(pg.training.display.curve.data["step"][-1])
    notice = pg.training.job.notice
    assert notice.visible and notice.alert_type == "danger" and notice.object.startswith(
        "The worker process running this job died (it was killed or ran out of memory): the training stopped at step ")
    stopped_at = int(notice.object.split("step ")[1].split(" ")[0])
    assert shown <= stopped_at < 2000 and pg.training.trained is None
    pg.steps = 20
    wait(lambda: pg.training.trained is not None)  # on the fresh worker the nanny started
    assert not notice.visible and not pg.sampling.job.notice.visible


def test_the_sweep_matches_the_engine(make_page):
    pg = make_page({"steps": "20", "pairs": "100"})
    wait(lambda: pg.training.trained is not None)
    pg.start_sweep()
    wait(lambda: len(pg.sweep.rows) == len(rm.SWEEP_TAUS) and not pg.sweep.job.controls.running)
    rows = tau_sweep(pg.data, rm.SWEEP_TAUS, pg.train_settings(), label_seed=pg.label_seed)
    assert [r.evaluation for r in pg.sweep.rows] == [r.evaluation for r in rows]
    np.testing.assert_allclose(pg.sweep.source.data["acc_star"], [r.evaluation.acc_star for r in rows])
    assert pg.sweep.source.data["acc_star"][0] > pg.sweep.source.data["acc_star"][-1]  # noisier raters, a lower ceiling


def test_a_second_learner_gets_the_kept_reward_model_without_training_again(make_page):
    first = make_page({"steps": "20"})
    wait(lambda: first.training.trained is not None)
    second = make_page({"steps": "20"})
    wait(lambda: second.training.trained is not None)
    assert second.training.job.run._thread is None  # no training was started: the server's kept model is shown
    assert second.training.trained is first.training.trained and second.training.display.metrics.values() == first.training.display.metrics.values()
    np.testing.assert_array_equal(second.training.display.curve.data["accuracy"], first.training.display.curve.data["accuracy"])
    alone = make_page({"steps": "20"}, models=ModelCache())  # a page that shares nothing kept trains its own, the same
    wait(lambda: alone.training.trained is not None)
    assert alone.training.job.run._thread is not None and alone.training.trained.evaluation == first.training.trained.evaluation
    second.min_count = 1  # other settings: trained afresh
    wait(lambda: second.training.trained is not None and second.training.trained.settings.min_count == 1)
    assert second.training.job.run._thread is not None


def test_training_waits_for_the_cpu_in_the_queue_and_says_so(make_page, cpu_taken):
    pg = make_page({"steps": "20"})
    wait(lambda: pg.training.job.run.notice.visible and "place 1" in pg.training.job.run.notice.object)
    assert pg.training.job.run.notice.object == Queued("cpu", 1).waiting("The training").sentence
    assert "waits for the cpu (place 1 in line)" in pg.training.job.run.notice.object and len(pg.training.display.curve.data["step"]) == 0
    assert [q.waiting for q in current().overview()] == [("reward models · training 20 steps",)]
    cpu_taken.free()
    wait(lambda: pg.training.trained is not None)
    assert not pg.training.job.run.notice.visible
    wait(lambda: current().overview() == [])  # its place is left when it ends


def test_learners_queued_behind_the_same_training_get_its_result(make_page, cpu_taken):
    first, second = make_page({"steps": "20"}), make_page({"steps": "20"})  # a room opening the page at once

    def places() -> str:  # both pages' sentences of their place in line: their threads submit in either order
        return " ".join(pg.training.job.run.notice.object for pg in (first, second) if pg.training.job.run.notice.visible)

    wait(lambda: "place 1" in places() and "place 2" in places())
    assert [q.waiting for q in current().overview()] == [("reward models · training 20 steps",) * 2]
    cpu_taken.free()
    wait(lambda: first.training.trained is not None and second.training.trained is not None)
    assert second.training.trained is first.training.trained  # trained once, by the first in line


def test_a_closed_page_leaves_the_queue(make_page, cpu_taken):
    pg = make_page({"steps": "20"})
    wait(lambda: pg.training.job.run.notice.visible and "place 1" in pg.training.job.run.notice.object)
    pg.close()
    pg.training.job.run.join(5)
    wait(lambda: [q.waiting for q in current().overview()] == [()])


def test_pairs_from_the_embedded_model_wait_in_the_queue_and_are_kept(tmp_path, cpu_taken):
    models = ModelCache()
    pg = rm.RewardModelPage(query={"pairs": "50", "steps": "20"}, root=tmp_path, models=models)
    try:
        wait(lambda: pg.sampling.job.run.notice.visible and "place 1" in pg.sampling.job.run.notice.object)
        assert pg.sampling.job.run.notice.object == Queued("cpu", 1).waiting("Sampling the pairs").sentence and pg.data is None
        cpu_taken.free()
        wait(lambda: pg.data is not None)
        pg.training.job.stop()
        expected = make_pairs(PairSettings(pairs=50, seed=0))
        np.testing.assert_array_equal(pg.data.text_a, expected.text_a)
        np.testing.assert_array_equal(pg.data.label, expected.label)
        assert list(pg.pairs_display.table.data["text_b"]) == list(expected.text_b[: rm.PAGE_ROWS])
        assert models.result(pairs_key(PairSettings(pairs=50, seed=0))) is pg.base  # the next learner gets it at once
    finally:
        pg.close()
        pg.training.job.run.join(30)


def test_the_bundled_default_pairs_are_the_default_settings_scored_and_labelled_honestly():
    """The file every learner starts from: PairSettings' 2,000 pairs, g recomputed from the texts, labels by equation 12."""
    pairs = load_pairs(BUNDLED_PAIRS)
    s = PairSettings()
    assert len(pairs) == s.pairs and pairs.seed == s.seed and pairs.tau_label == s.tau_label and pairs.model == s.model
    assert pairs.ids_a.shape == pairs.ids_b.shape == (s.pairs, s.T)
    np.testing.assert_array_equal(pairs.g_a, gold_score(list(pairs.text_a)))
    np.testing.assert_array_equal(pairs.g_b, gold_score(list(pairs.text_b)))
    np.testing.assert_array_equal(pairs.label, label_pairs(pairs.g_a, pairs.g_b, pairs.tau_label, pairs.seed))
    p = bt_prob(pairs.g_a, pairs.g_b, pairs.tau_label)  # (n,) P(y_a preferred), equation 12
    se = np.sqrt(np.sum(p * (1 - p))) / len(p)
    assert abs(pairs.label.mean() - p.mean()) < 4 * se


def test_the_default_pairs_come_from_the_bundle_without_sampling():
    no_cluster = SimpleNamespace(submit=lambda *args: pytest.fail("the default pairs must not sample the model again"))
    reports = list(generate_pairs(PairSettings(), no_cluster, ModelCache()))
    assert len(reports) == 1 and isinstance(reports[0], PreferencePairs) and len(reports[0]) == PairSettings().pairs


def test_the_training_and_the_stretch_are_built_when_first_opened(make_page):
    pg = make_page({"steps": "20"})
    pg.__panel__()  # the page drawn, as a visit draws it
    assert pg.sections.opened == {"pairs"}  # a visit builds the pairs' part only
    wait(lambda: pg.training.trained is not None)  # the model trains all the same, its readings waiting in their part
    pg.section = "training"
    assert pg.sections.opened == {"pairs", "training"} and pg.sections.tabs.active == 1
    assert pg.training.display.loss_steps.end == pg.training.display.accuracy_steps.end == 20 and not pg.training.display.save_button.disabled


# The pure parts, without a page or a cluster: the columns the pairs' table and plot show, and the training's display.


def logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def test_a_page_of_the_table_is_the_pairs_from_the_slider_with_equation_12():
    pairs = word_pairs(20, tau_label=0.7)
    page = pairs_page(pairs, 15, 8)
    assert list(page["index"]) == [15, 16, 17, 18, 19]  # the last page is short
    assert list(page["text_b"]) == list(pairs.text_b[15:]) and list(page["g_a"]) == list(pairs.g_a[15:])
    assert list(page["preferred"]) == ["a" if pairs.label[i] else "b" for i in range(15, 20)]
    np.testing.assert_array_equal(page["p_a"], np.round(logistic((pairs.g_a[15:] - pairs.g_b[15:]) / 0.7), 3))
    assert list(pairs_page(pairs, 50, 8)["index"]) == [19]  # a start past the end shows the last pair


def test_the_probability_curve_is_equation_12_over_the_gap_axis():
    curve = probability_curve(2.0)
    np.testing.assert_allclose(curve["p"], logistic(GAP_AXIS / 2.0), rtol=1e-12)
    assert curve["p"][list(GAP_AXIS).index(0.0)] == 0.5


def test_the_pairs_sentence_escapes_a_file_s_words_and_says_where_they_were_saved():
    pairs = word_pairs(20)
    text = pairs_summary(pairs, file_source("/runs/pairs/a.npz", "<b>mine</b>"), 0.75, saved=Path("/runs/pairs/b.npz"))
    assert "from a.npz (written by the &lt;b&gt;mine&lt;/b&gt; model)" in text and "<b>" not in text
    assert text.endswith("<p>Pairs saved to <code>/runs/pairs/b.npz</code>.</p>") and "Acc* = 0.750" in text


def a_training_view(trained: bool) -> TrainingView:
    """A training of 40 steps read at steps 10 and 20, finished (with readings and a probe) or not."""
    evaluation = SimpleNamespace(pairs=40, heldout_accuracy=0.71, heldout_se=0.02, acc_star=0.8, gold_order_accuracy=0.9,
                                 spearman=0.6)
    model = SimpleNamespace(evaluation=evaluation, normalizer=SimpleNamespace(mu=0.1, sigma=1.3)) if trained else None
    probe = ({"reply": "one word", "text": " superb", "g": 1.0, "r_phi": 0.4, "unknown_tokens": 0},
             {"reply": "repeated", "text": " superb superb", "g": -7.0, "r_phi": 2.5, "unknown_tokens": 1})
    return TrainingView(None, SimpleNamespace(steps=40), {"step": [10, 20], "loss": [0.69, 0.6], "accuracy": [0.55, 0.65]},
                        0.8, 0.5, model, probe if trained else ())


def test_the_training_display_draws_a_view_and_a_clear_sends_nothing_when_nothing_is_shown():
    display, doc, changed = TrainingDisplay(40, lambda: None), Document(), []
    for source in (display.curve, display.ceiling, display.probe):
        doc.add_root(source)
    doc.on_change(lambda event: changed.append(getattr(event, "attr", None)))
    display.clear()
    assert changed == []  # nothing shown yet: a dragged control's steps send nothing
    display.show(a_training_view(trained=False))
    assert list(display.curve.data["accuracy"]) == [0.55, 0.65]
    assert display.ceiling.data == {"step": [0, 40], "acc_star": [0.8, 0.8]}  # Acc* across the whole training
    assert not display.metrics.pane.visible and display.save_button.disabled and list(display.probe.data["reply"]) == []
    display.show(a_training_view(trained=True))
    assert display.metrics.values() == {"accuracy": 0.71, "se": 0.02, "acc_star": 0.8, "gold_order": 0.9, "spearman": 0.6}
    assert set(display.metrics.values()) == set(READINGS) and display.metrics.pane.visible and not display.save_button.disabled
    assert display.probe.data == {"reply": ["one word", "repeated"], "text": [" superb", " superb superb"], "g": [1.0, -7.0],
                                  "r_phi": [0.4, 2.5], "unknown_tokens": [0, 1]}
    assert "<strong>0.710 ± 0.020</strong>" in display.text.object
    changed.clear()
    display.clear()
    assert changed == ["data"] * 3 and not display.metrics.pane.visible and display.save_button.disabled
    assert all(len(source.data[column]) == 0 for source in (display.curve, display.ceiling, display.probe) for column in source.data)
    assert list(display.probe.data) == list(PROBE_COLUMNS)
