"""The `feedback-lab` command line.

    feedback-lab figures NAME [options] [--json]
    feedback-lab serve [--port 5006] [--address localhost] [--allow-websocket-origin HOST:PORT]

`figures` prints one of the seed chapters' tables from the engines (see `app/figures/`);
`serve` starts the web app (see `app/server.py`).
Every option is a field of that figure's settings dataclass, with the same default
and the same one-line help; an invalid value is refused with one sentence and exit
status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
import typing

from app.figures import FIGURES
from engines.settings import field_docs


def _option_kwargs(annotation, default) -> dict:
    """argparse keyword arguments for one dataclass field's type."""
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
        shown = " ".join(map(str, default)) if isinstance(default, list) else default
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="feedback-lab", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    figures = commands.add_parser("figures", help="print a table of the seed chapters")
    figures.add_argument("name", choices=list(FIGURES), metavar="NAME", help=", ".join(FIGURES))
    figures.add_argument("options", nargs=argparse.REMAINDER, help="the figure's options; NAME --help lists them")
    serve = commands.add_parser("serve", help="start the web app (every page present in app/pages)")
    serve.add_argument("--port", type=int, default=5006, help="port to listen on (default: 5006)")
    serve.add_argument("--address", default="localhost", help="address to listen on (default: localhost)")
    serve.add_argument(
        "--allow-websocket-origin",
        action="append",
        metavar="HOST[:PORT]",
        help="host allowed to open the app's websocket, repeatable (default: the address and port served)",
    )
    serve.add_argument("--show", action="store_true", help="open the app in a browser")
    return parser


def run_server(args: argparse.Namespace) -> int:
    from app.server import serve  # panel loads only when the app is served

    serve(port=args.port, address=args.address, websocket_origin=args.allow_websocket_origin, show=args.show)
    return 0


def figure_parser(name: str, module) -> argparse.ArgumentParser:
    """The options of one figure; its module is imported only when it is asked for."""
    parser = argparse.ArgumentParser(prog=f"feedback-lab figures {name}", description=module.__doc__)
    add_settings_options(parser, module.Settings)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    return parser


def run_figure(name: str, options: list[str]) -> int:
    module = importlib.import_module(FIGURES[name])
    parser = figure_parser(name, module)
    args = parser.parse_args(options)
    try:
        settings = settings_from_args(module.Settings, args)
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    result = module.compute(settings)
    print(json.dumps(result) if args.json else module.render(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "figures":
        return run_figure(args.name, args.options)
    if args.command == "serve":
        return run_server(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
