"""Predict first, then look: a card that asks a question and keeps a panel hidden until it is answered.

Seed 001 teaches with "Predict first" and "Check yourself" prompts: the learner commits to an
answer before the demo shows it, which teaches more than reading the answer straight away.
A `PredictionCard` asks one question with a few choices; the panels it guards
(`card.guard(...)`) stay hidden until the learner has picked a choice and pressed Reveal.
Then the card marks the choice right or not and explains.

Picking a choice is a vote: it counts in the room's tally at once (app/serving/room.py), without
showing the answer, and can be changed until the answer is shown. While the teacher holds a card's
reveal from the room view (`Guide.room`, the room's state of each card, which the room hands every
learner's guide), the card has no Reveal button: "Your vote is in; the teacher will reveal the answer";
the teacher's "Reveal the answer" then shows it, with the guarded panels, on every learner's card.
"Vote again" (round 2) asks the card's question once more, for a second vote beside the first.

What a learner has answered, and whether they want the prompts at all, belongs to their
browser, not to the server: `Guide` holds it for one session and `BrowserStore`, a small
JavaScript component in the page header (the "Guided prompts" switch, and the "Counted in the
room" switch), mirrors it into the browser's localStorage. The room's tally (app/serving/room.py) reads
only `Guide.tally()`: the session's votes on the cards its page shows, per round, while the learner has
left the room switch on; it keeps counts per card, round and choice, nothing else. A reload, another page or a new tab of the same browser starts where the
learner left off; another browser, or a link sent to someone, starts afresh. Where localStorage refuses to
work (some private windows), the defaults hold for the session: prompts on, nothing answered.
"""

from __future__ import annotations

import html
import json
import weakref
from dataclasses import dataclass
from functools import lru_cache

import panel as pn
import param
from markdown_it import MarkdownIt
from panel.custom import JSComponent

from widgets.updates import one_update

STORAGE_KEY = "feedback-lab.guide"
"""The localStorage entry: JSON {"prompts": bool, "room": bool, "answers": {card key: choice}}."""
COUNTED_LINE = "Your choice counts, anonymously, in the room's tally as you pick it: no name, only how many chose each answer."
"""The line a card shows while the learner's votes count in the room's tally."""
HELD_LINE = "Your vote is in; the teacher will reveal the answer."
"""What a card shows in place of Reveal once the learner has voted, while the teacher holds the card's reveal."""
HOLD_LINE = "Pick your answer: the teacher will reveal it to the room."
"""What a card shows in place of Reveal before the learner has voted, while the teacher holds the card's reveal."""
ROUND_TWO_LINE = "Vote again: after the discussion, which do you choose now?"
"""The line above the choices in the room's second round of a card."""

CARD_STYLES = {
    "border-left": "4px solid #E69F00",
    "background": "rgba(230, 159, 0, 0.08)",
    "border-radius": "4px",
    "padding": "0.2em 0.6em 0.4em 0.6em",
}
"""The card's look: the palette's orange as an accent, a background that also reads on the dark theme."""
PLACEHOLDER_STYLES = {"border": "1px dashed rgba(128, 128, 128, 0.6)", "border-radius": "4px", "padding": "0 0.8em", "opacity": "0.85"}
CARD_MARGIN, PLACEHOLDER_MARGIN = (6, 10), (4, 10)
"""Margins as Panel's `margin` rather than a style: a page-wide part's width is then the page's less its margins,
where a style's margin was added to the full width (10 px past a phone's edge)."""


@dataclass(frozen=True)
class CardSpec:
    """What a prediction card asks, as data: the room's tally lists every card of the app by these."""

    key: str
    """Names the card across the app, e.g. "bandit/baseline-effect" (its stored answer's key)."""
    question: str
    """The question, as Markdown."""
    choices: tuple[tuple[str, str], ...]
    """(value, label) of each choice, in the order shown."""
    answer: str
    """The value of the right choice."""
    kind: str = "Predict first"
    """"Predict first" (before the demo) or "Check yourself" (after the text)."""

    def __post_init__(self):
        if self.answer not in dict(self.choices):
            raise ValueError(f"The answer {self.answer!r} is not one of the choices {[v for v, _ in self.choices]}.")


def card_spec(key: str, question: str, choices: dict[str, str], answer: str, kind: str = "Predict first") -> CardSpec:
    """A CardSpec from the choices as a dict (value -> label), as the pages' texts hold them."""
    return CardSpec(key, question, tuple(choices.items()), answer, kind)


class Guide(param.Parameterized):
    """One learner's guided-path state: prompts on or off, the choices committed to so far, whether they count in
    the room's tally, and the cards this session's page shows."""

    prompts = param.Boolean(default=True, doc="Ask each card's question before showing what it guards.")
    answers = param.Dict(default={}, doc="Card key -> the choice the learner committed to.")
    counted = param.Boolean(default=True, doc="The learner's answers count, anonymously, in the room's tally.")
    met = param.Dict(default={}, doc="Card key -> its choices' values, for the cards this session's page shows.")
    votes = param.Dict(default={}, doc="Card key -> round ('1', '2') -> the choice this session voted for (not stored).")
    room = param.Dict(default={}, doc="Card key -> the room's state of it: {'round': 1 or 2, 'held': bool, 'reveal': id} "
                                      "(app.serving.room.card_state), as the room hands it to the session.")
    synced = param.Boolean(default=False, doc="The browser has sent its stored state (or said it has none).")

    def answer(self, key: str, choice: str) -> None:
        self.answers = {**self.answers, key: choice}

    def forget(self, key: str) -> None:
        self.answers = {k: v for k, v in self.answers.items() if k != key}

    def vote(self, key: str, choice: str) -> None:
        """Vote `choice` on card `key` in the room's current round of it (a later vote in the round replaces it)."""
        rounds = dict(self.votes.get(key, {}))
        rounds[str(self.round_of(key))] = choice
        self.votes = {**self.votes, key: rounds}

    def voted(self, key: str) -> str | None:
        """This session's vote on card `key` in the room's current round, if any."""
        return self.votes.get(key, {}).get(str(self.round_of(key)))

    def round_of(self, key: str) -> int:
        return self.room.get(key, {}).get("round", 1)

    def held(self, key: str) -> bool:
        """The teacher holds this card's reveal and has not revealed it yet."""
        state = self.room.get(key, {})
        return bool(state.get("held")) and not state.get("reveal")

    def meet(self, key: str, choices) -> None:
        """Note a card this session's page shows (and the choices it offers)."""
        self.met = {**self.met, key: tuple(choices)}

    def tally(self) -> dict[str, dict[str, str]]:
        """What this session adds to the room's tally: card key -> round -> its vote, for each card its page shows,
        if the vote is one the card offers, and nothing once the learner has left the room's counts. Votes on other
        cards, or forged ones, never count; neither do answers stored in the browser (an earlier lesson's)."""
        if not self.counted:
            return {}
        tally = {}
        for key, choices in self.met.items():
            rounds = {r: c for r, c in self.votes.get(key, {}).items() if r in ("1", "2") and c in choices}
            if rounds:
                tally[key] = rounds
        return tally

    def to_json(self) -> str:
        return json.dumps({"prompts": self.prompts, "room": self.counted, "answers": self.answers}, sort_keys=True)

    def load(self, text: str) -> None:
        """Take the state stored in a browser; anything unreadable is ignored and the defaults stay."""
        try:
            stored = json.loads(text)
        except (TypeError, ValueError):
            return
        if not isinstance(stored, dict):
            return
        values = {}
        if isinstance(stored.get("prompts"), bool):
            values["prompts"] = stored["prompts"]
        if isinstance(stored.get("room"), bool):
            values["counted"] = stored["room"]
        answers = stored.get("answers")
        if isinstance(answers, dict):
            values["answers"] = {str(k): v for k, v in answers.items() if isinstance(v, str)}
        self.param.update(**values)


class BrowserStore(JSComponent):
    """The header's "Guided prompts" and "Counted in the room" switches and the localStorage entry behind them, as one
    component.

    The entry is mirrored in `value`: read once when the page renders, written on every change.
    The browser sends what it has stored (nothing if the entry is absent) and then sets `loaded`;
    a change of `value` on the server is written back. Reading or writing localStorage can
    throw (storage disabled, a private window, a full quota): then nothing is stored and the
    session keeps the server's defaults. Each switch shows its parameter (`prompts`, `counted`) and
    sets it when clicked; they stay disabled until `enabled` (the server has the browser's stored
    state), so a click cannot be overwritten by a state arriving a moment later. One component: two
    switches, their labels and the store drawn by Panel and Bokeh would be seven.
    """

    key = param.String(default=STORAGE_KEY, constant=True, doc="The localStorage entry.")
    value = param.String(default="", doc="The entry's text; empty until the browser has sent one.")
    loaded = param.Boolean(default=False, doc="The browser has read its storage.")
    prompts = param.Boolean(default=True, doc="The first switch: guided prompts on.")
    counted = param.Boolean(default=True, doc="The second switch: this learner's answers count in the room's tally.")
    enabled = param.Boolean(default=False, doc="The switches can be clicked (the server has the stored state).")

    _esm = """
    const CSS = `
      .fl-guide { display: inline-flex; align-items: center; gap: 0.5em; color: #ffffff; cursor: pointer; margin: 6px 10px 0 10px; }
      input[role=switch] { appearance: none; width: 34px; height: 18px; border-radius: 9px; margin: 0; position: relative;
        background: rgba(255, 255, 255, 0.35); border: 1px solid rgba(255, 255, 255, 0.7); cursor: pointer; }
      input[role=switch]::before { content: ''; position: absolute; top: 2px; left: 2px; width: 12px; height: 12px;
        border-radius: 50%; background: #ffffff; transition: left 0.15s; }
      input[role=switch]:checked { background: #E69F00; }
      input[role=switch]:checked::before { left: 18px; }
      input[role=switch]:disabled { opacity: 0.5; cursor: default; }
    `
    export function render({ model, el }) {
      const save = () => {
        try { window.localStorage.setItem(model.key, model.value) } catch (error) { /* storage unavailable */ }
      }
      let stored = null
      try { stored = window.localStorage.getItem(model.key) } catch (error) { /* storage unavailable */ }
      if (stored !== null && stored !== model.value) {
        model.value = stored
      }
      model.on('value', save)
      const style = document.createElement('style')
      style.textContent = CSS
      const toggle = (name, text, title) => {
        const label = document.createElement('label')
        label.className = 'fl-guide'
        label.title = title
        const box = document.createElement('input')
        box.type = 'checkbox'
        box.setAttribute('role', 'switch')
        box.checked = model[name]
        box.disabled = !model.enabled
        box.addEventListener('change', () => { model[name] = box.checked })
        model.on(name, () => { box.checked = model[name] })
        model.on('enabled', () => { box.disabled = !model.enabled })
        label.append(box, text)
        return label
      }
      el.append(style, toggle('prompts', 'Guided prompts', 'Ask each question before showing its answer'),
                toggle('counted', 'Counted in the room', "Your answers count, anonymously, in the teacher's tally of the room"))
      model.loaded = true
    }
    """


def bind_store(guide: Guide, store: BrowserStore) -> None:
    """Keep `guide` and `store` in step: the browser's stored text into the guide, the guide's changes out,
    the switches both ways, and the switches enabled once the browser's state has arrived."""

    def from_browser(event):
        if event.new and event.new != guide.to_json():
            guide.load(event.new)

    def to_browser(*_events):
        store.param.update(prompts=guide.prompts, counted=guide.counted)
        if guide.synced:  # before the browser has answered, it must not be overwritten with defaults
            store.value = guide.to_json()

    store.param.watch(from_browser, "value")
    store.param.watch(lambda event: setattr(guide, "synced", bool(event.new)), "loaded")
    store.param.watch(lambda event: setattr(guide, event.name, event.new), ["prompts", "counted"])
    guide.param.watch(lambda event: setattr(store, "enabled", event.new), "synced")
    guide.param.watch(to_browser, ["prompts", "counted", "answers"])


_SESSION_GUIDES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def session_guide() -> Guide:
    """The Guide of the current browser session, shared by its header and its page.

    Outside a server session (tests, scripts) each call returns a fresh Guide, so a page
    object should look it up once and hand it to all its cards.
    """
    doc = pn.state.curdoc if pn.state.curdoc and pn.state.curdoc.session_context else None
    if doc is None:
        return Guide()
    guide = _SESSION_GUIDES.get(doc)
    if guide is None:
        guide = _SESSION_GUIDES[doc] = Guide()
    return guide


def guide_switch(guide: Guide) -> BrowserStore:
    """The header's "Guided prompts" and "Counted in the room" switches, bound to this session's guide."""
    store = BrowserStore(prompts=guide.prompts, counted=guide.counted, enabled=guide.synced, align="center")
    bind_store(guide, store)
    return store


def card_class(key: str) -> str:
    """The CSS class naming a card on the page, e.g. "fl-card-baselines-what-moves" (for tests and styling)."""
    return "fl-card-" + "".join(c if c.isalnum() else "-" for c in key.lower())


@lru_cache(maxsize=256)
def markdown_html(text: str) -> str:
    """`text` (the pages' Markdown: bold, italics, code) as HTML; the cards' texts are fixed, so each is rendered once."""
    return MarkdownIt("commonmark").render(text)


class MessagingComponent(JSComponent):
    """A JavaScript component whose browser messages (`model.send_msg(...)`, a dict each) go to `on_msg`; anything
    else a browser sends is ignored."""

    def __init__(self, on_msg=None, **params):
        super().__init__(**params)
        self._on_msg = on_msg

    def _handle_msg(self, data) -> None:
        if self._on_msg is not None and isinstance(data, dict):
            self._on_msg(data)


class CardView(MessagingComponent):
    """A card as the browser draws it: one element for the question, its choices, Reveal, the verdict and "Ask me again".

    Once answered, or with the prompts off, the card is one line, the question, that opens onto the verdict and the
    explanation (open straight after Reveal): it sits above the demo and takes no more room than it needs.

    Seven Panel components drawn the usual way cost a page visit about 17 Bokeh models and
    75 ms of server CPU per card; this one is a single component. The browser sends
    {"vote": choice} when a choice is picked, {"commit": choice} when Reveal is pressed and {"forget": true}
    for "Ask me again"; `PredictionCard` turns those into the guide's votes and answers.
    """

    question = param.String(default="", doc="The question, as HTML.")
    choices = param.List(default=[], doc="[value, label] pairs, in the order shown.")
    chosen = param.String(default="", doc="The committed choice, '' for none.")
    asking = param.Boolean(default=True, doc="Show the choices and Reveal (prompts on and not answered yet).")
    verdict = param.String(default="", doc="Right or not, or the answer, as HTML.")
    explanation = param.String(default="", doc="Why, as HTML; shown with the verdict.")
    again = param.Boolean(default=False, doc="Offer 'Ask me again' (prompts on and answered).")
    counted = param.String(default="", doc="The line saying the choice counts in the room's tally; '' while it does not.")
    voted = param.String(default="", doc="The learner's vote in this round, '' for none (its choice shows picked).")
    held = param.String(default="", doc="While the teacher holds the reveal: the line shown in place of Reveal; '' otherwise.")
    note = param.String(default="", doc="A line above the choices ('' for none): the room's second round.")
    opened = param.Boolean(default=False, doc="Once answered: the fold is drawn open (just revealed, by the learner or the room).")

    _esm = """
    const CSS = `
      :host { display: block; }
      p { margin: 0.3em 0 0.1em 0; }
      .fl-choices { display: flex; flex-direction: column; gap: 0.15em; margin: 0.2em 10px 0.4em 10px; }
      .fl-choices label { cursor: pointer; }
      .fl-choices input { vertical-align: middle; margin: 0 0.4em 0.15em 0; }
      button { font: inherit; padding: 0.25em 0.9em; border-radius: 4px; border: 1px solid #0072B2; cursor: pointer; margin: 0.2em 0; }
      button.fl-reveal { background: #0072B2; color: #ffffff; }
      button.fl-reveal:disabled { opacity: 0.5; cursor: default; }
      button.fl-again { background: transparent; color: inherit; border-color: rgba(128, 128, 128, 0.6); }
      .fl-verdict-right { color: #009E73; font-weight: 700; }
      .fl-verdict-wrong { color: #D55E00; font-weight: 700; }
      .fl-counted { font-size: 0.85em; opacity: 0.8; margin: 0.2em 0; }
      .fl-held { font-weight: 700; margin: 0.3em 0; }
      .fl-round { font-style: italic; }
      summary { cursor: pointer; margin: 0.3em 0; }
      summary > div, summary > div > p { display: inline; }
    `
    export function render({ model, el }) {
      const name = 'choice-' + Math.random().toString(36).slice(2)
      const block = (html) => { const div = document.createElement('div'); div.innerHTML = html; return div }
      let inputs = [], revealButton = null
      const showVote = () => {  // a vote echoed back: tick it where it is, keeping the learner's focus
        for (const input of inputs) { input.checked = input.value === model.voted }
        if (revealButton && model.voted) { revealButton.disabled = false }
      }
      const draw = () => {
        inputs = []
        revealButton = null
        const style = document.createElement('style')
        style.textContent = CSS
        const parts = [style, block(model.question)]
        if (model.asking) {
          if (model.note) {
            const note = document.createElement('p')
            note.className = 'fl-round'
            note.textContent = model.note
            parts.push(note)
          }
          const reveal = document.createElement('button')
          reveal.className = 'fl-reveal'
          reveal.textContent = 'Reveal'
          reveal.disabled = !model.voted
          revealButton = reveal
          const list = document.createElement('div')
          list.className = 'fl-choices'
          list.setAttribute('role', 'radiogroup')
          for (const [value, label] of model.choices) {
            const option = document.createElement('label')
            const input = document.createElement('input')
            input.type = 'radio'
            input.name = name
            input.value = value
            input.checked = value === model.voted
            input.addEventListener('change', () => { reveal.disabled = false; model.send_msg({ vote: value }) })
            inputs.push(input)
            option.append(input, ' ' + label)
            list.append(option)
          }
          reveal.addEventListener('click', () => {
            const picked = list.querySelector('input:checked')
            if (picked) { model.send_msg({ commit: picked.value }) }
          })
          let instead = null
          if (model.held) {
            instead = document.createElement('p')
            instead.className = 'fl-held'
            instead.setAttribute('role', 'status')
            instead.textContent = model.held
          }
          parts.push(list, instead || reveal)
          if (model.counted) {
            const line = document.createElement('p')
            line.className = 'fl-counted'
            line.textContent = model.counted
            parts.push(line)
          }
        } else {
          // Answered (or prompts off): one line, the question, which opens onto the verdict and the explanation;
          // open at once when the learner has just pressed Reveal.
          const fold = document.createElement('details')
          fold.open = model.opened
          const line = document.createElement('summary')
          line.append(parts.pop())
          fold.append(line, block(model.verdict), block(model.explanation))
          if (model.again) {
            const again = document.createElement('button')
            again.className = 'fl-again'
            again.textContent = 'Ask me again'
            again.addEventListener('click', () => { model.send_msg({ forget: true }) })
            fold.append(again)
          }
          parts.push(fold)
        }
        el.replaceChildren(...parts)
      }
      draw()
      model.on(['question', 'choices', 'chosen', 'asking', 'verdict', 'explanation', 'again', 'counted', 'held', 'note', 'opened'], draw)
      model.on('voted', showVote)
    }
    """


class PredictionCard(pn.viewable.Viewer):
    """A question with a few choices; what it guards is shown once the learner has committed.

        card = PredictionCard("baselines/what-moves", "Which will not move?", {"mean": "the mean", ...},
                              answer="mean", explanation="...", guide=guide)
        pn.Column(card, card.guard(plot, table))

    `key` names the card across the app (it is the key of the stored answer). With the
    guide's prompts off the card shows the question with its answer and explanation, and
    every guarded panel is shown at once. The card itself is one `CardView`. A page lists its
    cards as `CardSpec`s (its module's CARDS, which the room's tally reads) and makes each with
    `PredictionCard.of(spec, explanation, guide)`.
    """

    revealed = param.Boolean(default=False, doc="Whether the guarded panels are shown (answered, or prompts off).")

    def __init__(
        self,
        key: str,
        question: str,
        choices: dict[str, str],
        answer: str,
        explanation: str,
        guide: Guide,
        kind: str = "Predict first",
        **params,
    ):
        super().__init__(**params)
        self.spec = card_spec(key, question, choices, answer, kind)  # refuses an answer that is not a choice
        self.key, self.choices, self.answer, self.guide = key, choices, answer, guide
        guide.meet(key, choices)
        self.view = CardView(
            on_msg=self._from_browser,
            question=markdown_html(f"**{kind}.** {question}"),
            choices=[[value, label] for value, label in choices.items()],
            explanation=markdown_html(explanation),
            sizing_mode="stretch_width",
            styles=CARD_STYLES,
            margin=CARD_MARGIN,
            css_classes=["fl-predict", card_class(key)],
        )
        self._guarded: list[tuple[pn.Column, tuple]] = []  # each guarded column and what it shows once revealed
        self._placeholders: list[pn.pane.HTML] = []
        self._room_reveals: set[str] = set()  # the room's reveals of this card this card has shown
        self._shown_by_room = False  # the room revealed it to a learner who had not voted: the answer, no verdict
        self._open_next = False  # the next draw opens the fold (the card was just revealed)
        guide.param.watch(lambda *_events: self._refresh(), ["prompts", "answers", "counted", "votes", "room"])
        self._refresh()

    @classmethod
    def of(cls, spec: CardSpec, explanation: str, guide: Guide, **params) -> PredictionCard:
        """The card `spec` describes, with its `explanation` (Markdown, shown with the verdict)."""
        return cls(spec.key, spec.question, dict(spec.choices), spec.answer, explanation, guide, kind=spec.kind, **params)

    def _from_browser(self, message: dict) -> None:
        choice, vote = message.get("commit"), message.get("vote")
        if isinstance(vote, str) and vote in self.choices:  # anything else a browser sends is ignored
            self.vote(vote)
        elif isinstance(choice, str) and choice in self.choices and not self.guide.held(self.key):
            self.commit(choice)
        elif message.get("forget") is True:
            self._shown_by_room = False
            self.guide.forget(self.key)

    @property
    def asking(self) -> bool:
        """The card asks its question: prompts on, not answered, not revealed by the room."""
        return self.guide.prompts and self.chosen is None and not self._shown_by_room

    def vote(self, choice: str) -> None:
        """Vote `choice` in the room's current round of this card, while it asks; a vote after the answer is ignored."""
        if choice not in self.choices:
            raise ValueError(f"{choice!r} is not one of the choices {list(self.choices)}.")
        if self.asking:
            self.guide.vote(self.key, choice)

    @property
    def chosen(self) -> str | None:
        """The choice committed to for this card, if any (a stored choice no longer offered counts as none)."""
        choice = self.guide.answers.get(self.key)
        return choice if choice in self.choices else None

    def commit(self, choice: str | None = None) -> None:
        """Commit to `choice` (default: the one ticked); the guarded panels are then shown."""
        choice = self.guide.voted(self.key) if choice is None else choice
        if choice not in self.choices:
            raise ValueError(f"{choice!r} is not one of the choices {list(self.choices)}.")
        if self.asking and self.guide.voted(self.key) != choice:
            self.guide.vote(self.key, choice)  # Reveal commits the vote it shows
        self._open_next = True
        self.guide.answer(self.key, choice)

    def guard(self, *objects, note: str = "what happens", placeholder: bool = True) -> pn.Column:
        """`objects` in a column that is shown only once this card is answered (or prompts are off).

        While they are hidden a line in their place says what waits behind the question
        ("Answer the question above to see `note`"), unless `placeholder` is False. The column
        stays empty until it is first shown: a first visit does not build, send or update the
        plots the learner cannot see yet (about half a page's Bokeh models), and an answer
        builds them once. An object given as a function (not a Panel component) is called for
        its part then, so a figure behind the question is not even made before it is shown.
        """
        column = pn.Column(sizing_mode="stretch_width", css_classes=["fl-guarded"])
        self._guarded.append((column, objects))
        parts = [column]
        if placeholder:
            line = pn.pane.HTML(
                f"<p><em>Answer the question above to see {html.escape(note)}.</em> "
                "(Guided prompts can be switched off in the header.)</p>",
                sizing_mode="stretch_width",
                styles=PLACEHOLDER_STYLES,
                margin=PLACEHOLDER_MARGIN,
                css_classes=["fl-guarded-placeholder"],
            )
            self._placeholders.append(line)
            parts.insert(0, line)
        self._refresh()
        return pn.Column(*parts, sizing_mode="stretch_width")

    def _take_room_reveal(self) -> bool:
        """Show the room's newest reveal of this card once: the learner's vote becomes their answer (or, with none,
        the card shows the answer). True when it committed a vote (the guide's change redraws the card)."""
        reveal = self.guide.room.get(self.key, {}).get("reveal")
        if not reveal or reveal in self._room_reveals:
            return False
        self._room_reveals.add(reveal)
        if not self.asking:
            return False
        self._open_next = True
        vote = self.guide.voted(self.key)
        if vote in self.choices:
            self.guide.answer(self.key, vote)
            return True
        self._shown_by_room = True
        return False

    def _refresh(self) -> None:
        if self._take_room_reveal():
            return
        chosen, asking = self.chosen, self.asking
        self.revealed = not asking
        voted = self.guide.voted(self.key) if asking else None
        held = (HELD_LINE if voted else HOLD_LINE) if asking and self.guide.held(self.key) else ""
        opened = False if asking else (self._open_next or self.view.opened)
        self._open_next = False
        with one_update():
            self.view.param.update(
                asking=asking, chosen=chosen or "", again=self.guide.prompts and (chosen is not None or self._shown_by_room),
                verdict=self._verdict_html(chosen), counted=COUNTED_LINE if self.guide.counted else "",
                voted=voted if voted in self.choices else "", held=held, opened=opened,
                note=ROUND_TWO_LINE if asking and self.guide.round_of(self.key) == 2 else "",
            )
            for column, objects in self._guarded:
                if self.revealed and not column.objects:
                    column.objects = [built(part) for part in objects]
                column.visible = self.revealed
            for line in self._placeholders:
                line.visible = not self.revealed

    def _verdict_html(self, chosen: str | None) -> str:
        right = html.escape(self.choices[self.answer])
        if chosen is None:
            return f"<p>The answer: <strong>{right}</strong>.</p>"
        yours = html.escape(self.choices[chosen])
        if chosen == self.answer:
            return f'<p><span class="fl-verdict-right">✓ Right.</span> You chose: {yours}.</p>'
        return f'<p><span class="fl-verdict-wrong">✗ Not quite.</span> You chose: {yours}. The answer: <strong>{right}</strong>.</p>'

    def __panel__(self):
        return self.view


def built(part):
    """A guarded part as shown: a function (a builder, not a Panel component) is called for it."""
    return part() if callable(part) and not isinstance(part, param.Parameterized) else part
