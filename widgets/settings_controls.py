"""A page's controls made from the fields of an engine's settings dataclass.

An engine's frozen settings dataclass (engines.lm.settings.LMSettings, engines.toy_target.ToyTargetSettings, ...)
is the one definition of each of its settings: its default, and the docstring line under it that says what it
means. The command line takes its options from it (app/cli/options.py); a page takes its controls from it here:

    LM = SettingsControls(LMSettings)

    class LiveRunPage(pn.viewable.Viewer):
        beta = LM.number("beta", "KL coefficient β", bounds=(0.0, 10.0), step=0.01)
        steps = LM.integer("steps", "Training steps", bounds=(1, 5000))

        def settings(self) -> LMSettings:
            return LM.settings(self)

Each control is a typed `param` parameter whose default is the field's and whose `doc` is the field's docstring
(engines.settings.field_docs); the page gives what only it knows, the label a learner reads and the bounds and
step of its widget. The parameter's name is the page's attribute and so the control's name in a shared link; it
is the field's name unless the page needs another (`train_seed = TRAINING.integer("seed", ...)`).
`LM.names` lists the controls in the order they are declared (the link's), `LM.settings(page)` rebuilds the
frozen settings from them, and `LM.values(settings)` sets them back from settings read from a run's files.

Why a helper called in the class body, rather than a base class the kit would generate from the dataclass: the
page's controls stay where a reader looks for them, one typed line each among the page's other `param` fields,
with their labels and bounds in view; a page may take them from two dataclasses (the reward-models page's pairs
and training) or from none for a control with no field, which stays a plain `param` beside them; and a field
the page does not offer (a gradient clip, a held-out share) keeps the engine's default without being listed.

The docstring is the parameter's `doc` (what `help(page)` and Panel's parameter views show); the pages build
their widgets as they did, and an input whose widget would turn `doc` into a tooltip icon is given
`description=None` where the page wants none (two Bokeh models fewer per control).
"""

from __future__ import annotations

import dataclasses
import types
import typing

import param

from engines.settings import field_docs

_KINDS = {param.Integer: int, param.Number: float, param.Boolean: bool}
"""The value type each kind of control holds (a Selector holds whatever its options are)."""


class SettingsControls:
    """The controls a page makes from the fields of `settings_cls`, and the way back to its settings."""

    def __init__(self, settings_cls: type):
        self.settings_cls = settings_cls
        self.fields = {f.name: f for f in dataclasses.fields(settings_cls)}
        self.types = typing.get_type_hints(settings_cls)
        self.docs = field_docs(settings_cls)
        self.made: list[tuple[param.Parameter, str]] = []
        """Each control made, with the field it stands for, in the order of the class body."""

    def _control(self, kind: type[param.Parameter], field: str, label: str, default=None, doc: str | None = None,
                 **options) -> param.Parameter:
        if field not in self.fields:
            raise AttributeError(f"{self.settings_cls.__name__} has no field {field!r}")
        annotation = self.types[field]
        if typing.get_origin(annotation) in (types.UnionType, typing.Union):  # `float | None`: the engine may choose
            annotation = next(t for t in typing.get_args(annotation) if t is not type(None))
        if kind in _KINDS and annotation is not _KINDS[kind]:
            raise TypeError(f"{self.settings_cls.__name__}.{field} is {annotation.__name__}, not a {kind.__name__} control")
        engine_default = self.fields[field].default
        # The dataclass is the one definition of a default: the page gives one only where the engine has none
        # (lr = None: the model's own learning rate), and then it is the number the control starts at.
        if engine_default is None and default is None:
            raise ValueError(f"{self.settings_cls.__name__}.{field} has no default: give the control one")
        if engine_default is not None and default is not None:
            raise ValueError(f"{self.settings_cls.__name__}.{field} defaults to {engine_default!r}: the control takes it")
        parameter = kind(default=engine_default if default is None else default, label=label,
                         doc=doc if doc is not None else self.docs.get(field), **options)
        self.made.append((parameter, field))
        return parameter

    def integer(self, field: str, label: str, **options) -> param.Integer:
        """An Integer control for the int `field` (options: bounds, step, default where the field has none)."""
        return self._control(param.Integer, field, label, **options)

    def number(self, field: str, label: str, **options) -> param.Number:
        """A Number control for the float `field`."""
        return self._control(param.Number, field, label, **options)

    def boolean(self, field: str, label: str, **options) -> param.Boolean:
        """A Boolean control for the bool `field`."""
        return self._control(param.Boolean, field, label, **options)

    def selector(self, field: str, label: str, objects, **options) -> param.Selector:
        """A Selector control for `field`, offering `objects` (a list, or a dict of labels to values)."""
        return self._control(param.Selector, field, label, objects=objects, **options)

    @property
    def names(self) -> list[str]:
        """The controls' names on the page (and in its link), in the order they are declared.

        Param names a parameter when its class is made: read them in a method, not in the class body."""
        if any(parameter.name is None for parameter, _ in self.made):
            raise RuntimeError("a control has no name yet: read `names` once the page's class is made")
        return [parameter.name for parameter, _ in self.made]

    def settings(self, page: param.Parameterized, **fixed):
        """The frozen settings of the page's controls now; `fixed` gives the fields the page sets itself
        (or sets otherwise than a control holds them). ValueError, with the engine's one sentence, if refused."""
        values = {field: getattr(page, parameter.name) for parameter, field in self.made}
        return self.settings_cls(**(values | fixed))

    def values(self, settings) -> dict:
        """The controls' values that give `settings` back, by the controls' names (for `page.param.update`)."""
        return {parameter.name: getattr(settings, field) for parameter, field in self.made}
