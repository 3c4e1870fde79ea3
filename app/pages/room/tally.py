"""The room's tally of the prediction cards, as one component: every card with how many voted for each answer, per
round, and one card shown large for a projector, its right answer hidden until the teacher reveals it.

Peer instruction (Mazur's ConcepTests, Desmos Classroom's dashboard): the class votes, the teacher
sees the split before anyone reveals, the class discusses and votes again, then the answer. The
teacher's own view lists the cards asked so far (with a vote, or a state the teacher set), then the
others, in the app's order, with a bar per choice and round: the first vote's and the second's side
by side. Per card: "Show the class" puts it on the whole view in large type; "Hold the reveal" keeps
the learners' own Reveal back until "Reveal the answer", which shows the answer on every learner's
card and marks the right choice here; "Vote again" starts the second round. The right answer
travels to the browser only when it is revealed. One component (a JavaScript view
drawn from its parameters): a card with a Panel row per choice would cost a visit about fifty Bokeh
models, and each update the server's walk of them.
"""

from __future__ import annotations

import param

from widgets.predict import CardSpec, MessagingComponent, markdown_html


def card_rows(specs: list[tuple[str, CardSpec]]) -> list[dict]:
    """The cards as the component draws them: page title, key, kind, question (HTML) and choices, no answer."""
    return [{"page": page, "key": s.key, "kind": s.kind, "question": markdown_html(s.question),
             "choices": [[value, label] for value, label in s.choices]} for page, s in specs]


class TallyBoard(MessagingComponent):
    """The tally of every card; `shown` names the card on the projector, `answer` is its right choice once revealed.

    The browser sends {"show": key} ("Show the class"), {"show": ""} ("Back to every card"),
    {"hold": key, "on": bool}, {"reveal": key} and {"again": key}; `on_msg` receives them (the room
    view checks them: only a card of `cards` is acted on).
    """

    cards = param.List(default=[], doc="The cards, as card_rows makes them, in the app's order.")
    counts = param.Dict(default={}, doc="Card key -> round ('1', '2') -> choice -> learners who voted for it.")
    states = param.Dict(default={}, doc="Card key -> {'round': 1 or 2, 'held': bool, 'revealed': bool}, for the cards "
                                        "whose state the teacher has set.")
    shown = param.String(default="", doc="The key of the card shown to the class, '' for none.")
    answers = param.Dict(default={}, doc="Card key -> its right choice, for the cards revealed to the room only.")

    _esm = """
    const CSS = `
      :host { display: block; }
      .fl-tally-card { border-left: 4px solid #E69F00; background: rgba(230, 159, 0, 0.08); border-radius: 4px;
        padding: 0.3em 0.8em 0.5em 0.8em; margin: 0 0 0.8em 0; }
      .fl-tally-page { font-size: 0.85em; opacity: 0.8; }
      .fl-tally-card p { margin: 0.2em 0; }
      .fl-tally-row { display: grid; grid-template-columns: minmax(8em, 2fr) 3fr 3em; gap: 0.6em; align-items: center; margin: 0.15em 0; }
      .fl-tally-row.fl-two { grid-template-columns: minmax(8em, 2fr) 3fr 3em 3fr 3em; }
      .fl-tally-bar.fl-second { background: #CC79A7; }
      .fl-tally-heads { font-size: 0.85em; opacity: 0.8; }
      .fl-tally-state { font-size: 0.85em; font-weight: 700; }
      h3.fl-tally-group { font-size: 1em; margin: 0.8em 0 0.4em 0; }
      .fl-tally-bar { height: 0.9em; background: #0072B2; border-radius: 2px; min-width: 2px; }
      .fl-tally-n { text-align: right; font-variant-numeric: tabular-nums; font-weight: 700; }
      .fl-tally-total { font-size: 0.85em; opacity: 0.8; }
      button { font: inherit; padding: 0.25em 0.9em; border-radius: 4px; border: 1px solid #0072B2; cursor: pointer;
        background: #0072B2; color: #ffffff; margin: 0.3em 0.4em 0 0; }
      button.fl-quiet { background: transparent; color: inherit; border-color: rgba(128, 128, 128, 0.6); }
      .fl-projector { font-size: 1.9em; line-height: 1.35; }
      .fl-projector .fl-tally-row { grid-template-columns: minmax(8em, 2fr) 3fr 2.5em; margin: 0.4em 0; }
      .fl-projector .fl-tally-row.fl-two { grid-template-columns: minmax(8em, 2fr) 3fr 2.5em 3fr 2.5em; }
      .fl-projector .fl-tally-bar { height: 1.1em; }
      .fl-projector button { font-size: 0.55em; }
      .fl-right { color: #009E73; font-weight: 700; }
      .fl-right .fl-tally-bar { background: #009E73; }
      @media (max-width: 767.98px) { .fl-projector { font-size: 1.2em; } }
    `
    export function render({ model, el }) {
      const button = (text, message, quiet) => {
        const b = document.createElement('button')
        b.textContent = text
        if (quiet) { b.className = 'fl-quiet' }
        b.addEventListener('click', () => model.send_msg(message))
        return b
      }
      const card = (c, large) => {
        const box = document.createElement('section')
        box.className = 'fl-tally-card fl-tally-' + c.key.replace(/[^a-z0-9]/gi, '-')
        box.setAttribute('aria-label', c.page + ': ' + c.kind)
        const rounds = model.counts[c.key] || {}
        const state = model.states[c.key] || { round: 1, held: false, revealed: false }
        const answer = model.answers[c.key] || ''
        const two = state.round === 2 || Object.keys(rounds['2'] || {}).length > 0
        const tallies = two ? ['1', '2'] : ['1']
        const totals = tallies.map((r) => c.choices.reduce((sum, [value]) => sum + ((rounds[r] || {})[value] || 0), 0))
        const most = Math.max(1, ...tallies.flatMap((r) => c.choices.map(([value]) => (rounds[r] || {})[value] || 0)))
        const head = document.createElement('div')
        head.className = 'fl-tally-page'
        head.textContent = c.page + ' · ' + c.kind
        const question = document.createElement('div')
        question.innerHTML = c.question
        box.append(head, question)
        if (two) {
          const heads = document.createElement('div')
          heads.className = 'fl-tally-row fl-two fl-tally-heads'
          for (const text of ['', 'First vote', '', 'Second vote', '']) {
            const cell = document.createElement('span')
            cell.textContent = text
            heads.append(cell)
          }
          box.append(heads)
        }
        for (const [value, label] of c.choices) {
          const right = answer === value
          const row = document.createElement('div')
          row.className = 'fl-tally-row' + (two ? ' fl-two' : '') + (right ? ' fl-right' : '')
          const name = document.createElement('span')
          name.textContent = (right ? '✓ ' : '') + label
          row.append(name)
          for (const r of tallies) {
            const n = (rounds[r] || {})[value] || 0
            const track = document.createElement('div')
            const bar = document.createElement('div')
            bar.className = 'fl-tally-bar' + (r === '2' ? ' fl-second' : '')
            bar.style.width = (100 * n / most) + '%'
            track.append(bar)
            const count = document.createElement('span')
            count.className = 'fl-tally-n fl-round-' + r
            count.textContent = n
            count.setAttribute('aria-label', label + (r === '2' ? ', second vote: ' : ', first vote: ') + n)
            row.append(track, count)
          }
          row.setAttribute('aria-label', label + ': ' + ((rounds['1'] || {})[value] || 0))
          box.append(row)
        }
        const line = document.createElement('p')
        line.className = 'fl-tally-total'
        const voted = (n) => n === 1 ? '1 learner has voted' : n + ' learners have voted'
        line.textContent = two ? voted(totals[0]) + ' in the first vote, ' + totals[1] + ' in the second.' : voted(totals[0]) + '.'
        box.append(line)
        const status = document.createElement('p')
        status.className = 'fl-tally-state'
        status.textContent = state.revealed ? 'The answer is revealed to the room.'
          : state.held ? 'You hold the reveal: learners vote, and the answer waits for you.' : ''
        if (status.textContent) { box.append(status) }
        if (!large) { box.append(button('Show the class', { show: c.key }, true)) }
        if (!state.revealed) {
          box.append(state.held ? button('Let learners reveal', { hold: c.key, on: false }, true)
                                : button('Hold the reveal', { hold: c.key, on: true }, true))
          box.append(button('Reveal the answer', { reveal: c.key }))
        }
        if (state.round !== 2 && totals[0] > 0) { box.append(button('Vote again', { again: c.key }, true)) }
        if (large) { box.append(button('Back to every card', { show: '' }, true)) }
        return box
      }
      const asked = (c) => c.key in model.states || Object.values(model.counts[c.key] || {}).some(
        (choices) => Object.values(choices).some((n) => n > 0))
      const group = (text, cards) => {
        if (!cards.length) { return [] }
        const title = document.createElement('h3')
        title.className = 'fl-tally-group'
        title.textContent = text
        return [title, ...cards.map((c) => card(c, false))]
      }
      let drawn = null
      const draw = () => {
        // Redraw only when what it shows changed: a redraw replaces the buttons, and a click on one being replaced is lost.
        const shows = JSON.stringify([model.cards.map((c) => c.key), model.counts, model.states, model.shown, model.answers])
        if (shows === drawn) { return }
        drawn = shows
        const style = document.createElement('style')
        style.textContent = CSS
        const shown = model.cards.find((c) => c.key === model.shown)
        if (shown) {
          const projector = document.createElement('div')
          projector.className = 'fl-projector'
          projector.append(card(shown, true))
          el.replaceChildren(style, projector)
        } else {
          const list = document.createElement('div')
          list.className = 'fl-tally-asked'
          list.append(...group('Asked so far, with the class’s votes', model.cards.filter(asked)))
          const rest = document.createElement('div')
          rest.className = 'fl-tally-rest'
          rest.append(...group('Not asked yet', model.cards.filter((c) => !asked(c))))
          el.replaceChildren(style, list, rest)
        }
      }
      draw()
      model.on(['cards', 'counts', 'states', 'shown', 'answers'], draw)
    }
    """
