"""A number box for a bounded parameter that answers a value outside its bounds with one sentence.

`pn.widgets.IntInput.from_param` passes the bounds to the browser, which does not hold a
typed value to them: the box keeps showing 5000 while the parameter, which refused it,
stays at 300, and nothing says why. `number_box` leaves the bounds to the server instead:
a typed value outside them (or an emptied box) is put back to the nearest allowed value
(the current one, for an emptied box), the box shows it, and `say` gets one sentence.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn
import param


def number_box(obj: param.Parameterized, name: str, say: Callable[[str], None],
               too_high: Callable[[float], str] | None = None, **kwargs) -> pn.widgets.Widget:
    """An IntInput (FloatInput for a Number) kept in step with `obj.<name>` both ways.

    `too_high(high)` words the sentence for a value above the upper bound (a server's
    limit, say); by default it is "<label> is at most <high>; it was set to <high>."
    """
    parameter = obj.param[name]
    kind = pn.widgets.IntInput if isinstance(parameter, param.Integer) else pn.widgets.FloatInput
    box = kind(label=parameter.label, value=getattr(obj, name), **({"step": parameter.step} if parameter.step else {}), **kwargs)

    def typed(event) -> None:
        low, high = parameter.bounds or (None, None)
        value, sentence = event.new, ""
        if value is None:
            value = getattr(obj, name)
            sentence = f"{parameter.label} needs a number; it stays {value}."
        elif high is not None and value > high:
            value = high
            sentence = too_high(high) if too_high is not None else f"{parameter.label} is at most {high}; it was set to {high}."
        elif low is not None and value < low:
            value = low
            sentence = f"{parameter.label} is at least {low}; it was set to {low}."
        if sentence:
            say(sentence)
            box.value = value  # the box shows what the parameter holds
        setattr(obj, name, value)

    box.param.watch(typed, "value")
    obj.param.watch(lambda event: setattr(box, "value", event.new), name)
    return box
