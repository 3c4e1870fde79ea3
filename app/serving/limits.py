"""The limits that protect a shared server, from `feedback-lab serve` options and environment variables.

Each field of `ServerLimits` is one option of `feedback-lab serve` (`max_sessions` is
`--max-sessions`) and one environment variable (`FEEDBACK_LAB_MAX_SESSIONS`); an option
given on the command line wins over the variable, the variable over the default. The one
exception in naming is `max_runs_per_device`, whose variable is the run queue's own
FEEDBACK_LAB_RUNS_PER_DEVICE (app/jobs/cluster.py), so that both read the same setting.

`serve()` installs the limits in force (`install`); pages read them with `current()`.
They are set once, at start-up, and only read afterwards.

A language-model run's controls are bounded by them (`LIMITED`): a link asking for more is set
to the limit (`clamp_query`) and a run asking for more is refused (`limit_problem`), each with one
sentence. Which models a run may load, and the download bound, are app/serving/offered.py's.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import threading
import time
from dataclasses import dataclass

import param

from app.jobs.cluster import RUNS_PER_DEVICE, SLOTS_VARIABLE
from engines.settings import field_docs, require

ENV_PREFIX = "FEEDBACK_LAB_"


MAY_BE_ZERO = {"ready_pages"}
"""The whole-number limits that 0 switches off; the others are at least 1."""


@dataclass(frozen=True)
class ServerLimits:
    """What one app process allows; every limit reached is answered with one sentence."""

    max_runs_per_device: int = RUNS_PER_DEVICE
    """Language-model runs training at once on one device, the others wait in the queue (>= 1)."""
    max_sessions: int = 60
    """Browser sessions open at once; a visitor beyond them gets a one-sentence page (>= 1)."""
    compute_seconds: float = 30.0
    """Longest time, in seconds, one analytic job of a session may compute (> 0)."""
    max_steps: int = 2000
    """Most training steps one language-model run may ask for (>= 1)."""
    max_prompts: int = 64
    """Most prompts per training step of a run (>= 1)."""
    max_replies: int = 16
    """Most replies per prompt of a run (>= 1)."""
    max_reply_tokens: int = 64
    """Longest reply of a run, in tokens (>= 1)."""
    max_prompt_chars: int = 2000
    """Longest prompt a learner may type, in characters (>= 1)."""
    unused_session_seconds: float = 15.0
    """Seconds a session whose page never connected is kept before it is dropped (> 0)."""
    websocket_max_bytes: int = 20_000_000
    """Largest websocket message the server accepts, in bytes (>= 65536)."""
    collect_seconds: float = 120.0
    """Seconds between the server's full garbage collections: a closed page's memory is freed within them (> 0)."""
    ready_pages: int = 5
    """Sessions of each analytic page kept built before they are asked for, for a lesson's opening (>= 0; 0: none)."""
    max_download_mb: int = 2000
    """Largest download of an offered hub model or classifier, in MB (>= 1; GPT-2 small is 551 MB, medium 1,524 MB)."""

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.type == "int":
                least = 0 if field.name in MAY_BE_ZERO else 1
                require(isinstance(value, int) and not isinstance(value, bool) and value >= least,
                        f"{option(field.name)} must be a whole number >= {least}, got {value!r}.")
            else:
                require(isinstance(value, (int, float)) and 0 < value < float("inf"), f"{option(field.name)} must be a positive number of seconds, got {value!r}.")
        require(self.websocket_max_bytes >= 65536, f"--websocket-max-bytes must be at least 65536, got {self.websocket_max_bytes}.")


def option(name: str) -> str:
    """The command-line option of a field: max_sessions -> --max-sessions."""
    return "--" + name.replace("_", "-")


def variable(name: str) -> str:
    """The environment variable of a field: max_sessions -> FEEDBACK_LAB_MAX_SESSIONS."""
    return SLOTS_VARIABLE if name == "max_runs_per_device" else ENV_PREFIX + name.upper()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One option per limit, defaulting to None so that an unset option leaves the variable or default."""
    group = parser.add_argument_group("limits (each also an environment variable; an option given wins)")
    docs = field_docs(ServerLimits)
    for field in dataclasses.fields(ServerLimits):
        kind = int if field.type == "int" else float
        group.add_argument(
            option(field.name), type=kind, default=None, metavar="N" if kind is int else "S",
            help=f"{docs[field.name]} (default: {field.default}; ${variable(field.name)})",
        )


def from_environment(args: argparse.Namespace | None = None, environ: dict[str, str] | None = None) -> ServerLimits:
    """The limits of the options given in `args`, else of the environment, else the defaults.

    Raises ValueError with one sentence for a value that is not a number or out of range.
    """
    environ = os.environ if environ is None else environ
    values = {}
    for field in dataclasses.fields(ServerLimits):
        given = getattr(args, field.name, None) if args is not None else None
        if given is None and environ.get(variable(field.name), "").strip():
            text = environ[variable(field.name)].strip()
            try:
                given = int(text) if field.type == "int" else float(text)
            except ValueError:
                raise ValueError(f"{variable(field.name)} must be a number, got {text!r}.") from None
        if given is not None:
            values[field.name] = given
    return ServerLimits(**values)


_installed: ServerLimits | None = None


def install(limits: ServerLimits) -> None:
    """Make `limits` the ones in force in this process (`serve()` does, once, at start-up)."""
    global _installed
    _installed = limits


def current() -> ServerLimits:
    """The limits in force: those `serve()` installed, else the environment's (tests, `panel serve`)."""
    return _installed if _installed is not None else from_environment()


class _Visit:
    """One admitted session: Bokeh's context of it (None outside a server) and whether its tab was seen connected."""

    def __init__(self, context):
        self.context, self.connected = context, False
        self.entered = time.monotonic()

    def note_connection(self) -> None:
        """Record a websocket seen up: a tab that closes before its page says it is drawn is gone all the same."""
        session = getattr(self.context, "session", None)
        if session is not None and session.connection_count > 0:
            self.connected = True

    def is_open(self, grace_ms: float) -> bool:
        """Open while its page is built, while a tab holds its websocket and, until its first websocket, for `grace_ms`."""
        session = getattr(self.context, "session", None)
        if session is None:
            return True  # being built (or no server: counted until it leaves)
        # Timed from the admission, not from the session's creation: a session built ahead (app/serving/ready_pages.py) was
        # created before its visitor came.
        return session.connection_count > 0 or not self.connected and 1000 * (time.monotonic() - self.entered) < grace_ms


class SessionCount:
    """Which sessions are open, thread-safe; `enter` refuses one beyond the limit.

    A session is open from the build of its page until its tab closes: while a tab holds its
    websocket, and before the first one (the page sent, its websocket not yet connected) for the
    unused-session lifetime from its admission. A closed tab frees its place at once, not when the server drops its
    session, up to twice that lifetime later: a class changing pages would otherwise fill the
    server with tabs already closed.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._visits: dict[int, _Visit] = {}

    def enter(self, limit: int, context=None, grace_s: float = ServerLimits.unused_session_seconds) -> object | None:
        """Admit a new session (Bokeh's session context, None outside a server) and return its ticket for `leave`
        and `connected`, or return None when `limit` are open already."""
        with self._lock:
            if self._count(1000 * grace_s) >= limit:
                return None
            visit = _Visit(context)
            self._visits[id(visit)] = visit
            return visit

    def connected(self, ticket: object) -> None:
        """The session's tab has drawn its page (its websocket is up): from now on its closing frees its place."""
        ticket.connected = True

    def leave(self, ticket: object) -> None:
        """The session is gone (destroyed, or its build failed)."""
        with self._lock:
            self._visits.pop(id(ticket), None)

    def _count(self, grace_ms: float) -> int:
        for visit in self._visits.values():
            visit.note_connection()
        return sum(visit.is_open(grace_ms) for visit in self._visits.values())

    def open(self, grace_s: float = ServerLimits.unused_session_seconds) -> int:
        """How many sessions are open now."""
        with self._lock:
            return self._count(1000 * grace_s)


SESSIONS = SessionCount()
"""The process's open sessions: with the run queue and the model cache, the only state sessions share."""


# ----------------------------------------------------------------------------- a language-model run's controls

LIMITED = {
    "steps": ("max_steps", "steps per run"),
    "eval_every": ("max_steps", "steps between evaluations"),
    "prompts": ("max_prompts", "prompts per step"),
    "eval_prompts": ("max_prompts", "held-out prompts"),
    "replies": ("max_replies", "replies per prompt"),
    "eval_replies": ("max_replies", "replies per held-out prompt"),
    "T": ("max_reply_tokens", "tokens per reply"),
}
"""The controls the server's limits bound: control -> (ServerLimits field, what it counts)."""


def bound_controls(page: param.Parameterized, limits: ServerLimits) -> dict[str, int]:
    """Bound each limited control of `page` by the server's limit (within what the engine takes), a value above it
    set to it; returns the highest value of each."""
    highest = {name: getattr(limits, field) for name, (field, _) in LIMITED.items()}
    highest["eval_prompts"] = min(highest["eval_prompts"], page.param.eval_prompts.bounds[1])
    for name, n in highest.items():
        low = page.param[name].bounds[0]
        page.param[name].bounds = (low, max(low, n))  # replies >= 2 even where the limit is 1: a run is refused then
        if getattr(page, name) > n:
            setattr(page, name, max(low, n))
    return highest


def clamp_query(query: dict[str, str], highest: dict[str, int]) -> tuple[dict[str, str], list[str]]:
    """A link's values with every number above the server's limit set to the limit, and one sentence for each."""
    query, notices = dict(query), []
    for name, n in highest.items():
        try:
            value = float(query[name])
        except (KeyError, ValueError):
            continue  # absent, or not a number: sync_url says so
        if math.isfinite(value) and value > n:
            query[name] = str(n)
            notices.append(limit_sentence(name, n))
    return query, notices


def limit_sentence(name: str, n: int) -> str:
    """What a link or a box asking for more than the limit `n` of control `name` is told."""
    return f"This server allows at most {n} {LIMITED[name][1]}; the run was set to {n}."


def limit_problem(settings, highest: dict[str, int]) -> str:
    """One sentence if `settings` (an LMSettings) ask for more than the server allows ('' otherwise)."""
    for name, n in highest.items():
        value = getattr(settings, name)
        if value > n:
            return f"This server allows at most {n} {LIMITED[name][1]}; this run asks for {value}, so it was not started."
    return ""
