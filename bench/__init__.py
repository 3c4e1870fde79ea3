"""Benchmarks, run by hand: `python -m bench.bench_NAME`; and their harness, which the tests use too (`servers.py`:
Chromium and a local app server). The tests import from here, never the other way round (tests/test_layers.py)."""
