"""The teacher's room view: what the class predicted before the reveal, where the learners are, the class's runs.

Opened only by the teacher's link (`feedback-lab serve` prints it; app/serving/room.py checks its token),
it is not a page of the navigation. It shows, live:

- where learners join: the URL they type and its QR code, large for a projector, when the server was told it
  (`serve --class` works it out: app/serving/classroom.py);
- how many learners are on each page now, across every web process of the server;
- for every prediction card of the app, how many learners voted for each answer, in a first and a second
  round (only learners whose "Counted in the room" switch is on; a vote stays counted for the lesson
  after the learner leaves the page), the cards asked so far first; "Hold the reveal", "Reveal the
  answer" (to every learner's card) and "Vote again" for each card, and "Show the class", which puts
  one card large for a projector with its right answer hidden until revealed;
- "Send the class there": a link of the app (a page with its state, from the teacher's own tab)
  that every learner's page then shows in a banner, to follow with one click;
- the class's live runs of this lesson (the live-run page's list of the runs folder, less the runs
  started before the lesson) on one plot, reward and KL against the step, coloured by β, each with a
  link that opens it as the learners see it; "Start a new lesson" sets the runs so far aside
  (app/jobs/runs.py `start_lesson`), so that a rehearsal's finished runs are not what the class's Start shows.

The room's counts come from app/serving/room.py's thread, at most every SYNC_SECONDS; the runs from the
runs folder, read again every RUNS_SECONDS while the view is open.
"""

from __future__ import annotations

import html
import math
from functools import partial
from pathlib import Path

import panel as pn

from app.jobs.cluster import Cluster
from app.jobs.cluster import current as current_cluster
from app.jobs.runs import RUNS_DIR, Run, RunsFolder, lesson_began, run_status, start_lesson, started_at
from app.pages import available_pages
from app.pages.room.class_runs import ClassRunsPlot, RunLine
from app.pages.room.tally import TallyBoard, card_rows
from app.serving import room as serving_room
from app.serving.room import Counts, Room, pace_for
from app.serving.room import current as current_room
from widgets.headings import section_heading
from widgets.qr_code import join_pane
from widgets.streaming import deliver, session_document

TITLE = "The room"
RUNS_SECONDS = 2.0
"""Seconds between two reads of the runs folder while the room view is open."""
INTRO = ("Only you see this view. Learners are counted on a page while it is open in their browser. Picking a choice "
         "on a card is a vote, counted at once and for the whole lesson (after the class moves on too), for "
         "learners who have left “Counted in the room” on: no names, only how many chose each answer. Hold a "
         "card's reveal to let the class vote and discuss first, then reveal the answer to every learner's card.")

LESSON_STARTED = ("<p>A new lesson began: the runs before it are set aside (kept in {folder}), so a learner's Start trains "
                  "afresh; the live-run page still lists them, and its replay box shows one.</p>")


def line_of(run: Run, running: set[str]) -> RunLine:
    """A run folder as the class's runs plot draws it."""
    settings = run.config.get("settings", {})
    beta, advantage = settings.get("beta", math.nan), settings.get("advantage", RunLine.advantage)
    return RunLine(run.id, float(beta) if isinstance(beta, (int, float)) else math.nan, run_status(run, running),
                   [m.get("step") for m in run.metrics], [m.get("reward", math.nan) for m in run.metrics],
                   [m.get("kl", math.nan) for m in run.metrics], str(advantage))


def learners_html(counts: Counts, titles: dict[str, str]) -> str:
    """How many learners there are, and on which page, in the app's order."""
    on = [f"{html.escape(title)}: <strong>{counts.pages[route]}</strong>" for route, title in titles.items() if counts.pages.get(route)]
    total = counts.learners
    head = "1 learner is" if total == 1 else f"{total} learners are"
    return f'<p class="fl-learners">{head} here now{": " + "; ".join(on) if on else "."}</p>'


class RoomView(pn.viewable.Viewer):
    """The room, for the teacher: learners per page, the tally of every card, pacing, the class's runs."""

    def __init__(self, room: Room | None = None, runs_dir: Path | str | None = None, cluster: Cluster | None = None, **params):
        super().__init__(**params)
        self.room = room or current_room()
        self.cluster = cluster or current_cluster()
        pages = available_pages()
        self.titles = {"": "Overview"} | {p.route: p.title for p in pages}
        self.specs = {spec.key: spec for p in pages for spec in getattr(p.module, "CARDS", ())}
        self.learners = pn.pane.HTML(learners_html(Counts(), self.titles), sizing_mode="stretch_width")
        self.tally = TallyBoard(on_msg=self._from_browser, sizing_mode="stretch_width", css_classes=["fl-tally"],
                                cards=card_rows([(p.title, spec) for p in pages for spec in getattr(p.module, "CARDS", ())]))
        self.link = pn.widgets.TextInput(label="Link to send the class (copy it from your own tab)", placeholder="/bandit?b=0.3",
                                         sizing_mode="stretch_width", max_length=4000)
        self.send_button = pn.widgets.Button(label="Send the class there", color="primary", width=200)
        self.stop_button = pn.widgets.Button(label="Take the banner away", width=200)
        self.send_button.on_click(lambda _e: self.send())
        self.stop_button.on_click(lambda _e: self.stop_sending())
        self.lesson_button = pn.widgets.Button(label="Start a new lesson", width=200,
                                               description="Set the runs so far aside: the class's Start trains afresh")
        self.lesson_button.on_click(lambda _e: self.new_lesson())
        self.lesson_line = pn.pane.HTML("", sizing_mode="stretch_width")
        self.pace_line = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["fl-pace-status"])
        url = serving_room.learners_url()  # the server's setting (serve --class), never a browser's
        self.join = [section_heading("Where learners join"), join_pane(url)] if url else []
        self.runs = RunsFolder(Path(runs_dir) if runs_dir is not None else RUNS_DIR)
        self.class_runs = ClassRunsPlot()
        self.refresh_runs()
        doc = session_document()
        self._unwatch = self.room.watch(lambda counts: deliver(doc, partial(self.show_counts, counts)))
        self._unfollow = self.room.follow_cards(lambda cards: deliver(doc, partial(self.show_cards, cards)))
        self._reader = pn.state.add_periodic_callback(self.refresh_runs, period=int(RUNS_SECONDS * 1000)) if doc else None

    def show_counts(self, counts: Counts) -> None:
        """Draw the room's counts: learners per page, and the tally."""
        with pn.io.hold():
            self.learners.object = learners_html(counts, self.titles)
            self.tally.counts = {key: rounds for key, rounds in counts.votes.items() if key in self.specs}

    def show_cards(self, cards: dict[str, dict]) -> None:
        """Draw the room's state of the cards: held, revealed (with the right answer), the round."""
        states = {key: {"round": s["round"], "held": s["held"], "revealed": bool(s["reveal"])}
                  for key, s in cards.items() if key in self.specs}
        self.tally.param.update(states=states, answers={key: self.specs[key].answer for key, s in states.items() if s["revealed"]})

    def _from_browser(self, message: dict) -> None:
        """"Show the class" a card of the app (or none); hold, reveal or vote again on one; anything else is ignored."""
        shown = message.get("show")
        if isinstance(shown, str) and (shown == "" or shown in self.specs):
            self.tally.shown = shown
            return
        reveal = self.tally.shown if message.get("reveal") is True else message.get("reveal")
        hold, again = message.get("hold"), message.get("again")
        if isinstance(reveal, str) and reveal in self.specs:
            self.room.set_card(reveal, reveal=True)
        elif isinstance(hold, str) and hold in self.specs and isinstance(message.get("on"), bool):
            self.room.set_card(hold, held=message["on"])
        elif isinstance(again, str) and again in self.specs:
            self.room.set_card(again, round_=2)

    def send(self) -> None:
        """Send the class to the link in the box; a link that is not one of this app's pages is one sentence."""
        try:
            pace = pace_for(self.link.value, self.titles)
        except ValueError as error:
            self.pace_line.object = f'<p class="fl-refused">{html.escape(str(error))}</p>'
            return
        self.room.send(pace)
        self.pace_line.object = (f"<p>Sent: every learner's page shows a banner to open <strong>{html.escape(pace.title)}</strong> "
                                 f'(<a href="{html.escape(pace.link)}" target="_blank" rel="noreferrer">{html.escape(pace.link)}</a>).</p>')

    def stop_sending(self) -> None:
        self.room.send(None)
        self.pace_line.object = "<p>The banner is taken away from the learners' pages.</p>"

    def new_lesson(self) -> None:
        start_lesson(self.runs.root)
        self.lesson_line.object = LESSON_STARTED.format(folder=html.escape(str(self.runs.root.resolve())))
        self.refresh_runs()

    def refresh_runs(self) -> None:
        """Read the runs folder again (only the runs whose files changed) and redraw the class's runs of this lesson."""
        self.runs.refresh()
        running = self.cluster.running_ids() if self.cluster.connected else set()
        began = lesson_began(self.runs.root) or 0.0
        self.class_runs.show([line_of(run, running) for run in self.runs.runs().values() if started_at(run.folder) >= began])

    def close(self) -> None:
        self._unwatch()
        self._unfollow()
        if self._reader is not None:
            self._reader.stop()

    def __panel__(self):
        return pn.Column(
            pn.pane.Markdown(INTRO, sizing_mode="stretch_width"),
            *self.join,
            self.learners,
            section_heading("Send the class to a page"),
            self.link,
            pn.Row(self.send_button, self.stop_button),
            self.pace_line,
            section_heading("What the class voted"),
            self.tally,
            section_heading("The class's live runs: reward and KL, coloured by β"),
            self.class_runs,
            pn.Row(self.lesson_button, self.lesson_line, sizing_mode="stretch_width"),
            sizing_mode="stretch_width",
        )


def page(room: Room | None = None, runs_dir: Path | str | None = None) -> RoomView:
    """A fresh room view for the teacher's session."""
    return RoomView(room=room, runs_dir=runs_dir)
