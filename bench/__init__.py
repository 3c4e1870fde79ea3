"""Benchmarks, run by hand: `python -m bench.bench_NAME`."""
