"""`feedback-lab serve --class`: the server a classroom's learners reach, and what it prints for the teacher.

A class server must listen where the learners' machines can reach it (the machine's address on
the room's network, not localhost), let only the addresses it names open sessions, and tell the
teacher which address learners type: `plan` chooses them and `lines` writes them out.

- **The address learners type.** `lan_address` asks the system which of its addresses would carry
  a packet to a private address (a UDP socket's connect sends nothing), else takes the first
  non-loopback IPv4 address of an interface; a machine with only loopback has none, and the class
  is then served on localhost, which `plan` says in one sentence.
- **Where it listens.** Every address of the machine (0.0.0.0), so that the learners' address and
  the teacher's own tab at localhost both reach it; an `--address` given wins.
- **Who may open sessions.** Exactly the hosts printed: the learners' address and port, and
  localhost's for the teacher's tab (app/serving/origins.py refuses every other origin);
  `--allow-websocket-origin` given wins, and its first host is then the learners'.
- **What it prints.** The learners' URL, its QR code (for a projector or a phone's camera), and the
  teacher's link to the room view; never a link to 0.0.0.0, which no browser can open.
"""

from __future__ import annotations

import io
import ipaddress
import socket
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass

WILDCARDS = ("0.0.0.0", "::", "")
"""Addresses that mean "every address of this machine": a server listens there, but nobody can type them."""
LOOPBACKS = ("localhost", "127.0.0.1", "::1")
PROBE = "10.254.254.254"
"""A private address (no one's broadcast address) whose route tells which interface faces the room's network."""
LEARNERS_URL_VARIABLE = "FEEDBACK_LAB_LEARNERS_URL"
"""The learners' URL that the room view shows with its QR code; `serve --class` sets it for its web processes."""
NO_LAN = ("This machine has no network address but loopback, so the class is served on localhost only: "
          "learners on other machines cannot reach it.")


def probe_route(target: str = PROBE) -> str:
    """The local address a UDP packet to `target` would leave from (nothing is sent); OSError without a route."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect((target, 9))
        return sock.getsockname()[0]


def interface_addresses() -> list[str]:
    """The IPv4 addresses of this machine's interfaces, in the system's order."""
    import psutil  # a dependency of distributed

    return [a.address for addresses in psutil.net_if_addrs().values() for a in addresses if a.family == socket.AF_INET]


def reachable(address: str) -> bool:
    """Whether another machine could reach this IPv4 address: not loopback, link-local, unspecified or multicast."""
    try:
        ip = ipaddress.IPv4Address(address)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast)


def lan_address(probe: Callable[[], str] = probe_route, interfaces: Callable[[], Iterable[str]] = interface_addresses) -> str | None:
    """This machine's address on its network: the one that routes outward, else the first other non-loopback one,
    else None (only loopback)."""
    try:
        routed = probe()
    except OSError:
        routed = None
    if routed is not None and reachable(routed):
        return routed
    try:
        return next((a for a in interfaces() if reachable(a)), None)
    except OSError:
        return None


def host_port(host: str, port: int) -> str:
    """HOST:PORT as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def typed_host(address: str, port: int) -> str:
    """HOST:PORT that a browser can open for a server listening on `address`: for every address (0.0.0.0), this
    machine's network address, else localhost."""
    if address in WILDCARDS:
        return host_port(lan_address() or "localhost", port)
    return host_port(address, port)


@dataclass(frozen=True)
class Classroom:
    """Where a class server listens, the hosts it prints, and the hosts allowed to open its sessions."""

    address: str
    """The address it listens on."""
    learners: str
    """HOST:PORT that learners type."""
    teacher: str
    """HOST:PORT of the teacher's own tab (the room view's link)."""
    origins: list[str]
    """The hosts allowed to open sessions."""
    note: str = ""
    """One sentence for the teacher, or ""."""

    @property
    def learners_url(self) -> str:
        return f"http://{self.learners}/"

    @property
    def teacher_base(self) -> str:
        return f"http://{self.teacher}"


def plan(address: str | None, port: int, origins: list[str] | None, lan: str | None) -> Classroom:
    """The class server of `serve --class`, given the options' `address` and `origins` (None where not given), the
    port, and this machine's network address `lan` (None: loopback only)."""
    listen = address if address is not None else "0.0.0.0" if lan is not None else "localhost"
    note = NO_LAN if lan is None and not origins and (address is None or listen in WILDCARDS) else ""
    if origins:
        learners = origins[0]
    elif listen in WILDCARDS:
        learners = host_port(lan or "localhost", port)
    else:
        learners = host_port(listen, port)
    local = host_port("localhost", port)
    teacher_reaches_localhost = listen in WILDCARDS or listen in LOOPBACKS
    if origins:
        teacher = local if local in origins and teacher_reaches_localhost else learners
        allowed = list(origins)
    else:
        teacher = local if teacher_reaches_localhost else learners
        allowed = list(dict.fromkeys([learners, teacher]))
    return Classroom(listen, learners, teacher, allowed, note)


def qr_text(url: str) -> str:
    """`url`'s QR code drawn in the terminal's half-block characters (two rows of modules a line), or "" where the
    terminal's encoding cannot write them."""
    import segno

    out = io.StringIO()
    segno.make(url, error="m").terminal(out=out, compact=True)
    text = out.getvalue().rstrip("\n")
    try:
        text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return ""
    return text


def lines(classroom: Classroom, teacher_link: str, qr: bool = True) -> list[str]:
    """What `serve --class` prints on its standard output: the note, the learners' URL and its QR code, the teacher's link."""
    code = qr_text(classroom.learners_url) if qr else ""
    return [
        *([classroom.note] if classroom.note else []),
        f"Learners open {classroom.learners_url}" + (" (or scan this code):" if code else ""),
        *([code] if code else []),
        f"The teacher's room view (keep this link to yourself): {teacher_link}",
    ]


def serving_lines(origins: list[str], teacher_link: str) -> list[str]:
    """What a plain `serve` prints: the address it serves (the first host allowed, never 0.0.0.0), the teacher's link."""
    return [f"Feedback Lab serves http://{origins[0]}/", f"The teacher's room view (keep this link to yourself): {teacher_link}"]
