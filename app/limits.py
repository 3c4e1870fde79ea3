"""The limits that protect a shared server, from `feedback-lab serve` options and environment variables.

Each field of `ServerLimits` is one option of `feedback-lab serve` (`max_sessions` is
`--max-sessions`) and one environment variable (`FEEDBACK_LAB_MAX_SESSIONS`); an option
given on the command line wins over the variable, the variable over the default. The one
exception in naming is `max_runs_per_device`, whose variable is the run queue's own
FEEDBACK_LAB_RUNS_PER_DEVICE (app/cluster.py), so that both read the same setting.

`serve()` installs the limits in force (`install`); pages read them with `current()`.
They are set once, at start-up, and only read afterwards.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import threading
from dataclasses import dataclass

from app.cluster import SLOTS_VARIABLE
from engines.settings import field_docs, require

ENV_PREFIX = "FEEDBACK_LAB_"


@dataclass(frozen=True)
class ServerLimits:
    """What one app process allows; every limit reached is answered with one sentence."""

    max_runs_per_device: int = 1
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

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.type == "int":
                require(isinstance(value, int) and not isinstance(value, bool) and value >= 1, f"{option(field.name)} must be a whole number >= 1, got {value!r}.")
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


class SessionCount:
    """How many sessions are open, thread-safe; `enter` refuses one beyond the limit."""

    def __init__(self):
        self._lock = threading.Lock()
        self._open = 0

    def enter(self, limit: int) -> bool:
        """Count a new session and return True, or return False when `limit` are open already."""
        with self._lock:
            if self._open >= limit:
                return False
            self._open += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self._open = max(self._open - 1, 0)

    @property
    def open(self) -> int:
        with self._lock:
            return self._open


SESSIONS = SessionCount()
"""The process's open sessions: with the run queue and the model cache, the only state sessions share."""
