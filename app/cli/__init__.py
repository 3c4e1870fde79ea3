"""The `feedback-lab` command line.

    feedback-lab --version
    feedback-lab figures NAME [options] [--json]
    feedback-lab serve [--port 5006] [--address localhost] [--allow-websocket-origin HOST:PORT] [--admin] [--web-processes N] [--new-lesson]
                       [--class]
                       [--scheduler tcp://HOST:PORT | tls://HOST:PORT] [--teacher-token TOKEN] [--models NAMES] [--rewards NAMES] [limits]
    feedback-lab train-lm [options] [--out DIR]
    feedback-lab make-pairs --pairs N --tau-label T --out FILE
    feedback-lab train-reward --pairs FILE --out FILE [--json]
    feedback-lab make-embedded-model [options]
    feedback-lab lab [--out DIR] [--solutions]
    feedback-lab thumbnails [--out DIR]

`figures` prints one of the seed chapters' tables from the engines (see `app/cli/figures/`);
`serve` starts the web app (see `app/serving/server.py`) and the Dask cluster its model jobs run on,
or joins one (see `app/jobs/cluster.py`), from several web processes behind nginx (see `app/serving/web_processes.py`), for a
classroom with `--class` (see `app/serving/classroom.py`), and prints the teacher's link to the room view (see `app/serving/room.py`), offering its learners the models of `--models` (see `app/serving/offered.py`); `lab` writes the lab's notebook (see `app/lab/`); `thumbnails` draws the index's pictures (see
`app/pages/thumbnails.py`); the
others run the language-model work without a browser, writing the same files as the pages.
Every option of a figure
or a run is a field of its settings dataclass, with the same default and the same
one-line help; an invalid value is refused with one sentence and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from importlib.metadata import PackageNotFoundError, version

from app.cli.figures import FIGURES
from app.cli.options import add_settings_options, settings_from_args
from app.jobs.cluster import SCHEDULER_VARIABLE
from app.serving import classroom, limits, offered, web_processes
from app.serving.room import TOKEN_VARIABLE, Room, SchedulerBoard, TeacherToken, install_learners_url
from engines.lm.settings import is_folder, is_shipped

COMMANDS = {
    "train-lm": ("app.cli.train_lm", "add_arguments", "run", "train a language model with REINFORCE, as the live-run page does"),
    "make-pairs": ("app.cli.preferences", "add_make_pairs_arguments", "run_make_pairs", "sample and label preference pairs"),
    "train-reward": ("app.cli.preferences", "add_train_reward_arguments", "run_train_reward", "train a reward model on pairs"),
    "make-embedded-model": ("app.cli.embedded_model", "add_arguments", "run", "rebuild the embedded language model"),
    "lab": ("app.lab", "add_arguments", "run", "write out the lab's notebook (seed 001's six exercises)"),
    "thumbnails": ("app.pages.thumbnails", "add_arguments", "run", "draw the index's picture of every page from the engines"),
}
"""Commands whose modules (torch, transformers) load only when the command runs."""


def package_version() -> str:
    """The installed package's version (pyproject.toml's, as pip recorded it)."""
    try:
        return version("feedback-lab")
    except PackageNotFoundError:  # the sources run from a folder on PYTHONPATH, never installed
        return "not installed"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="feedback-lab", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    figures = commands.add_parser("figures", help="print a table of the seed chapters")
    figures.add_argument("name", choices=list(FIGURES), metavar="NAME", help=", ".join(FIGURES))
    figures.add_argument("options", nargs=argparse.REMAINDER, help="the figure's options; NAME --help lists them")
    serve = commands.add_parser("serve", help="start the web app (every page present in app/pages)")
    serve.add_argument("--port", type=int, default=5006, help="port to listen on (default: 5006)")
    serve.add_argument("--address", default=None,
                       help="address to listen on (default: localhost; with --class, every address of the machine, 0.0.0.0)")
    serve.add_argument(
        "--allow-websocket-origin",
        action="append",
        metavar="HOST[:PORT]",
        help=f"host allowed to open the app's websocket, repeatable (default: the hosts in {ORIGIN_VARIABLE}, "
             "comma-separated, else the address and port served and localhost)",
    )
    serve.add_argument("--show", action="store_true", help="open the app in a browser")
    serve.add_argument("--admin", action="store_true", help="also serve Panel's admin page at /admin (sessions, memory, logs)")
    serve.add_argument("--scheduler", metavar="tcp://HOST:PORT", default=None,
                       help=f"run the model jobs on the Dask cluster of this scheduler (default: ${SCHEDULER_VARIABLE}, "
                            "else a local cluster of worker processes started with the server); tls://HOST:PORT "
                            "with Dask's TLS settings, see docs/tls.md")
    serve.add_argument("--teacher-token", metavar="TOKEN", default=None,
                       help=f"the secret of the teacher's link to the room view, 16 to 128 letters, digits, - or _ (default: "
                            f"${TOKEN_VARIABLE}, else a new random one at each start; give every web process behind one proxy the same)")
    serve.add_argument("--web-processes", type=int, metavar="N", default=None,
                       help=f"serve from N web processes behind nginx on the one address learners type (default: "
                            f"${web_processes.VARIABLE}, else one per core, from 2 to {web_processes.DEFAULT_MOST}, where nginx is "
                            "installed, else 1). Each process serves pages on about one core, so give a machine's "
                            "core count (docs/performance.md, 'Learners per core', has the figures of a 2-core machine), "
                            "and 1 behind a proxy of your own")
    serve.add_argument("--new-lesson", action="store_true",
                       help="begin a new lesson: runs finished before now (a rehearsal's) are set aside, so a Start trains "
                            "afresh instead of showing one; they are kept, listed, and replayed on request")
    serve.add_argument("--class", dest="classroom", action="store_true",
                       help="serve a classroom: listen on this machine's network address, let exactly the addresses printed "
                            "open sessions (the learners' and, for the teacher's own tab, localhost's), print the URL "
                            "learners type with its QR code and the teacher's link, and begin a new lesson (--new-lesson); "
                            "--address, --port and --allow-websocket-origin given still win")
    offered.add_arguments(serve)
    limits.add_arguments(serve)
    for name, (*_, help_text) in COMMANDS.items():
        commands.add_parser(name, help=help_text, add_help=False)  # main() hands these their own options
    return parser


def run_command(name: str, options: list[str]) -> int:
    """Import the command's module, parse its own options and run it."""
    module_name, add_name, run_name, help_text = COMMANDS[name]
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=f"feedback-lab {name}", description=help_text)
    getattr(module, add_name)(parser)
    return getattr(module, run_name)(parser.parse_args(options))


ORIGIN_VARIABLE = "FEEDBACK_LAB_WEBSOCKET_ORIGIN"
"""The hosts (HOST[:PORT], comma-separated) allowed to open the app's websocket when no option names them."""


def websocket_origins(given: list[str] | None) -> list[str] | None:
    """The option's hosts, else the variable's, else None (serve's default: the address served and localhost).

    Never "*" unless asked for: a class server that took any origin would let any web page a
    learner visits open sessions on it.
    """
    if given:
        return given
    hosts = [h.strip() for h in os.environ.get(ORIGIN_VARIABLE, "").split(",") if h.strip()]
    return hosts or None


def serving_plan(args: argparse.Namespace, lan: str | None = None) -> tuple[str, list[str] | None, classroom.Classroom | None]:
    """(the address to listen on, the hosts allowed to open sessions or None for serve's default, the classroom of
    `--class` or None), from `serve`'s `args`; `lan` is this machine's network address, for `--class`."""
    given = websocket_origins(args.allow_websocket_origin)
    if not args.classroom:
        return args.address or "localhost", given, None
    the_class = classroom.plan(args.address, args.port, given, lan)
    return the_class.address, the_class.origins, the_class


def run_server(args: argparse.Namespace, options: list[str] = ()) -> int:
    """`serve`, given its parsed `args` and its command line `options` (which web processes started here inherit)."""
    try:
        server_limits = limits.from_environment(args)
        teacher = TeacherToken.from_environment(args.teacher_token)
        offer = offered.from_environment(args)
        notes = offered.check_offer(offer, server_limits.max_download_mb)
        processes, note = web_processes.web_processes_from(args.web_processes)
    except ValueError as error:
        print(f"feedback-lab serve: error: {error}", file=sys.stderr)
        return 2
    for note in [*notes, note] if note else notes:
        print(f"feedback-lab serve: note: {note}", file=sys.stderr)
    address, origins, the_class = serving_plan(args, classroom.lan_address() if args.classroom else None)
    learners_url = the_class.learners_url if the_class else os.environ.get(classroom.LEARNERS_URL_VARIABLE, "").strip() or None
    if learners_url:  # for the room view, here and in the web processes started here
        os.environ[classroom.LEARNERS_URL_VARIABLE] = learners_url
        install_learners_url(learners_url)
    offered.install(offer)
    # The cluster reads its slots when first imported, so the option reaches it through its variable.
    os.environ[limits.variable("max_runs_per_device")] = str(server_limits.max_runs_per_device)
    from app.jobs import cluster
    from app.serving.cores import share_cores

    share_cores()  # before the local cluster starts: its worker processes inherit OMP_NUM_THREADS
    jobs = cluster.Cluster(args.scheduler or os.environ.get(SCHEDULER_VARIABLE), server_limits.max_runs_per_device)
    try:
        jobs.start()
    except cluster.SchedulerUnreachable as error:
        print(f"feedback-lab serve: error: {error}", file=sys.stderr)
        return 2
    from app.jobs.runs import RUNS_DIR, RUNS_VARIABLE, start_lesson

    if args.new_lesson or args.classroom:
        start_lesson(RUNS_DIR)
        print("A new lesson began: the runs before it are set aside, and a Start trains afresh.", flush=True)
    print(f"Runs are kept in {RUNS_DIR.resolve()} (${RUNS_VARIABLE} moves them).", flush=True)
    lines = classroom.lines(the_class, teacher.link(the_class.teacher_base)) if the_class else None
    if processes > 1:  # the web processes started there begin no lesson of their own and print nothing
        children = [o for o in options if o not in ("--new-lesson", "--class")]
        return serve_behind_nginx(args, children, processes, jobs.client.scheduler.address, teacher,
                                  server_limits.websocket_max_bytes, address, origins, lines)
    from app.serving.server import serve  # panel loads only when the app is served

    cluster.install(jobs)
    if is_shipped(offer.models[0]) or is_folder(offer.models[0]):  # on this machine: loading downloads nothing
        from app.jobs.model_jobs import warm_up

        warm_up(offer.models[0], jobs)  # a class's first Start then finds the default model loaded
    # Web processes joined to one scheduler count their learners together on its board; a local cluster serves one process.
    the_room = Room(SchedulerBoard(jobs.client)) if jobs.address else Room()
    serve(port=args.port, address=address, websocket_origin=origins, show=args.show, server_limits=server_limits,
          admin=args.admin, teacher=teacher, the_room=the_room, lines=lines)
    return 0


def serve_behind_nginx(args: argparse.Namespace, options: list[str], processes: int, scheduler: str, teacher: TeacherToken,
                       max_body_bytes: int, address: str, origins: list[str] | None, lines: list[str] | None) -> int:
    """`processes` web processes joined to `scheduler` behind nginx on `address` and the port of `args`, opened to
    `origins` (None: serve's default); `lines` are printed once they serve (None: the address and the teacher's link)."""
    origins = origins or web_processes.default_origins(address, args.port)

    def announce() -> None:
        shown = [f"Feedback Lab serves from {processes} web processes behind nginx.", *lines] if lines else [
            f"Feedback Lab serves http://{origins[0]}/ from {processes} web processes behind nginx",
            f"The teacher's room view (keep this link to yourself): {teacher.link('http://' + origins[0])}"]
        print("\n".join(shown), flush=True)
        if args.show:
            import webbrowser

            webbrowser.open(f"http://{origins[0]}/")

    return web_processes.serve_behind_nginx(processes, options, address, args.port, scheduler, teacher.value, origins,
                                            max_body_bytes, announce)


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
    try:
        print(json.dumps(result) if args.json else module.render(result), flush=True)
    except BrokenPipeError:  # `| head` closed the pipe: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMANDS:
        return run_command(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "figures":
        return run_figure(args.name, args.options)
    return run_server(args, argv[argv.index("serve") + 1:])


if __name__ == "__main__":
    sys.exit(main())
