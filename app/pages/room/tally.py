"""The room's tally of the prediction cards, as one component: every card with how many chose each answer, and one
card shown large for a projector, its right answer hidden until the teacher reveals it.

Peer instruction (Mazur's ConcepTests, Desmos Classroom's dashboard): the class commits, the teacher
sees the split before anyone reveals, the class discusses, then the answer. The teacher's own view
lists the cards in the app's order with a bar per choice; "Show the class" puts one card on the
whole view in large type, the bars only, and "Reveal the answer" there marks the right choice. The
right answer travels to the browser only when it is revealed. One component (a JavaScript view
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

    The browser sends {"show": key} ("Show the class"), {"show": ""} ("Back to every card") and
    {"reveal": true}; `on_msg` receives them (the room view checks them: only a card of `cards`
    can be shown).
    """

    cards = param.List(default=[], doc="The cards, as card_rows makes them, in the app's order.")
    counts = param.Dict(default={}, doc="Card key -> choice -> learners who chose it.")
    shown = param.String(default="", doc="The key of the card shown to the class, '' for none.")
    answer = param.String(default="", doc="The shown card's right choice once revealed, '' before.")

    _esm = """
    const CSS = `
      :host { display: block; }
      .fl-tally-card { border-left: 4px solid #E69F00; background: rgba(230, 159, 0, 0.08); border-radius: 4px;
        padding: 0.3em 0.8em 0.5em 0.8em; margin: 0 0 0.8em 0; }
      .fl-tally-page { font-size: 0.85em; opacity: 0.8; }
      .fl-tally-card p { margin: 0.2em 0; }
      .fl-tally-row { display: grid; grid-template-columns: minmax(8em, 2fr) 3fr 3em; gap: 0.6em; align-items: center; margin: 0.15em 0; }
      .fl-tally-bar { height: 0.9em; background: #0072B2; border-radius: 2px; min-width: 2px; }
      .fl-tally-n { text-align: right; font-variant-numeric: tabular-nums; font-weight: 700; }
      .fl-tally-total { font-size: 0.85em; opacity: 0.8; }
      button { font: inherit; padding: 0.25em 0.9em; border-radius: 4px; border: 1px solid #0072B2; cursor: pointer;
        background: #0072B2; color: #ffffff; margin: 0.3em 0.4em 0 0; }
      button.fl-quiet { background: transparent; color: inherit; border-color: rgba(128, 128, 128, 0.6); }
      .fl-projector { font-size: 1.9em; line-height: 1.35; }
      .fl-projector .fl-tally-row { grid-template-columns: minmax(8em, 2fr) 3fr 2.5em; margin: 0.4em 0; }
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
        const counts = model.counts[c.key] || {}
        const total = c.choices.reduce((sum, [value]) => sum + (counts[value] || 0), 0)
        const most = Math.max(1, ...c.choices.map(([value]) => counts[value] || 0))
        const head = document.createElement('div')
        head.className = 'fl-tally-page'
        head.textContent = c.page + ' · ' + c.kind
        const question = document.createElement('div')
        question.innerHTML = c.question
        box.append(head, question)
        for (const [value, label] of c.choices) {
          const n = counts[value] || 0
          const row = document.createElement('div')
          row.className = 'fl-tally-row' + (large && model.answer === value ? ' fl-right' : '')
          const name = document.createElement('span')
          name.textContent = (large && model.answer === value ? '✓ ' : '') + label
          const track = document.createElement('div')
          const bar = document.createElement('div')
          bar.className = 'fl-tally-bar'
          bar.style.width = (100 * n / most) + '%'
          track.append(bar)
          const count = document.createElement('span')
          count.className = 'fl-tally-n'
          count.textContent = n
          row.setAttribute('aria-label', label + ': ' + n)
          row.append(name, track, count)
          box.append(row)
        }
        const line = document.createElement('p')
        line.className = 'fl-tally-total'
        line.textContent = total === 1 ? '1 learner has answered.' : total + ' learners have answered.'
        box.append(line)
        if (large) {
          if (!model.answer) { box.append(button('Reveal the answer', { reveal: true })) }
          box.append(button('Back to every card', { show: '' }, true))
        } else {
          box.append(button('Show the class', { show: c.key }, true))
        }
        return box
      }
      const draw = () => {
        const style = document.createElement('style')
        style.textContent = CSS
        const shown = model.cards.find((c) => c.key === model.shown)
        if (shown) {
          const projector = document.createElement('div')
          projector.className = 'fl-projector'
          projector.append(card(shown, true))
          el.replaceChildren(style, projector)
        } else {
          el.replaceChildren(style, ...model.cards.map((c) => card(c, false)))
        }
      }
      draw()
      model.on(['cards', 'counts', 'shown', 'answer'], draw)
    }
    """
