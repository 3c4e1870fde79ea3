"""The prediction card and the guide without a browser: committing reveals, the off switch reveals all."""

import json

import panel as pn
import pytest

from widgets.equation_card import equation_card
from widgets.predict import BrowserStore, Guide, PredictionCard, bind_store, card_class, session_guide

CHOICES = {"mean": "their mean", "sd": "their standard deviation", "both": "both"}


def card(guide: Guide, key: str = "demo/what-moves") -> PredictionCard:
    return PredictionCard(key, "Which will not move?", CHOICES, "mean", "Only the mean stays put.", guide=guide)


def guarded(c: PredictionCard):
    wrapper = c.guard(pn.pane.Markdown("the plot"), note="the plot")
    placeholder, column = wrapper
    return placeholder, column


def test_a_card_guards_until_the_learner_commits():
    guide = Guide()
    c = card(guide)
    placeholder, column = guarded(c)
    assert not c.revealed and not column.visible and placeholder.visible
    assert len(column) == 0  # what it guards is built on the first reveal, not before
    assert "the plot" in placeholder.object
    assert c.view.asking and not c.view.again and c.view.choices == [[k, v] for k, v in CHOICES.items()]
    assert "<strong>Predict first.</strong> Which will not move?" in c.view.question
    c.view._handle_msg({"commit": "best"})  # a choice the card does not offer is ignored
    assert not c.revealed and guide.answers == {}
    c.view._handle_msg({"commit": "sd"})  # what the browser sends when Reveal is pressed
    assert c.revealed and column.visible and not placeholder.visible
    assert column[0].object == "the plot"
    assert guide.answers == {"demo/what-moves": "sd"}
    assert not c.view.asking and c.view.chosen == "sd" and "Only the mean stays put." in c.view.explanation
    assert "Not quite" in c.view.verdict and "their standard deviation" in c.view.verdict
    assert "<strong>their mean</strong>" in c.view.verdict  # the right answer is named


def test_a_guarded_part_given_as_a_function_is_made_only_when_first_shown():
    made = []
    c = card(Guide())
    _, column = c.guard(lambda: made.append(1) or pn.pane.Markdown("the figure"), note="the figure")
    assert made == [] and len(column) == 0  # nothing made behind an unanswered question
    c.commit("mean")
    assert made == [1] and column[0].object == "the figure"
    c.commit("sd")  # a second answer shows what is made already
    assert made == [1]


def test_a_right_answer_is_marked_right_and_ask_again_guards_once_more():
    guide = Guide()
    c = card(guide)
    placeholder, column = guarded(c)
    c.commit("mean")
    assert "Right." in c.view.verdict and "Not quite" not in c.view.verdict
    assert c.view.again
    c.view._handle_msg({"forget": True})  # "Ask me again"
    assert guide.answers == {} and not c.revealed and not column.visible and placeholder.visible


def test_the_off_switch_reveals_every_card_and_on_guards_the_unanswered_again():
    guide = Guide()
    first, second = card(guide, "a/one"), card(guide, "a/two")
    columns = [guarded(first)[1], guarded(second)[1]]
    second.commit("both")
    guide.prompts = False
    assert all(c.revealed for c in (first, second)) and all(col.visible for col in columns)
    assert not first.view.asking and not first.view.again
    assert "The answer: <strong>their mean</strong>" in first.view.verdict  # unanswered: the answer, no verdict
    assert "Not quite" in second.view.verdict  # answered: the learner's own verdict stays
    guide.prompts = True
    assert not first.revealed and not columns[0].visible
    assert second.revealed and columns[1].visible  # answered before, still shown


def test_a_stored_answer_reveals_on_load_and_an_unknown_one_does_not():
    guide = Guide(answers={"demo/what-moves": "mean", "demo/other": "sd"})
    assert card(guide).revealed
    assert not card(Guide(answers={"demo/what-moves": "a choice no longer offered"})).revealed


def test_invalid_cards_and_choices_are_refused():
    with pytest.raises(ValueError, match="not one of the choices"):
        PredictionCard("k", "?", CHOICES, "median", "", guide=Guide())
    with pytest.raises(ValueError, match="not one of the choices"):
        card(Guide()).commit("median")


def test_equation_card_hides_what_to_notice_until_its_card_is_answered():
    guide = Guide()
    first, last = card(guide, "p/one"), card(guide, "p/two")
    layout = equation_card("intro", "x = 1", "the answer", why="why", prediction=last)
    texts = [getattr(part, "object", "") for part in layout]
    assert texts[0] == "**Why this page.** why" and texts[1] == "intro"
    notice = layout[3][0]
    assert not notice.visible and len(notice) == 0  # not built while hidden
    first.commit("mean")
    assert not notice.visible
    last.commit("mean")
    assert notice.visible and "the answer" in notice[0].object


def test_guide_state_round_trips_and_bad_stored_state_is_ignored():
    guide = Guide()
    guide.answer("a/b", "mean")
    guide.prompts = False
    copy = Guide()
    copy.load(guide.to_json())
    assert (copy.prompts, copy.answers) == (False, {"a/b": "mean"})
    for text in ("not json", "[1, 2]", json.dumps({"prompts": "no", "answers": ["x"]}), ""):
        fresh = Guide()
        fresh.load(text)
        assert (fresh.prompts, fresh.answers) == (True, {})
    mixed = Guide()
    mixed.load(json.dumps({"prompts": False, "answers": {"a": "x", "b": 3}}))
    assert (mixed.prompts, mixed.answers) == (False, {"a": "x"})


def test_the_store_bridge_reads_the_browser_first_and_then_writes_changes():
    guide, store = Guide(), BrowserStore()
    bind_store(guide, store)
    guide.prompts = False  # before the browser has answered: nothing is written over its state
    assert store.value == "" and not store.enabled
    store.value = json.dumps({"prompts": True, "answers": {"a/b": "sd"}})  # what the browser had stored
    store.loaded = True
    assert guide.synced and guide.prompts and guide.answers == {"a/b": "sd"}
    assert store.enabled and store.prompts  # the switch can be clicked now, and shows the stored state
    guide.prompts = False
    assert json.loads(store.value) == {"prompts": False, "room": True, "answers": {"a/b": "sd"}} and not store.prompts
    store.prompts = True  # a click on the switch
    assert guide.prompts and json.loads(store.value)["prompts"] is True
    store.counted = False  # a click on the room's switch
    assert not guide.counted and json.loads(store.value)["room"] is False
    copy = Guide()
    copy.load(store.value)
    assert not copy.counted and copy.prompts


def test_the_tally_holds_only_votes_on_the_cards_shown_with_their_choices_and_only_while_counted():
    guide = Guide(answers={"elsewhere/card": "mean", "demo/what-moves": "sd"})  # answers stored by an earlier lesson
    guide.votes = {"elsewhere/card": {"1": "mean"}}  # a vote on a card of another page
    c = card(guide)
    assert guide.tally() == {} and c.view.counted  # the card says its choice counts in the room
    guide.forget("demo/what-moves")  # "Ask me again"
    c.view._handle_msg({"vote": "sd"})  # what the browser sends when a choice is picked
    assert guide.tally() == {"demo/what-moves": {"1": "sd"}}
    assert not c.revealed and c.view.asking and c.view.voted == "sd"  # a vote shows no answer
    c.view._handle_msg({"vote": ["sd"]})  # forged messages: ignored, the card and the tally unchanged
    c.view._handle_msg({"vote": "median"})
    c.view._handle_msg({"commit": "median"})
    c.view._handle_msg({"forget": "yes"})
    assert guide.tally() == {"demo/what-moves": {"1": "sd"}}
    guide.votes = {**guide.votes, "demo/what-moves": {"1": "forged", "7": "sd"}}  # as a forged state could say
    assert guide.tally() == {}
    c.view._handle_msg({"vote": "mean"})  # a changed vote replaces the one before
    c.view._handle_msg({"commit": "mean"})  # Reveal
    assert guide.tally() == {"demo/what-moves": {"1": "mean"}} and c.revealed
    c.view._handle_msg({"vote": "sd"})  # once the answer shows, a vote is ignored
    assert guide.tally() == {"demo/what-moves": {"1": "mean"}}
    guide.counted = False  # the learner leaves the room's counts
    assert guide.tally() == {} and c.view.counted == ""


def test_a_held_card_takes_votes_but_no_reveal_until_the_room_reveals_it():
    guide = Guide()
    c = card(guide)
    placeholder, column = guarded(c)
    guide.room = {"demo/what-moves": {"round": 1, "held": True, "reveal": ""}}  # the teacher holds the reveal
    assert c.view.asking and c.view.held == "Pick your answer: the teacher will reveal it to the room."
    c.view._handle_msg({"vote": "sd"})
    assert c.view.held == "Your vote is in; the teacher will reveal the answer." and c.view.voted == "sd"
    c.view._handle_msg({"commit": "sd"})  # Reveal, forged while held: ignored
    assert not c.revealed and guide.answers == {} and not column.visible
    c.view._handle_msg({"vote": "mean"})  # changeable until the answer shows
    guide.room = {"demo/what-moves": {"round": 1, "held": True, "reveal": "r1"}}  # the teacher reveals it to the room
    assert c.revealed and column.visible and not placeholder.visible and c.view.opened
    assert guide.answers == {"demo/what-moves": "mean"} and "Right." in c.view.verdict and c.view.held == ""
    assert guide.tally() == {"demo/what-moves": {"1": "mean"}}
    c.view._handle_msg({"forget": True})  # "Ask me again" after the room's reveal asks again; the same reveal does not answer
    assert not c.revealed and c.view.asking and not c.view.held and guide.answers == {}


def test_the_rooms_reveal_shows_the_answer_to_a_learner_who_did_not_vote_and_a_second_round_asks_again():
    guide, other = Guide(), Guide()
    c, d = card(guide), card(other)
    _, column = guarded(c)
    guide.room = {"demo/what-moves": {"round": 1, "held": True, "reveal": "r1"}}
    assert c.revealed and column.visible and "The answer: <strong>their mean</strong>" in c.view.verdict
    assert guide.answers == {} and guide.tally() == {}
    d.view._handle_msg({"vote": "sd"})
    other.room = {"demo/what-moves": {"round": 2, "held": True, "reveal": ""}}  # "Vote again"
    assert d.view.asking and d.view.voted == "" and d.view.note.startswith("Vote again")
    d.view._handle_msg({"vote": "mean"})
    assert other.tally() == {"demo/what-moves": {"1": "sd", "2": "mean"}}  # both rounds' votes, side by side
    d.view._handle_msg({"vote": "both"})  # a changed second vote leaves the first
    assert other.tally() == {"demo/what-moves": {"1": "sd", "2": "both"}}


def test_with_prompts_off_a_card_shows_its_answer_and_takes_no_vote():
    guide = Guide(prompts=False)
    c = card(guide)
    c.view._handle_msg({"vote": "sd"})
    assert c.revealed and not c.view.asking and guide.tally() == {}


def test_a_browser_without_storage_keeps_the_defaults():
    guide, store = Guide(), BrowserStore()
    bind_store(guide, store)
    store.loaded = True  # localStorage refused: the browser sends no value, only that it has looked
    assert guide.synced and guide.prompts and guide.answers == {}
    guide.prompts = False  # the switch still works for the session
    assert json.loads(store.value)["prompts"] is False


def test_outside_a_session_each_lookup_is_a_fresh_guide_and_classes_name_cards():
    assert session_guide() is not session_guide()
    assert card_class("baselines/what-moves") == "fl-card-baselines-what-moves"
