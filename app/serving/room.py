"""The room: what a class predicted, which pages its learners are on, and where the teacher sends them.

Peer instruction in a room works by the tally: every learner votes, the teacher sees how the class
split before anyone reveals, the class discusses and votes again, then the answer. A class server
holds thirty separate sessions, so this module gathers them, for the teacher alone:

- **The teacher's token.** `feedback-lab serve` makes a random token at each start (or takes
  `--teacher-token` / FEEDBACK_LAB_TEACHER_TOKEN) and prints the room view's link with it; the
  view opens only for that token, compared in constant time (`TeacherToken.admits`). It never
  reaches the server's log (`hide_token_in_logs`).
- **Presence and votes.** Each learner's session is counted on its page from the moment its browser has
  loaded it until the tab closes (`Presence.enter`). Its votes on that page's cards, per round
  (`widgets.predict.Guide.tally`: only cards the page shows, only choices they offer, nothing
  once the learner has switched "Counted in the room" off), count from the moment they are cast
  and stay for the lesson (the life of the web process) after the tab closes or the class moves on:
  one vote per session, card and round, which a changed vote moves. Nothing else of a learner is
  kept: no name, no address, nothing written to disk.
- **The cards' state.** The teacher's room view can hold a card's reveal (learners vote, and their
  own Reveal waits), reveal its answer to every learner's card, and start a second round of votes
  (`Room.set_card`); every session's guide gets the room's state of each card (`Guide.room`).
- **Every web process.** Each process publishes its counts on a board every `SYNC_SECONDS` and
  reads every process's back: on the Dask scheduler the process's model jobs already use
  (`SchedulerBoard`, the scheduler's metadata), or in memory where there is none
  (`LocalBoard`). docs/room.md gives the measurements that chose the scheduler's metadata. A
  process that stops publishing (killed) drops out of the tally `STALE_SECONDS` later.
  The cards' state travels on the board as the pace does.
- **Pacing.** The teacher sends a link of the app (a page with its state); every learner's page
  shows it in a banner with one click to go there (`Room.follow_pace`); nobody is moved.
"""

from __future__ import annotations

import atexit
import hmac
import logging
import os
import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

LOG = logging.getLogger("feedback_lab")
ROUTE = "room"
"""The room view's path, /room (not a page of the navigation: the teacher's link opens it)."""
TOKEN_VARIABLE = "FEEDBACK_LAB_TEACHER_TOKEN"
"""Environment variable: the teacher's token (default: a new random one at each start)."""
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9_-]{16,128}")
"""A token given by hand: 16 to 128 characters of a URL's safe alphabet (letters, digits, - and _)."""
REFUSED = ("This is the teacher's room view, and it opens only with the teacher's link that feedback-lab serve printed "
           "when it started; a link from before the server's last start no longer works.")
"""The whole answer (HTTP 403) to a visit of the room view without the teacher's token, or with a wrong one."""
SYNC_SECONDS = 0.25
"""Seconds between a web process's looks at the board: its counts out, everyone's back (a tally trails an answer by
at most about two of these plus the delivery to the browser)."""
HEARTBEAT_SECONDS = 1.0
"""A process whose counts have not changed publishes them again this often, to show it is alive."""
STALE_SECONDS = 5.0
"""A process whose board entry has not changed for this long (as this process's clock sees it) has stopped, and its
learners are no longer counted."""
BOARD_KEY = "feedback-lab-room"
"""The scheduler's metadata key under which the room's board lives."""
MAX_LINK_CHARS = 4000
"""Longest link the teacher may send the class (the pages' own limit on a query value)."""


# ----------------------------------------------------------------------------- the teacher's token


class TeacherToken:
    """The secret of the teacher's link."""

    def __init__(self, token: str | None = None):
        self.value = token or secrets.token_urlsafe(24)

    @classmethod
    def from_environment(cls, given: str | None = None) -> TeacherToken:
        """The option's token, else FEEDBACK_LAB_TEACHER_TOKEN's, else a new random one; ValueError with one sentence
        for a token of the wrong form."""
        text = given if given is not None else os.environ.get(TOKEN_VARIABLE, "").strip() or None
        if text is not None and not TOKEN_PATTERN.fullmatch(text):
            raise ValueError(f"The teacher's token must be 16 to 128 letters, digits, '-' or '_' (from --teacher-token or "
                             f"{TOKEN_VARIABLE}); got one of {len(text)} characters that is not.")
        return cls(text)

    def admits(self, given: object) -> bool:
        """Whether `given` (a link's token, or None) is the teacher's: compared in constant time."""
        if not isinstance(given, str):
            return False
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.value.encode())

    def link(self, base: str) -> str:
        """The teacher's link to the room view on the server at `base` (http://HOST:PORT)."""
        return f"{base.rstrip('/')}/{ROUTE}?token={self.value}"


TOKEN = TeacherToken()
"""This process's teacher token (`install_token` replaces it with the one the server was given)."""


def install_token(token: TeacherToken) -> None:
    global TOKEN
    TOKEN = token
    hide_token_in_logs(token.value)


LEARNERS_URL: str | None = None
"""The URL learners type to reach this server, as the server was told it (`serve --class` works it out), which the room
view shows with its QR code; None where the server was not told it. Never taken from a browser's request."""


def install_learners_url(url: str | None) -> None:
    global LEARNERS_URL
    LEARNERS_URL = url or None


def learners_url() -> str | None:
    return LEARNERS_URL


_HIDDEN: set[str] = set()


def hide_token_in_logs(secret: str) -> None:
    """Replace `secret` by "[token]" in every log record this process makes from now on, whatever logs it.

    Tornado writes each request's URL (query included) to its access log, and its warnings and
    errors name the request too; Bokeh, Panel and Dask have their own loggers. A record factory sees
    every record of every logger as it is made, so no handler or logger added later escapes it.
    """
    if not _HIDDEN:
        make = logging.getLogRecordFactory()

        def redacting(*args, **kwargs) -> logging.LogRecord:
            record = make(*args, **kwargs)
            message = record.getMessage()
            if any(s in message for s in _HIDDEN):
                for s in _HIDDEN:
                    message = message.replace(s, "[token]")
                record.msg, record.args = message, None
            return record

        logging.setLogRecordFactory(redacting)
    _HIDDEN.add(secret)


# ----------------------------------------------------------------------------- what the room holds


ROUNDS = ("1", "2")
"""A card's rounds of votes: the first, and the second after the class has discussed."""


def add_votes(votes: dict[str, dict[str, dict[str, int]]], key: str, round_: str, choice: str, n: int) -> None:
    """Add `n` votes for `choice` of card `key` in round `round_` to `votes` (key -> round -> choice -> n)."""
    rounds = votes.setdefault(key, {})
    rounds.setdefault(round_, {})[choice] = rounds.get(round_, {}).get(choice, 0) + n


@dataclass(frozen=True)
class Counts:
    """A room's counts: learners on each page, and the votes on each card, per round."""

    pages: dict[str, int] = field(default_factory=dict)
    """Route -> learners whose tab shows that page now."""
    votes: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    """Card key -> round ("1", "2") -> choice -> learners who voted for it (and count in the room), this lesson."""

    def plus(self, other: Counts) -> Counts:
        pages = dict(self.pages)
        for route, n in other.pages.items():
            pages[route] = pages.get(route, 0) + n
        votes: dict[str, dict[str, dict[str, int]]] = {}
        for counts in (self, other):
            for key, rounds in counts.votes.items():
                for round_, choices in rounds.items():
                    for choice, n in choices.items():
                        add_votes(votes, key, round_, choice, n)
        return Counts(pages, votes)

    def as_dict(self) -> dict:
        return {"pages": self.pages, "votes": self.votes}

    @classmethod
    def read(cls, entry: object) -> Counts:
        """Counts from a board entry; anything of the wrong shape is left out."""
        if not isinstance(entry, dict):
            return cls()
        pages = entry.get("pages") if isinstance(entry.get("pages"), dict) else {}
        votes: dict[str, dict[str, dict[str, int]]] = {}
        given = entry.get("votes") if isinstance(entry.get("votes"), dict) else {}
        for key, rounds in given.items():
            for round_, choices in (rounds.items() if isinstance(rounds, dict) else ()):
                for choice, n in (choices.items() if isinstance(choices, dict) and str(round_) in ROUNDS else ()):
                    if isinstance(n, int) and n > 0:
                        add_votes(votes, str(key), str(round_), str(choice), n)
        return cls({str(k): v for k, v in pages.items() if isinstance(v, int) and v > 0}, votes)

    @property
    def learners(self) -> int:
        return sum(self.pages.values())


@dataclass(frozen=True)
class Pace:
    """Where the teacher sends the class: a link of the app, and what it is called."""

    link: str
    """A path of the app with its query, e.g. "/bandit?b=0.3" (never another site)."""
    title: str
    """The page's title, for the banner."""
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    """Tells one sending from the next, so sending the same link again shows the banner again."""


def card_state(entry: object) -> dict | None:
    """The room's state of a card from a board's entry, None if it is not one: {"round": 1 or 2, "held": the teacher
    holds its reveal, "reveal": an id of the teacher's latest reveal of it ('' for none; each reveal has a new one)}."""
    if not isinstance(entry, dict):
        return None
    round_, held, reveal = entry.get("round"), entry.get("held"), entry.get("reveal")
    if round_ not in (1, 2) or not isinstance(held, bool) or not isinstance(reveal, str) or len(reveal) > 64:
        return None
    return {"round": round_, "held": held, "reveal": reveal}


def read_cards(entry: object) -> dict[str, dict]:
    """The cards' states of a board's entry (card key -> card_state), leaving out any of the wrong shape."""
    if not isinstance(entry, dict):
        return {}
    states = {str(key): card_state(state) for key, state in entry.items()}
    return {key: state for key, state in states.items() if state is not None}


def pace_for(text: str, titles: dict[str, str]) -> Pace:
    """The Pace of a link the teacher pasted (a whole address of this app, or its path), checked against the app's
    pages (`titles`: route -> title, "" for the index); ValueError with one sentence otherwise. Only the path and
    query are kept: the learners reach the server by their own address."""
    text = text.strip()
    if not text:
        raise ValueError("Paste a link of this app (from your own tab's address bar) to send the class there.")
    if len(text) > MAX_LINK_CHARS:
        raise ValueError(f"That link is longer than {MAX_LINK_CHARS:,} characters, more than any page takes.")
    parts = urlsplit(text if "//" in text or text.startswith("/") else "/" + text)
    route = parts.path.strip("/")
    if route not in titles:
        raise ValueError(f"“{parts.path or '/'}” is not a page of this app; send a link of one of its pages.")
    query = "&".join(p for p in parts.query.split("&") if p and not p.startswith("token="))
    return Pace(f"/{route}" + (f"?{query}" if query else ""), titles[route])


# ----------------------------------------------------------------------------- this process's learners


def always_open() -> bool:
    return True


class Presence:
    """The learners of this web process: each session's page, and the votes its sessions cast this lesson."""

    def __init__(self):
        self._lock = threading.Lock()
        self._sessions: dict[str, tuple[str, Callable[[], bool]]] = {}
        self._votes: dict[str, dict[str, dict[str, str]]] = {}
        """Session id -> card key -> round -> its vote; kept after the session has gone."""

    def enter(self, session_id: str, route: str, guide, is_open: Callable[[], bool] = always_open) -> Callable[[], None]:
        """Count session `session_id` on `route` while `is_open()` (its tab holds its websocket) and until the returned
        function is called (the session is gone), and its votes (`guide.tally()`, a widgets.predict.Guide's),
        following their changes; the votes stay counted once it has gone. A closed tab's session lives on in the
        server for up to twice the unused-session lifetime; `is_open` takes it off its page at once."""

        def update(*_events) -> None:
            with self._lock:
                if session_id in self._sessions:
                    self._votes[session_id] = guide.tally()

        with self._lock:
            self._sessions[session_id] = (route, is_open)
            self._votes[session_id] = guide.tally()
        watcher = guide.param.watch(update, ["votes", "counted", "met"])

        def leave() -> None:
            guide.param.unwatch(watcher)
            with self._lock:
                self._sessions.pop(session_id, None)

        return leave

    def counts(self) -> Counts:
        with self._lock:
            sessions = list(self._sessions.values())
            tallies = list(self._votes.values())
        pages: dict[str, int] = {}
        for route, is_open in sessions:
            if is_open():
                pages[route] = pages.get(route, 0) + 1
        votes: dict[str, dict[str, dict[str, int]]] = {}
        for tally in tallies:
            for key, rounds in tally.items():
                for round_, choice in rounds.items():
                    add_votes(votes, key, round_, choice, 1)
        return Counts(pages, votes)


# ----------------------------------------------------------------------------- the board every process shares


class LocalBoard:
    """The board of a server with no Dask scheduler (one process): a dictionary."""

    def __init__(self):
        self._entries: dict[str, object] = {}
        self._pace: object = None
        self._cards: dict[str, object] = {}

    def publish(self, process: str, entry: dict | None) -> None:
        self._entries[process] = entry

    def read(self, everyone: bool) -> tuple[dict[str, object], object, object]:
        return (dict(self._entries) if everyone else {}), self._pace, dict(self._cards)

    def send(self, pace: dict | None) -> None:
        self._pace = pace

    def set_card(self, key: str, state: dict) -> None:
        self._cards[key] = state


class SchedulerBoard:
    """The board in the Dask scheduler's metadata (`Client.set_metadata` / `get_metadata`), which every web process
    joined to the scheduler reads: BOARD_KEY -> {"processes": {process id: entry}, "pace": pace, "cards": {key: state}}."""

    def __init__(self, client):
        self.client = client

    def publish(self, process: str, entry: dict | None) -> None:
        self.client.set_metadata([BOARD_KEY, "processes", process], entry)

    def read(self, everyone: bool) -> tuple[dict[str, object], object, object]:
        if everyone:
            board = self.client.get_metadata([BOARD_KEY], default=None)
            board = board if isinstance(board, dict) else {}
            processes = board.get("processes")
            return (processes if isinstance(processes, dict) else {}), board.get("pace"), board.get("cards")
        return ({}, self.client.get_metadata([BOARD_KEY, "pace"], default=None),
                self.client.get_metadata([BOARD_KEY, "cards"], default=None))

    def send(self, pace: dict | None) -> None:
        self.client.set_metadata([BOARD_KEY, "pace"], pace)

    def set_card(self, key: str, state: dict) -> None:
        self.client.set_metadata([BOARD_KEY, "cards", key], state)


def read_pace(entry: object) -> Pace | None:
    """The Pace of a board's entry, None if there is none or it is not one."""
    if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in ("link", "title", "id")):
        return None
    if not entry["link"].startswith("/") or entry["link"].startswith("//"):
        return None  # only a path of this app is ever shown as a link
    return Pace(entry["link"], entry["title"], entry["id"])


# ----------------------------------------------------------------------------- the room, in one web process


class Room:
    """This web process's part of the room: its learners, the board it shares, the room views and banners it feeds.

    A thread (started with the first learner or room view) looks at the board every SYNC_SECONDS:
    it writes this process's counts when they changed (or every HEARTBEAT_SECONDS), reads the
    pace and the cards' state, and, while a room view is open here, every process's counts; then it hands each room
    view the total when it changed, each learner's page a new pace, and each learner's guide and room view the
    cards' state when it changed. Callbacks go to each session's own thread (widgets.streaming.deliver).
    """

    def __init__(self, board=None, process: str | None = None):
        self.board = board if board is not None else LocalBoard()
        self.process = process or f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.presence = Presence()
        self.counts = Counts()
        """The whole room's counts, as last read."""
        self.pace: Pace | None = None
        self.cards: dict[str, dict] = {}
        """Card key -> the room's state of it (card_state), as last read or set here."""
        self._lock = threading.Lock()
        self._views: dict[int, Callable[[Counts], None]] = {}
        self._banners: dict[int, Callable[[Pace | None], None]] = {}
        self._card_followers: dict[int, Callable[[dict], None]] = {}
        self._setting: list[tuple[str, dict]] = []
        self._ids = iter(range(1 << 62))
        self._sending: list[dict | None] = []
        self._seen: dict[str, tuple[object, float]] = {}
        self._thread: threading.Thread | None = None
        self._published: tuple[Counts | None, float] = (None, 0.0)

    # --- what sessions ask of it

    def enter(self, session_id: str, route: str, guide, is_open: Callable[[], bool] = always_open) -> Callable[[], None]:
        """Count a learner's session (see Presence.enter), and keep its guide's `room` (the cards' state) up to date, on
        the session's thread; returns the function that takes it out. Call it from the session (its page's onload)."""
        from widgets.streaming import deliver, session_document

        self._start()
        doc = session_document()
        leave = self.presence.enter(session_id, route, guide, is_open)
        stop = self.follow_cards(lambda cards: deliver(doc, lambda: setattr(guide, "room", cards)))

        def out() -> None:
            stop()
            leave()

        return out

    def watch(self, on_counts: Callable[[Counts], None]) -> Callable[[], None]:
        """Call `on_counts(counts)` (from the room's thread) at once and whenever the room's counts change."""
        return self._subscribe(self._views, on_counts, self.counts)

    def follow_pace(self, on_pace: Callable[[Pace | None], None]) -> Callable[[], None]:
        """Call `on_pace(pace)` (from the room's thread) whenever the teacher sends the class somewhere (None: stops)."""
        return self._subscribe(self._banners, on_pace, None)

    def follow_cards(self, on_cards: Callable[[dict], None]) -> Callable[[], None]:
        """Call `on_cards(cards)` (card key -> card_state; from the room's thread) at once and whenever they change."""
        return self._subscribe(self._card_followers, on_cards, dict(self.cards))

    def set_card(self, key: str, round_: int | None = None, held: bool | None = None, reveal: bool = False) -> dict:
        """Change the room's state of card `key`: its round (1, or 2 for a second vote), whether the teacher holds its
        reveal, and, with `reveal`, reveal its answer to every learner's card now. Every process's learners see it
        within a look; returns the new state."""
        with self._lock:
            old = self.cards.get(key) or {"round": 1, "held": False, "reveal": ""}
            state = {"round": old["round"] if round_ is None else int(round_), "held": old["held"] if held is None else bool(held),
                     "reveal": uuid.uuid4().hex[:12] if reveal else ("" if round_ is not None and round_ != old["round"] else old["reveal"])}
            if card_state(state) is None:
                raise ValueError(f"A card's round is 1 or 2, not {round_!r}.")
            self.cards = {**self.cards, key: state}
            self._setting.append((key, state))
            followers = list(self._card_followers.values())
        for follower in followers:
            follower(dict(self.cards))
        return state

    def _subscribe(self, table: dict, callback, first) -> Callable[[], None]:
        self._start()
        with self._lock:
            key = next(self._ids)
            table[key] = callback
        if first is not None:
            callback(first)
        return lambda: self._unsubscribe(table, key)

    def _unsubscribe(self, table: dict, key: int) -> None:
        with self._lock:
            table.pop(key, None)

    def send(self, pace: Pace | None) -> None:
        """Send the class to `pace` (None: take the banner away); every process's learners see it within a look."""
        with self._lock:
            self._sending.append(None if pace is None else {"link": pace.link, "title": pace.title, "id": pace.id})

    # --- the thread

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="feedback-lab-room", daemon=True)
                self._thread.start()
                atexit.register(self._leave_board)

    def _run(self) -> None:
        while True:
            try:
                self.look()
            except Exception:  # the scheduler went away a moment: the next look tries again
                LOG.debug("The room's look at its board failed", exc_info=True)
            time.sleep(SYNC_SECONDS)

    def look(self) -> None:
        """One look at the board: publish, read, tell the room views and the banners what changed."""
        with self._lock:
            sending, self._sending = self._sending, []
            setting, self._setting = self._setting, []
            views, banners = list(self._views.values()), list(self._banners.values())
        for pace in sending:
            self.board.send(pace)
        for key, state in setting:
            self.board.set_card(key, state)
        mine = self.presence.counts()
        published, published_at = self._published
        if mine != published or time.monotonic() - published_at > HEARTBEAT_SECONDS:
            self._published = (mine, time.monotonic())
            self.board.publish(self.process, {"beat": time.time_ns(), **mine.as_dict()})
        processes, pace_entry, cards_entry = self.board.read(everyone=bool(views))
        total = mine
        for process, entry in self._alive(processes).items():
            total = total.plus(Counts.read(entry))
        pace = read_pace(pace_entry)
        if views and total != self.counts:
            for view in views:
                view(total)
        self.counts = total if views else mine
        if pace != self.pace:
            self.pace = pace
            for banner in banners:
                banner(pace)
        cards = read_cards(cards_entry)
        with self._lock:
            changed = cards != self.cards and not self._setting  # a state set since the read goes out at the next look
            if changed:
                self.cards = cards
            followers = list(self._card_followers.values())
        if changed:
            for follower in followers:
                follower(dict(cards))

    def _alive(self, processes: dict[str, object]) -> dict[str, object]:
        """The other processes' entries that changed within STALE_SECONDS, as this process's clock saw them."""
        now, alive = time.monotonic(), {}
        for process, entry in processes.items():
            if process == self.process or not isinstance(entry, dict):
                continue
            beat = entry.get("beat")
            seen = self._seen.get(process)
            if seen is None or seen[0] != beat:
                self._seen[process] = seen = (beat, now)
            if now - seen[1] < STALE_SECONDS:
                alive[process] = entry
        return alive

    def _leave_board(self) -> None:
        """As the process exits: take its learners off the board at once instead of STALE_SECONDS later."""
        try:
            self.board.publish(self.process, None)
        except Exception:
            LOG.debug("Taking this process off the room's board failed", exc_info=True)


ROOM = Room()
"""This web process's room (`install` replaces it with one on the cluster's board)."""


def install(room: Room) -> None:
    global ROOM
    ROOM = room


def current() -> Room:
    return ROOM
