"""Run every benchmark by hand: `python -m bench` (or `make bench`). Nothing here is a test."""

import importlib
import pkgutil

import bench

for module in sorted(m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_")):
    importlib.import_module(f"bench.{module}").main()
