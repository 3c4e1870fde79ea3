"""Command-line options built from the engines' settings dataclasses.

One `--field-name` option per field, with the field's default and its docstring as help,
so the command line and the pages share one definition of every default.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing

from engines.settings import field_docs


def _option_kwargs(annotation, default) -> dict:
    """argparse keyword arguments for one dataclass field's type (`X | None` parses as X)."""
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        annotation = next(t for t in typing.get_args(annotation) if t is not type(None))
    if typing.get_origin(annotation) is tuple:
        (item, *_) = typing.get_args(annotation)
        return {"type": item, "nargs": "+", "default": list(default)}
    if annotation is bool:
        return {"action": argparse.BooleanOptionalAction, "default": default}
    return {"type": annotation, "default": default}


def add_settings_options(parser: argparse.ArgumentParser, settings_cls) -> None:
    """One `--field-name` option per field of `settings_cls`, help from its docstring."""
    docs = field_docs(settings_cls)
    hints = typing.get_type_hints(settings_cls)
    for field in dataclasses.fields(settings_cls):
        kwargs = _option_kwargs(hints[field.name], field.default)
        default = kwargs["default"]
        shown = " ".join(map(str, default)) if isinstance(default, list) else "see above" if default is None else default
        kwargs["help"] = f"{docs.get(field.name, '')} (default: {shown})"
        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, **kwargs)


def settings_from_args(settings_cls, args: argparse.Namespace):
    """Build the frozen settings from parsed options; ValueError carries the sentence."""
    hints = typing.get_type_hints(settings_cls)
    values = {}
    for field in dataclasses.fields(settings_cls):
        value = getattr(args, field.name)
        values[field.name] = tuple(value) if typing.get_origin(hints[field.name]) is tuple else value
    return settings_cls(**values)
