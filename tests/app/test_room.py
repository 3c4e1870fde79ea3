"""The room: the teacher's token (403, a replayed link, never in the log), the tally of the cards (votes, changes,
closed tabs, forgeries, a flood, two rounds), the cards' hold and reveal, pacing, and the counts of two web processes
on one Dask scheduler."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import re

import pytest
from bokeh.util.token import generate_jwt_token, generate_session_id

from app.jobs.cluster import current
from app.pages import room as room_page
from app.pages.bandit import BASELINE_EFFECT, WHICH_ARM
from app.pages.room.class_runs import ClassRunsPlot, RunLine
from app.serving import room as room_module
from app.serving.limits import ServerLimits
from app.serving.room import REFUSED, Counts, LocalBoard, Pace, Room, SchedulerBoard, TeacherToken, pace_for, read_pace
from bench.servers import page_token, pull_document, serving_in_process, wait_until
from widgets.predict import Guide, PredictionCard

TOKEN = "a-teachers-token-for-the-tests"
TITLES = {"": "Overview", "bandit": "Bandit", "kl": "KL"}


def learner(the_room: Room, session: str, route: str = "bandit") -> tuple[Guide, list[PredictionCard], callable]:
    """A learner's session on `route`: its guide, the bandit page's two cards (none elsewhere), and the function its
    closed tab calls."""
    guide = Guide()
    cards = [PredictionCard.of(spec, "", guide) for spec in (BASELINE_EFFECT, WHICH_ARM)] if route == "bandit" else []
    return guide, cards, the_room.enter(session, route, guide)


def watched(the_room: Room) -> list[Counts]:
    seen: list[Counts] = []
    the_room.watch(seen.append)
    return seen


def test_the_tally_follows_votes_and_changes_keeps_them_after_the_tab_closes_and_ignores_forgeries():
    the_room = Room(LocalBoard())
    seen = watched(the_room)
    _, (a, _), leave_a = learner(the_room, "a")
    guide_b, (b, b_arm), _ = learner(the_room, "b")
    guide_c, _, _ = learner(the_room, "c", route="kl")  # on another page: counted there, with no bandit card
    a.view._handle_msg({"vote": "spread"})  # a choice picked: a vote, counted before any Reveal
    b.view._handle_msg({"vote": "mean"})
    b_arm.view._handle_msg({"commit": "most"})  # Reveal at once
    b.view._handle_msg({"vote": "made-up"})  # a choice the card does not offer
    guide_b.votes = {**guide_b.votes, "bandit/invented-card": {"1": "x"}, "kl/beta-to-zero": {"1": "collapses"}}  # forged
    guide_c.votes = {"bandit/baseline-effect": {"1": "spread"}}  # a vote on a card its page does not show
    the_room.look()
    assert seen[-1] == Counts({"bandit": 2, "kl": 1}, {"bandit/baseline-effect": {"1": {"spread": 1, "mean": 1}},
                                                     "bandit/which-arm": {"1": {"most": 1}}})
    assert not a.revealed and not b.revealed and b_arm.revealed  # a vote shows no answer
    b.view._handle_msg({"vote": "spread"})  # a changed vote moves its count
    leave_a()  # a closed tab leaves its page, but its vote stays for the lesson
    the_room.look()
    assert seen[-1] == Counts({"bandit": 1, "kl": 1}, {"bandit/baseline-effect": {"1": {"spread": 2}},
                                                     "bandit/which-arm": {"1": {"most": 1}}})
    a.view._handle_msg({"vote": "mean"})  # a session gone: nothing of it changes any more
    guide_b.counted = False  # "Counted in the room" switched off: still on the page, no vote counted
    the_room.look()
    assert seen[-1] == Counts({"bandit": 1, "kl": 1}, {"bandit/baseline-effect": {"1": {"spread": 1}}})


def test_a_flood_of_vote_changes_from_one_tab_leaves_the_tally_right():
    the_room = Room(LocalBoard())
    seen = watched(the_room)
    _, (card, _), _ = learner(the_room, "flood")
    _, (other, _), _ = learner(the_room, "calm")
    other.view._handle_msg({"vote": "neither"})
    rng = random.Random(0)
    choices = [value for value, _ in BASELINE_EFFECT.choices]
    for k in range(2000):
        message = rng.choice([{"vote": rng.choice(choices)}, {"forget": True}, {"vote": "x" * 10_000}, {"vote": k},
                              {"commit": rng.choice(choices)}])
        card.view._handle_msg(message)
        if k % 200 == 0:
            the_room.look()
    card.view._handle_msg({"forget": True})
    card.view._handle_msg({"vote": "both"})
    the_room.look()
    assert seen[-1].votes == {"bandit/baseline-effect": {"1": {"both": 1, "neither": 1}}}


def test_the_teacher_holds_reveals_and_asks_again_in_every_process_and_the_room_keeps_both_rounds():
    board = LocalBoard()  # one board, two rooms: two web processes
    first, second = Room(board, "web-1"), Room(board, "web-2")
    view = room_page.RoomView(room=first)
    guide_a, (a, _), _ = learner(first, "a")
    guide_b, (b, _), leave_b = learner(second, "b")
    key = "bandit/baseline-effect"
    view._from_browser({"hold": key, "on": True})
    for each in (first, second, first):
        each.look()
    assert guide_a.held(key) and guide_b.held(key) and view.tally.states[key] == {"round": 1, "held": True, "revealed": False}
    a.view._handle_msg({"vote": "spread"})
    b.view._handle_msg({"vote": "mean"})
    b.view._handle_msg({"commit": "mean"})  # Reveal while held: ignored
    assert b.view.held == "Your vote is in; the teacher will reveal the answer." and not b.revealed
    for each in (second, first):
        each.look()
    assert view.tally.counts == {key: {"1": {"spread": 1, "mean": 1}}} and view.tally.answers == {}  # the split, no answer
    view._from_browser({"again": key})  # a second vote after the discussion
    for each in (first, second, first):
        each.look()
    assert view.tally.states[key]["round"] == 2 and b.view.asking and b.view.voted == ""
    a.view._handle_msg({"vote": "spread"})
    b.view._handle_msg({"vote": "spread"})
    view._from_browser({"reveal": key})  # to the room
    for each in (first, second, first):
        each.look()
    assert a.revealed and b.revealed and guide_b.answers == {key: "spread"} and "Right." in b.view.verdict
    assert view.tally.answers == {key: "spread"} and view.tally.states[key]["revealed"]
    leave_b()  # the class moves on: the card's splits stay
    second.look()
    first.look()
    assert view.tally.counts == {key: {"1": {"spread": 1, "mean": 1}, "2": {"spread": 2}}}
    for forged in ({"reveal": "forged/card"}, {"hold": key, "on": "yes"}, {"again": ["x"]}, {"hold": "nope", "on": True}):
        view._from_browser(forged)
    first.look()
    assert set(first.cards) == {key} and first.cards[key]["held"]
    view.close()


def test_a_board_entry_of_the_wrong_shape_counts_nothing():
    assert Counts.read({"pages": {"bandit": 2, "kl": "x"}, "votes": {"k": {"1": {"a": 2, "b": -1}, "3": {"a": 1}, "2": "x"}}}) == \
        Counts({"bandit": 2}, {"k": {"1": {"a": 2}}})
    assert Counts.read("nonsense") == Counts()
    assert room_module.read_cards({"k": {"round": 2, "held": False, "reveal": ""}, "bad": {"round": 3, "held": False, "reveal": ""},
                                   "worse": "x"}) == {"k": {"round": 2, "held": False, "reveal": ""}}
    with pytest.raises(ValueError, match="1 or 2"):
        Room(LocalBoard()).set_card("k", round_=3)


@pytest.mark.server
def test_two_web_processes_on_one_scheduler_count_together_and_one_that_stops_drops_out(monkeypatch):
    """Two rooms with process ids of their own on the test session's real Dask scheduler, as two web processes
    joined to one scheduler are; the teacher's view is on the first."""
    client = current().client
    client.set_metadata([room_module.BOARD_KEY], {})  # a board of its own for this test
    first, second = Room(SchedulerBoard(client), "web-1"), Room(SchedulerBoard(client), "web-2")
    seen = watched(first)
    banners: list[Pace | None] = []
    second.follow_pace(banners.append)
    _, (a, _), _ = learner(first, "a")
    _, (b, _), leave_b = learner(second, "b")
    a.view._handle_msg({"vote": "spread"})
    b.view._handle_msg({"vote": "spread"})
    for each in (second, first):
        each.look()
    assert seen[-1] == Counts({"bandit": 2}, {"bandit/baseline-effect": {"1": {"spread": 2}}})
    first.send(Pace("/kl?beta=0.1", "KL"))
    first.look()
    second.look()
    assert banners[-1] is not None and (banners[-1].link, banners[-1].title) == ("/kl?beta=0.1", "KL")
    first.set_card("bandit/baseline-effect", held=True)  # the cards' state travels on the scheduler's board too
    first.look()
    second.look()
    assert second.cards["bandit/baseline-effect"]["held"] and b.view.held
    leave_b()  # its vote stays
    second.look()
    first.look()
    assert seen[-1] == Counts({"bandit": 1}, {"bandit/baseline-effect": {"1": {"spread": 2}}})
    _, (b, _), _ = learner(second, "b2")
    b.view._handle_msg({"vote": "mean"})
    second.look()
    first.look()
    assert seen[-1].votes == {"bandit/baseline-effect": {"1": {"spread": 2, "mean": 1}}}
    monkeypatch.setattr(room_module, "STALE_SECONDS", 0.3)  # the second process stops looking (killed)
    wait_until(lambda: first.look() or seen[-1].votes == {"bandit/baseline-effect": {"1": {"spread": 1}}}, 10, "the stopped process dropped")
    second._leave_board()  # a process that exits takes its entry off the board at once
    assert client.get_metadata([room_module.BOARD_KEY, "processes", "web-2"]) is None


def test_a_link_sent_to_the_class_is_a_path_of_one_of_the_apps_pages():
    pace = pace_for("http://lab.example.org:8080/bandit?b=0.3&token=secret", TITLES)  # the teacher's own address bar
    assert (pace.link, pace.title) == ("/bandit?b=0.3", "Bandit")
    assert pace_for("https://elsewhere.example.com/kl", TITLES).link == "/kl"  # never another site: its path only
    assert pace_for("/", TITLES).title == "Overview"
    for bad, sentence in (("", "Paste a link"), ("/room?token=x", "not a page"), ("/nowhere", "not a page"), ("/" + "b" * 5000, "longer")):
        with pytest.raises(ValueError, match=sentence):
            pace_for(bad, TITLES)
    assert read_pace({"link": "//evil.example.com/", "title": "x", "id": "1"}) is None
    assert read_pace({"link": "/kl", "title": 3, "id": "1"}) is None


def test_the_token_is_compared_whole_and_a_token_of_the_wrong_form_is_refused(monkeypatch):
    token = TeacherToken(TOKEN)
    assert token.admits(TOKEN) and not token.admits(TOKEN[:-1]) and not token.admits(None) and not token.admits(["x"])
    assert not token.admits(TOKEN + "é")
    assert TeacherToken().value != TeacherToken().value and len(TeacherToken().value) >= 32
    with pytest.raises(ValueError, match="16 to 128"):
        TeacherToken.from_environment("short")
    monkeypatch.setenv(room_module.TOKEN_VARIABLE, TOKEN)
    assert TeacherToken.from_environment(None).value == TOKEN


def test_the_room_view_shows_one_card_to_the_class_and_reveals_its_answer_only_when_asked():
    the_room = Room(LocalBoard())
    view = room_page.RoomView(room=the_room)
    view.show_counts(Counts({"bandit": 3}, {"bandit/baseline-effect": {"1": {"spread": 2, "mean": 1}}, "forged/card": {"1": {"x": 9}}}))
    assert view.tally.counts == {"bandit/baseline-effect": {"1": {"spread": 2, "mean": 1}}}
    assert "3 learners are here now" in view.learners.object and "Bandit" in view.learners.object
    view._from_browser({"show": "forged/card"})
    view._from_browser({"reveal": True})  # nothing shown: nothing to reveal
    assert view.tally.shown == "" and view.tally.answers == {} and the_room.cards == {}
    view._from_browser({"show": "bandit/baseline-effect"})
    assert view.tally.shown == "bandit/baseline-effect" and view.tally.answers == {}  # the answer has not left the server
    assert all("answer" not in card for card in view.tally.cards)
    view._from_browser({"reveal": True})  # the shown card's, to the room
    assert view.tally.answers == {"bandit/baseline-effect": "spread"}
    view._from_browser({"show": ""})
    assert view.tally.shown == "" and view.tally.answers == {"bandit/baseline-effect": "spread"}  # revealed for the lesson
    view.link.value = "/nowhere"
    view.send()
    assert "not a page of this app" in view.pace_line.object
    view.close()


def test_the_room_view_is_refused_without_the_token_and_a_link_replayed_after_a_restart(app_server):
    server = app_server("--ready-pages", "0")
    link = re.search(r"http://\S+/room\?token=(\S+)", server.output())
    assert link is not None, server.output()
    token = link.group(1)
    assert server.get("/room") == (403, REFUSED)
    assert server.get("/room?token=" + token[:-1] + ("A" if token[-1] != "A" else "B")) == (403, REFUSED)
    assert "What the class voted" in server.open_session("room", f"?token={token}")
    # A websocket opened with a session token of its own making, without the page's GET: the room's one sentence.
    forged = generate_jwt_token(generate_session_id(), signed=False, extra_payload={"headers": {}, "cookies": {}, "arguments": {}})
    assert "fl-refused" in asyncio.run(pull_document(server.url, "room", forged))
    restarted = app_server("--ready-pages", "0")
    assert restarted.get(f"/room?token={token}") == (403, REFUSED)
    assert token not in server.log() + restarted.log()


def test_the_token_never_reaches_the_log_after_a_session_of_visits(monkeypatch):
    """Every logger at DEBUG into one captured list: the requests' URLs are there, the token never."""
    records: list[str] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = lambda record: records.append(logging.Formatter("%(name)s %(message)s").format(record))
    root = logging.getLogger()
    loggers = [root, *map(logging.getLogger, ("tornado", "tornado.access", "bokeh", "panel"))]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        # setLevel, not the attribute: it also empties every logger's cache of isEnabledFor, which an earlier test's
        # quieter levels may have filled (then the access log's INFO lines would never be made).
        logger.setLevel(logging.DEBUG)
    monkeypatch.setattr(logging.getLogger("bokeh"), "propagate", True)
    root.addHandler(handler)
    try:
        with serving_in_process(monkeypatch, ServerLimits(ready_pages=0, unused_session_seconds=1), teacher=TeacherToken(TOKEN)) as url:
            for path in ("/room", "/room?token=wrong-token-of-a-visitor", f"/room?token={TOKEN}", f"/bandit?token={TOKEN}", "/kl"):
                try:
                    import urllib.request

                    urllib.request.urlopen(url + path, timeout=30).read()
                except OSError:
                    pass
            asyncio.run(pull_document(url, "room", page_token(url, "room", f"?token={TOKEN}&section=x")))
    finally:
        root.removeHandler(handler)
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
    text = "\n".join(records)
    assert "GET /room?token=wrong-token-of-a-visitor" in text  # the access log writes every request's URL
    assert "GET /room?token=[token]" in text
    assert TOKEN not in text


def test_the_class_runs_plot_sends_runs_again_only_when_they_changed():
    plot = ClassRunsPlot()
    first = [RunLine("20261206-a", 0.0, "running", [1, 2], [0.1, 0.4], [0.0, 0.2])]
    plot.show(first)
    sent = plot.source.data
    plot.show([RunLine("20261206-a", 0.0, "running", [1, 2], [0.1, 0.4], [0.0, 0.2])])  # read again, nothing new
    assert plot.source.data is sent
    plot.show([RunLine("20261206-a", 0.0, "running", [1, 2, 3], [0.1, 0.4, 0.5], [0.0, 0.2, 0.3])])  # a step more
    assert plot.source.data is not sent and plot.source.data["xs"] == [[1, 2, 3]]


def test_the_class_runs_are_told_apart_by_advantage_as_well_as_by_beta(tmp_path):
    from app.jobs.runs import read_run
    from app.pages.room import line_of
    from app.pages.room.class_runs import ADVANTAGE_DASH, runs_list_html

    for name, advantage in (("old", None), ("grpo", "grpo")):
        (tmp_path / name).mkdir()
        settings = {"beta": 0.0} | ({"advantage": advantage} if advantage else {})
        (tmp_path / name / "config.json").write_text(json.dumps({"settings": settings}))
    old, grpo = (line_of(read_run(tmp_path / n), set()) for n in ("old", "grpo"))
    assert (old.advantage, grpo.advantage) == ("loo", "grpo")  # a run from before the choice trained with leave-one-out
    plot = ClassRunsPlot()
    plot.show([old, grpo])
    assert plot.source.data["dash"] == [ADVANTAGE_DASH["loo"], ADVANTAGE_DASH["grpo"]] and "solid" != ADVANTAGE_DASH["grpo"]
    assert plot.source.data["label"] == ["old (β 0, loo)", "grpo (β 0, grpo)"]
    assert "β 0, grpo, interrupted" in runs_list_html([grpo])


def test_a_new_lesson_sets_the_rehearsals_runs_aside_in_the_room_and_keeps_them(tmp_path):
    def new_run(name: str) -> None:
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps({"settings": {"beta": 0.0}}))

    new_run("rehearsal")
    os.utime(tmp_path / "rehearsal" / "config.json", (1e9, 1e9))  # started long before the lesson
    view = room_page.RoomView(room=Room(LocalBoard()), runs_dir=tmp_path)
    assert view.class_runs.source.data["label"] == ["rehearsal (β 0, loo)"]  # no lesson begun: every run is the class's
    view.new_lesson()
    assert "A new lesson began" in view.lesson_line.object and view.class_runs.source.data["label"] == []
    new_run("lesson")
    view.refresh_runs()
    assert view.class_runs.source.data["label"] == ["lesson (β 0, loo)"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["lesson", "rehearsal"]  # set aside, not deleted
    view.close()
