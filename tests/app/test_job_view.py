"""A page's job as one piece (widgets/job_view.py): its controls and its alert placed together, Pause and Resume
where the job allows them, a failure that stays said after its job ends, a wait that does not."""

import itertools

import panel as pn

from engines.snapshots import Failed, Waiting
from widgets.job_view import JobView


def test_a_job_is_placed_with_its_alert_under_its_controls():
    job = JobView(apply=lambda snapshot: None, on_start=lambda: None)
    try:
        alone, beside = job.__panel__(), job.view(episodes := pn.widgets.IntInput(label="Episodes"))
        for view in (alone, beside):
            controls, notice = view.objects
            assert notice is job.notice is job.run.notice and job.controls.start_button in controls.select()
        assert beside.objects[0].objects[0] is episodes and not job.pause_buttons
    finally:
        job.stop()


def test_pause_and_resume_are_offered_only_when_the_job_allows_them_and_call_the_page():
    said = []
    job = JobView(apply=lambda snapshot: None, on_start=lambda: None, on_pause=lambda: said.append("pause"),
                  on_resume=lambda: said.append("resume"))
    pause, resume = job.pause_buttons
    assert pause in job.view().select() and resume in job.view().select() and pause.disabled and resume.disabled
    job.pausable = True
    assert not pause.disabled and resume.disabled
    pause.clicks += 1
    job.param.update(pausable=False, paused=True)
    assert pause.disabled and not resume.disabled
    resume.clicks += 1
    job.done(False)  # the job ended: nothing to pause or resume
    assert said == ["pause", "resume"] and pause.disabled and resume.disabled


def test_a_disabled_button_does_not_look_like_the_main_action_and_the_bar_is_named():
    job = JobView(apply=lambda snapshot: None, on_start=lambda: None, on_pause=lambda: None, on_resume=lambda: None)
    controls, (_pause, resume) = job.controls, job.pause_buttons
    assert resume.disabled and resume.color == "default"  # before any run: plain, not solid blue
    assert controls.stop_button.disabled and controls.stop_button.color == "default"
    assert controls.start_button.color == "success"
    job.paused = True
    assert not resume.disabled and resume.color == "primary"
    controls.running = True
    assert controls.start_button.disabled and controls.start_button.color == "default"
    assert controls.stop_button.color == "danger"
    controls.progress = 0.4
    bar = controls.bar.object
    assert 'aria-label="Run progress"' in bar and 'value="400"' in bar and 'title="Run progress: 40 %"' in bar
    assert "40 %</span>" in bar


def test_stop_calls_the_pages_own_stop_when_it_has_one():
    stopped = []
    job = JobView(apply=lambda snapshot: None, on_start=lambda: None, on_stop=lambda: stopped.append(True))
    job.controls.stop_button.clicks += 1
    assert stopped == [True]


def run_to_end(job: JobView, snapshots) -> None:
    job.start(lambda: iter(snapshots))
    job.run.join(10)


def test_a_failure_told_during_a_job_stays_after_it_ends_and_a_wait_does_not():
    job = JobView(apply=lambda snapshot: job.fail(snapshot) if snapshot.startswith("No model") else job.tell(snapshot),
                  on_start=lambda: None)
    run_to_end(job, ["Waits for the cpu <place 1>"])
    assert not job.notice.visible  # the job went on: its wait is over
    run_to_end(job, ["No model 'x<y>' on this machine."])
    assert job.notice.visible and job.notice.alert_type == "danger"
    assert job.notice.object == "No model &#x27;x&lt;y&gt;&#x27; on this machine."  # what a link sent is shown, not run
    job.start(lambda: iter(()))
    assert not job.notice.visible  # a new start clears it
    job.run.join(10)


def test_a_job_that_reached_its_end_shows_full_progress_only_when_it_did_its_work():
    done = []
    job = JobView(apply=lambda snapshot: None, on_start=lambda: None, completed=lambda: False, on_done=done.append)
    run_to_end(job, [1, 2])
    assert job.controls.progress == 0.0 and done == [True] and not job.controls.running
    job.completed = None
    run_to_end(job, [1])
    assert job.controls.progress == 1.0


def test_restart_soon_stops_the_job_under_way_and_starts_afresh():
    # Without a browser session the delayed start comes at once (widgets/debounce.py); in a session it waits for quiet.
    started = []
    job = JobView(apply=lambda snapshot: None, on_start=lambda: started.append(job.run.running))
    job.start(itertools.count)  # a job that runs until it is stopped
    assert job.active
    job.controls.progress = 0.5
    job.restart_soon()
    job.run.join(10)
    assert started == [False] and not job.active and job.controls.progress == 0.0


def test_a_jobs_wait_and_failure_are_said_by_its_view_and_only_its_results_reach_the_page():
    handed = []
    job = JobView(apply=handed.append, on_start=lambda: None)
    job.receive(Waiting("The training waits for the cpu (place 2 in line)."))
    assert job.notice.visible and job.notice.alert_type == "warning" and job.notice.object.startswith("The training")
    result = object()
    job.receive(result)
    assert handed == [result] and not job.notice.visible  # a result clears the wait's sentence
    job.receive(Waiting("The run waits.", snapshot="what it has so far"))
    assert handed == [result, "what it has so far"] and job.notice.object == "The run waits."
    job.receive(Failed("The pairs could not be generated: <no model>."))
    assert job.failed and job.notice.alert_type == "danger" and job.notice.object == "The pairs could not be generated: &lt;no model&gt;."
    job.receive(result)
    assert job.failed and job.notice.visible  # a failure stays said until the next start
    assert handed == [result, "what it has so far", result]
