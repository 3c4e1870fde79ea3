"""Every control in the query string: a shared link restores the page's state.

`sync_url(viewer)` reads the link's query values of the viewer's controls once, applies the valid ones,
then keeps the URL and the controls in step with `pn.state.location.sync`. A value
that does not parse or lies outside its control's range is dropped: the control keeps
its default and the returned `pn.pane.Alert` says so, instead of a traceback.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from decimal import Decimal

import panel as pn
import param


def _parse(parameter: param.Parameter, text: str):
    """The value `text` stands for, or ValueError with the reason in words."""
    if isinstance(parameter, param.Boolean):
        lowered = text.strip().lower()
        if lowered not in ("true", "false", "1", "0"):
            raise ValueError("expected true or false")
        return lowered in ("true", "1")
    if isinstance(parameter, param.Number):
        try:
            value = int(text) if isinstance(parameter, param.Integer) else float(text)
        except ValueError:
            raise ValueError("not a number") from None
        if not math.isfinite(value):
            raise ValueError("not a finite number")
        low, high = parameter.bounds or (None, None)
        if (low is not None and value < low) or (high is not None and value > high):
            raise ValueError(f"outside the range {low} to {high}")
        return value
    if isinstance(parameter, param.String):
        if parameter.regex is not None and re.match(parameter.regex, text) is None:
            raise ValueError("not of the form this control accepts")
        return text
    if isinstance(parameter, param.Selector):
        for option in parameter.objects:
            if str(option) == text:
                return option
        raise ValueError("not one of " + ", ".join(map(str, parameter.objects)))
    return json.loads(text)


def parse_query(obj: param.Parameterized, query: dict[str, str], names: list[str]) -> tuple[dict, list[str]]:
    """Split a link's query values into the valid ones (by parameter) and notices about the rest."""
    values, notices = {}, []
    for name in names:
        if name not in query:
            continue
        parameter = obj.param[name]
        try:
            values[name] = _parse(parameter, query[name])
        except ValueError as reason:
            default = getattr(obj, name)
            notices.append(f"{name}={query[name]!r} in the link was ignored ({reason}); using {name} = {default}.")
    return values, notices


def _query_text(value) -> str:
    """A value as Panel's Location writes it into the query: strings as they are, the rest as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def step_text(parameter: param.Parameter, text: str) -> str:
    """A query value `text` of a number control without a slider's float noise.

    A slider moved to 0.7 in steps of 0.05 reports 0.7000000000000001; written with as many decimals
    as the control's `step` has ("0.7"), the link reads cleanly and opens the page on the same value. A
    value that is not on a step's decimals (a default of 0.123 with step 0.05) keeps all its digits, so a
    link always reproduces the value it was written from.
    """
    step = getattr(parameter, "step", None)
    if not isinstance(parameter, param.Number) or isinstance(parameter, param.Integer) or not step:
        return text
    try:
        value = float(text)
    except ValueError:
        return text
    if not math.isfinite(value):
        return text
    decimals = max(0, -Decimal(repr(float(step))).normalize().as_tuple().exponent)
    short = f"{value:.{max(decimals, 1)}f}".rstrip("0")
    short = "0.0" if short in ("0.", "-0.") else short + "0" * short.endswith(".")
    return short if math.isclose(float(short), value, rel_tol=1e-9, abs_tol=1e-12) else text


def _round_to_steps(location, obj: param.Parameterized, names: list[str]) -> None:
    """Make `location` write `obj`'s number controls to the query with their step's decimals (`step_text`)."""
    steps = getattr(location, "_step_parameters", None)
    if steps is None:
        steps = {}
        write = location.update_query

        def update_query(**query) -> None:
            write(**{k: step_text(steps[k], v) if k in steps and isinstance(v, str) else v for k, v in query.items()})

        location._step_parameters = steps
        location.update_query = update_query
    steps.update({name: obj.param[name] for name in names})


def _session_query() -> dict[str, str]:
    """The query arguments of the current server session's request, first value of each."""
    args = pn.state.session_args if pn.state.curdoc and pn.state.curdoc.session_context else {}
    return {k: v[0].decode(errors="replace") for k, v in (args or {}).items() if v}


def notice_alert(notices: list[str], alert: pn.pane.Alert | None = None) -> pn.pane.Alert:
    """A warning listing `notices`, hidden when there are none (reuses `alert` if given)."""
    alert = alert or pn.pane.Alert(alert_type="warning", sizing_mode="stretch_width")
    alert.object = "\n".join(f"- {n}" for n in notices)
    alert.visible = bool(notices)
    return alert


def controls_of(obj: param.Parameterized | type[param.Parameterized]) -> list[str]:
    """The page's controls, in the order its class declares them: every parameter but `name`, and but one
    the page keeps as state rather than offers (a run's phase), which it marks with a negative `precedence`."""
    return [name for name, parameter in obj.param.objects("existing").items()
            if name != "name" and (parameter.precedence is None or parameter.precedence >= 0)]


def sync_url(obj: param.Parameterized, names: list[str] | None = None, query: dict[str, str] | None = None,
             adjust: Callable[[dict[str, str]], tuple[dict[str, str], list[str]]] | None = None) -> pn.pane.Alert:
    """Apply the link's valid values to `obj`, keep the URL in step, return the notice pane.

    `names` are the parameters the link holds, by default every control of the page (`controls_of`), so a
    control added to a page is in its links with no list to keep.
    `query` defaults to the current session's request arguments (tests pass one).
    `adjust(query) -> (query, notices)`, if given, rewrites the link's values before they are
    parsed (a server's limits: a number above one is set to it) and says so in its notices;
    the browser's own query string goes through it too, so a value is said once.
    """
    names = controls_of(obj) if names is None else names
    query = _session_query() if query is None else query
    query, adjusted = adjust(query) if adjust is not None else (query, [])
    values, notices = parse_query(obj, query, names)
    notices = adjusted + notices
    obj.param.update(**values)
    alert = notice_alert(notices)
    location = pn.state.location if pn.state.curdoc and pn.state.curdoc.session_context else None
    if location is not None:

        def on_error(rejected: dict) -> None:
            # The browser's own query string arrives after the request's and is applied all
            # or nothing: keep its valid values, report the rest once, and rewrite the URL.
            # The browser sends numbers back parsed ("-9" as -9.0): a value the request already
            # reported is not reported twice.
            texts = {k: str(v) for k, v in rejected.items()}
            valid, more = parse_query(obj, adjust(texts)[0] if adjust is not None else texts, list(rejected))
            obj.param.update(**valid)
            reported = {notice.split("=", 1)[0] for notice in notices}
            more = [notice for notice in more if notice.split("=", 1)[0] not in reported]
            notice_alert(list(dict.fromkeys(notices + more)), alert)
            location.update_query(**{k: _query_text(getattr(obj, k)) for k in rejected})

        _round_to_steps(location, obj, names)
        location.sync(obj, {n: n for n in names}, on_error=on_error)
    return alert
