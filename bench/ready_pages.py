"""What the pages built ahead cost: the server's memory with and without them, and how soon they are ready.

    python -m bench.ready_pages [--ready-pages 5]

starts `python -m app.cli serve` twice on free localhost ports, once with `--ready-pages 0` and
once with `--ready-pages N` (app/serving/ready_pages.py), and for each waits from its first answer to
/healthz until it has been nearly idle for two seconds (bench.load_test.settled: the sessions built
ahead all built), then reads its resident memory. Printed: both servers' memory, the difference per
session built ahead, and the seconds each took to settle.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from app.pages import available_pages
from bench.load_test import SETTLED_WINDOW, resident_mb, settled
from bench.servers import start_server, stop_server


def idle_server(ready_pages: int) -> tuple[float, float]:
    """A fresh server's resident memory in MB once settled, and the seconds from its first answer until settled."""
    server = start_server("--ready-pages", str(ready_pages))
    try:
        started = time.monotonic()
        asyncio.run(settled(server, longest=120))
        return resident_mb(server.process.pid)["VmRSS"], time.monotonic() - started
    finally:
        stop_server(server)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ready-pages", type=int, default=5, help="sessions built ahead per page (default: 5, the server's)")
    args = parser.parse_args(argv)
    pages = sum(info.ready_ahead for info in available_pages())
    without, settle_without = idle_server(0)
    with_ready, settle_with = idle_server(args.ready_pages)
    built = args.ready_pages * pages
    print(f"server idle, resident memory: {without:.0f} MB with no page built ahead (settled {settle_without:.0f} s after "
          f"its first answer), {with_ready:.0f} MB with {args.ready_pages} of each of {pages} pages, {built} sessions "
          f"(settled after {settle_with:.0f} s, the last {SETTLED_WINDOW:.0f} s idle): {with_ready - without:.0f} MB, "
          f"{(with_ready - without) / max(built, 1):.1f} MB a session")


if __name__ == "__main__":
    main()
