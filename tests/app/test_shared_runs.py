"""A class's live runs: one computation per distinct run on this test session's local Dask cluster, joined by every
page that asks for it; a finished run shown from its files; Stop and Pause on a shared run; the room's list;
a killed worker under a shared run; a forged run name; the estimated start of a waiting run."""

import json
import os
import signal
import time

import pytest

from app.jobs.cluster import Cluster
from app.jobs.cluster import current as current_cluster
from app.jobs.model_jobs import run_steps
from app.jobs.runs import list_runs, read_run, start_lesson, wall_pace
from app.jobs.shared_runs import CLASS_RUNS, ClassRuns, newest_steps, replay, run_key, start_estimate
from app.pages.live_run import LiveRunPage
from app.pages.live_run.text import ELSEWHERE, FINISHED, JOINED
from engines.lm.settings import LMSettings
from tests.app.test_cluster import own, pid_then_count

pytestmark = pytest.mark.server  # the test session's Dask cluster: a scheduler and a worker process

TINY = {"prompts": "2", "replies": "2", "T": "6", "eval_prompts": "2", "eval_replies": "2"}
"""A step of a fraction of a second on two shared cores."""


def wait_for(condition, timeout=90.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def tiny_page(runs_dir, steps: int, **query) -> LiveRunPage:
    return LiveRunPage(query=TINY | {"steps": str(steps), "eval_every": str(steps)} | query, runs_dir=runs_dir)


def shown_steps(pg: LiveRunPage) -> list:
    return list(pg.display.curves.steps.data["step"])


def no_job_left():
    wait_for(lambda: current_cluster().overview() == [])


def test_the_key_names_everything_that_fixes_a_runs_numbers_and_no_gpu_run():
    s = LMSettings()
    assert run_key(s, "cpu") == run_key(LMSettings(), "cpu")
    for other in (LMSettings(beta=0.0), LMSettings(seed=1), LMSettings(T=12), LMSettings(reward="lvwerra/distilbert-imdb"),
                  LMSettings(advantage="grpo")):
        assert run_key(other, "cpu") != run_key(s, "cpu")
    assert run_key(s, "cuda") is None and run_key(s, "mps") is None


def test_learners_pressing_start_on_the_same_settings_watch_one_computation(tmp_path):
    first, second = tiny_page(tmp_path, 12), tiny_page(tmp_path, 12)
    try:
        first.start()
        wait_for(lambda: len(first.run_job.state.metrics) >= 2)
        second.start()
        assert second.display.shared_line.visible and JOINED in second.display.shared_line.object and not first.display.shared_line.visible
        assert second.run_job.learner.run is first.run_job.learner.run and first.run_job.learner.run.watchers == 2  # one computation for both
        first.run_job.job.run.join(120)
        second.run_job.job.run.join(30)
        (folder,) = tmp_path.iterdir()
        run = read_run(folder)
        assert run.finished and shown_steps(first) == shown_steps(second) == list(range(1, 13))
        assert list(first.display.curves.steps.data["reward"]) == list(second.display.curves.steps.data["reward"]) == [m["reward"] for m in run.metrics]
        assert first.display.samples.object == second.display.samples.object
        assert "Finished: all 12 steps" in first.display.status.object and "Finished: all 12 steps" in second.display.status.object
    finally:
        first.close()
        second.close()
    no_job_left()


def test_a_run_that_already_ran_to_its_end_is_shown_from_its_files_at_once_or_at_its_pace(tmp_path):
    trained = tiny_page(tmp_path, 4)
    trained.start()
    trained.run_job.job.run.join(120)
    (folder,) = tmp_path.iterdir()
    later = tiny_page(tmp_path, 4)
    later.start()
    later.run_job.job.run.join(10)
    assert FINISHED.format(run=folder.name) in later.display.shared_line.object
    assert shown_steps(later) == shown_steps(trained) == [1, 2, 3, 4] and later.display.samples.object == trained.display.samples.object
    assert list(later.display.curves.evals.data["kl_exact"]) == list(trained.display.curves.evals.data["kl_exact"])
    assert later.display.evaluation.lines.object == trained.display.evaluation.lines.object  # the seed's [eval] lines, from eval.jsonl
    assert "Finished: all 4 steps" in later.display.status.object and list(tmp_path.iterdir()) == [folder]  # nothing trained again
    # At its pace: the steps come one after another, each after the seconds it took to train.
    run, started = read_run(folder), time.monotonic()
    states = list(replay(run, at_pace=True))
    assert [s.step for s in states] == [0, 1, 2, 3, 4] and [len(s.evals) for s in states] == [1, 1, 1, 1, 2]
    first, last = run.metrics[0], run.metrics[-1]
    assert time.monotonic() - started >= first["step_time"] + last["time"] - first["time"]  # the seconds it took
    paced = tiny_page(tmp_path, 4, at_pace="true")
    paced.start()
    paced.run_job.job.run.join(30)
    assert shown_steps(paced) == [1, 2, 3, 4] and list(tmp_path.iterdir()) == [folder]



def test_after_a_new_lesson_start_trains_afresh_unless_the_learner_asks_to_replay_a_run_from_before(tmp_path):
    rehearsal = tiny_page(tmp_path, 3)
    rehearsal.start()
    rehearsal.run_job.job.run.join(120)
    (before,) = list_runs(tmp_path)
    start_lesson(tmp_path)
    replayed = tiny_page(tmp_path, 3, at_pace="true")  # the learner asks for a finished run: the rehearsal's is one
    replayed.start()
    replayed.run_job.job.run.join(30)
    assert FINISHED.format(run=before.id) in replayed.display.shared_line.object and len(list_runs(tmp_path)) == 1
    lesson = tiny_page(tmp_path, 3)
    lesson.start()
    lesson.run_job.job.run.join(120)
    assert not lesson.display.shared_line.visible and "Finished: all 3 steps" in lesson.display.status.object
    (fresh,) = [run for run in list_runs(tmp_path) if run.id != before.id]
    assert fresh.finished and [m["step"] for m in fresh.metrics] == [1, 2, 3]  # trained again, in the lesson
    again = tiny_page(tmp_path, 3)  # the lesson's own finished run is shown at once, as before lessons
    again.start()
    again.run_job.job.run.join(30)
    assert FINISHED.format(run=fresh.id) in again.display.shared_line.object and len(list_runs(tmp_path)) == 2
    no_job_left()

def test_stop_leaves_a_shared_run_which_stops_when_its_last_learner_leaves(tmp_path):
    a, b, c = tiny_page(tmp_path, 400), tiny_page(tmp_path, 400), tiny_page(tmp_path, 400)
    try:
        a.start()
        wait_for(lambda: len(a.run_job.state.metrics) >= 1)
        b.start()
        wait_for(lambda: len(b.run_job.state.metrics) >= 1)
        a.run_job.stop()  # a leaves; the run trains on for b
        a.run_job.job.run.join(10)
        assert a.phase == "idle" and "it trains on for the 1 other learner(s)" in a.display.shared_line.object
        left_at = len(b.run_job.state.metrics)
        wait_for(lambda: len(b.run_job.state.metrics) >= left_at + 2)
        b.run_job.stop()  # the last learner leaves: the computation stops after its step in flight, written and shown
        b.run_job.job.run.join(30)
        (folder,) = tmp_path.iterdir()
        run = read_run(folder)
        assert not run.finished and shown_steps(b) == [m["step"] for m in run.metrics]
        assert "Stopped after step" in b.display.status.object
        no_job_left()
        c.start()  # the stopped run is not joined: a new one starts
        assert not c.display.shared_line.visible
        wait_for(lambda: len(list(tmp_path.glob("*/config.json"))) == 2)
    finally:
        for pg in (a, b, c):
            pg.close()
    no_job_left()


def test_pause_holds_only_the_learners_view_until_every_learner_on_the_run_has_paused(tmp_path):
    a, b = tiny_page(tmp_path, 400), tiny_page(tmp_path, 400)
    try:
        a.start()
        wait_for(lambda: a.phase == "running" and len(a.run_job.state.metrics) >= 1)
        b.start()
        wait_for(lambda: len(b.run_job.state.metrics) >= 1)
        a.run_job.pause()
        wait_for(lambda: a.phase == "paused")
        held = len(a.run_job.state.metrics)
        wait_for(lambda: len(b.run_job.state.metrics) >= held + 3)  # b's view goes on: a's Pause does not freeze it
        assert len(a.run_job.state.metrics) == held and b.phase == "running"
        b.run_job.pause()  # now every learner on it has paused: the computation holds, keeping its device
        wait_for(lambda: b.phase == "paused")
        (run,) = CLASS_RUNS.training(tmp_path)
        wait_for(lambda: run.state.phase == "paused")
        on_disk = len(read_run(next(tmp_path.iterdir())).metrics)
        time.sleep(1.0)
        assert len(read_run(next(tmp_path.iterdir())).metrics) == on_disk
        a.run_job.resume()  # one learner resumes: the run goes on, and a's view catches up with the newest step
        wait_for(lambda: len(a.run_job.state.metrics) > on_disk)
        assert b.phase == "paused" and len(b.run_job.state.metrics) <= on_disk
    finally:
        a.close()
        b.close()
    no_job_left()


def test_the_rooms_list_counts_the_learners_on_each_run_and_opens_one_live(tmp_path):
    a, b, c = tiny_page(tmp_path, 400), tiny_page(tmp_path, 400), tiny_page(tmp_path, 3, beta="0.2")
    try:
        a.start()
        wait_for(lambda: a.run_job.state.folder is not None)
        b.start()
        c.refresh_runs()
        table = c.runs_list.table.value
        assert list(table["learners"]) == [2] and list(table["status"]) == ["running"]
        c.runs_list.table.selection = [0]
        c.runs_list.open_button.clicks += 1  # Open: c watches a's run live, its controls take its settings
        assert c.steps == 400 and c.beta == a.beta and c.run == a.run_job.state.folder.name
        wait_for(lambda: len(c.run_job.state.metrics) >= 2)
        c.refresh_runs()
        assert list(c.runs_list.table.value["learners"]) == [3]
    finally:
        for pg in (a, b, c):
            pg.close()
    no_job_left()


@pytest.mark.parametrize("name,sentence", [
    ("20261206-000000-embedded-vader-beta0", "There is no run named"),
    ("..", "There is no run named"),
])
def test_a_forged_or_unknown_run_in_a_link_gets_one_sentence_and_the_page_stays_usable(tmp_path, name, sentence):
    pg = tiny_page(tmp_path, 2, run=name)
    assert pg.run_job.job.notice.visible and sentence in pg.run_job.job.notice.object and pg.run == "" and pg.phase == "idle"
    pg.start()
    pg.run_job.job.run.join(120)
    assert len(list_runs(tmp_path)) == 1 and list_runs(tmp_path)[0].finished


def test_a_run_name_that_could_leave_the_runs_folder_is_refused_by_the_link(tmp_path):
    pg = tiny_page(tmp_path, 2, run="../../etc")
    assert pg.notice.visible and "run=" in pg.notice.object and pg.run == "" and not pg.run_job.job.notice.visible


def test_a_killed_worker_under_a_shared_run_tells_every_learner_and_the_next_run_starts(tmp_path):
    cluster = current_cluster()
    pid = next(iter(own(cluster.submit("cpu", "which worker", pid_then_count, 0, 0.0).snapshots())))
    a, b = tiny_page(tmp_path, 400), tiny_page(tmp_path, 400)
    try:
        a.start()
        wait_for(lambda: len(a.run_job.state.metrics) >= 2)
        b.start()
        wait_for(lambda: len(b.run_job.state.metrics) >= 2)
        os.kill(pid, signal.SIGKILL)
        a.run_job.job.run.join(60)
        b.run_job.job.run.join(60)
        run = read_run(next(tmp_path.iterdir()))
        step = run.metrics[-1]["step"]
        for pg in (a, b):
            assert pg.run_job.job.notice.visible and f"the run stopped at step {step}" in pg.run_job.job.notice.object
        assert [m["step"] for m in run.metrics] == list(range(1, step + 1))
        wait_for(lambda: cluster.devices() == ["cpu"])  # the nanny's fresh worker (until then Start says to try again)
        a.steps = 2
        a.start()  # the next run starts on the fresh worker
        a.run_job.job.run.join(120)
        assert sum(r.finished for r in list_runs(tmp_path)) == 1, a.run_job.job.notice.object
    finally:
        a.close()
        b.close()
    no_job_left()


def test_the_steps_of_a_live_runs_job_are_read_from_its_label():
    assert run_steps("feedback-lab-job-0123|cpu|embedded · vader · β 0.05 · 300 steps") == 300
    assert run_steps("feedback-lab-job-0123|cpu|reward models · training 400 steps") is None


def test_the_estimated_start_frees_the_slots_in_order():
    # Two slots, both busy: 100 and 40 steps left at 0.5 s a step; the next in line starts when the second frees.
    assert start_estimate(1, 2, [(200, 300, 0.5), (260, 300, 0.5)], [300], load_seconds=0) == pytest.approx(20.0)
    # Third in line: the two runs ahead take the slots freed at 20 s and 50 s; the third gets the first of them
    # again once that run's 300 steps (150 s) and 2 s to load are done.
    assert start_estimate(3, 2, [(200, 300, 0.5), (260, 300, 0.5)], [300, 300], load_seconds=2) == pytest.approx(172.0)
    # A run whose pace is not known yet goes at the median pace; a free slot means now.
    assert start_estimate(1, 2, [(0, 100, 0.0), (50, 100, 1.0)], [100], load_seconds=0) == pytest.approx(50.0)
    assert start_estimate(1, 3, [(0, 100, 1.0)], [100]) == 0.0
    assert start_estimate(1, 1, [(0, 100, 0.0)], [100]) is None


def test_a_run_waiting_for_its_device_says_when_it_should_start(tmp_path):
    """This test session's cluster trains one job at a time: the second distinct run waits, with its estimate."""
    a, b = tiny_page(tmp_path, 400), tiny_page(tmp_path, 5, beta="0.2")
    try:
        a.start()
        wait_for(lambda: len(a.run_job.state.metrics) >= 3)
        b.start()
        wait_for(lambda: b.phase == "queued" and "It should start in about" in b.run_job.job.notice.object)
        (running,) = [r for r in CLASS_RUNS.training(tmp_path) if r.settings.steps == 400]
        left = 400 - running.state.step
        said, pace = b.run_job.state.starts_in, wall_pace(list(running.state.metrics[-30:]))
        assert 0.5 * left * pace <= said <= 2 * left * pace + 2  # the steps a has left, at the pace it goes
        a.run_job.stop()
        b.run_job.job.run.join(120)
        assert b.run_job.state.step == 5
    finally:
        a.close()
        b.close()
    no_job_left()


def test_the_newest_steps_are_read_from_the_end_of_a_long_file(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    lines = [json.dumps({"step": i, "reward": 0.1 * i, "step_time": 0.5}) for i in range(1, 501)]
    (folder / "metrics.jsonl").write_text("\n".join(lines) + '\n{"step": 501, "rew')  # the line being written
    assert [m["step"] for m in newest_steps(folder)] == list(range(491, 501))
    assert newest_steps(tmp_path / "no-such-run") == []


@pytest.fixture
def other_process():
    """Another web process of the cluster, as far as the class's runs go: a Dask client of its own on the test
    session's scheduler (the registry tells processes apart by client) and runs of its own."""
    cluster = Cluster(current_cluster().client.scheduler.address)
    yield cluster, ClassRuns()
    cluster.close()


def page_of(process, runs_dir, steps: int) -> LiveRunPage:
    cluster, class_runs = process
    pg = LiveRunPage(query=TINY | {"steps": str(steps), "eval_every": str(steps)}, runs_dir=runs_dir, cluster=cluster)
    pg.run_job.learner.class_runs = class_runs
    return pg


def test_a_run_is_trained_once_for_the_learners_of_two_web_processes_and_stops_when_the_last_leaves(tmp_path, other_process):
    a, b = tiny_page(tmp_path, 400), page_of(other_process, tmp_path, 400)
    try:
        a.start()
        b.start()  # the same settings on the other process, while a's run loads: b follows it
        assert JOINED in b.display.shared_line.object and ELSEWHERE in b.display.shared_line.object
        wait_for(lambda: len(b.run_job.state.metrics) >= 3)
        assert shown_steps(b)[:3] == [1, 2, 3]
        wait_for(lambda: CLASS_RUNS.watchers(tmp_path, current_cluster()) == {a.run_job.state.folder.name: 2}, 10)
        b.run_job.pause()  # b alone pauses: the run trains on for a
        wait_for(lambda: b.phase == "paused")
        held = len(a.run_job.state.metrics)
        wait_for(lambda: len(a.run_job.state.metrics) >= held + 2)
        a.run_job.pause()  # every learner of the cluster has paused: the computation holds
        (run,) = CLASS_RUNS.training(tmp_path)
        wait_for(lambda: run.state.phase == "paused", 10)
        b.run_job.resume()
        a.run_job.stop()  # every learner of a's process leaves; the run trains on for b, on the other process
        a.run_job.job.run.join(10)
        left_at = len(b.run_job.state.metrics)
        wait_for(lambda: len(b.run_job.state.metrics) >= left_at + 2)
        assert len(list(tmp_path.iterdir())) == 1  # one run folder for both processes
        b.run_job.stop()  # the last learner of the cluster leaves: the computation stops
        no_job_left()
        (folder,) = tmp_path.iterdir()
        assert not read_run(folder).finished
    finally:
        a.close()
        b.close()
    no_job_left()


def test_the_wall_clock_pace_counts_the_waits_between_steps():
    records = [{"step": 1, "step_time": 0.4, "time": 100.0}, {"step": 2, "step_time": 0.4, "time": 101.2},
               {"step": 3, "step_time": 0.4, "time": 102.0}]
    assert wall_pace(records) == pytest.approx(1.0)  # 2 s for 2 steps, though each computed in 0.4 s
    assert wall_pace(records[:1]) is None and wall_pace([{"step": 1, "step_time": 0.4}] * 2) is None


def test_a_wait_is_said_as_a_person_says_it_and_the_benchmark_reads_it_back():
    from app.jobs.cluster import format_wait
    from bench.class_runs import WAIT

    said = {s: format_wait(s) for s in (3, 42, 89, 151, 180, 599, 1000)}
    assert said == {3: "5 s", 42: "40 s", 89: "90 s", 151: "2 min 30 s", 180: "3 min", 599: "10 min", 1000: "17 min"}
    for seconds, text in said.items():
        found = WAIT.search(f"It should start in about {text}.")
        assert 60 * int(found.group(1) or 0) + int(found.group(2) or 0) == pytest.approx(seconds, abs=30)
