"""One bounded, thread-safe cache per process of deterministic engine results, shared by every session.

    from app.serving.results_cache import RESULTS
    mc = RESULTS.get(monte_carlo, means, sd, theta, baselines, samples, seed)

An engine call whose result is fixed by its arguments (frozen settings, tuples of numbers, a
seed) is computed once per process and handed to every learner who asks for the same values:
thirty learners who open a page on its defaults, or drag a slider through the same steps,
cost one engine call each time instead of thirty. A random experiment keeps its seed in the
key, so a learner gets the very numbers their own call would have computed.

The cache holds at most `MAX_BYTES` of arrays (each result's numpy arrays counted by their
`nbytes`, anything else at a nominal `OTHER_BYTES`) and drops the least recently used
results beyond that; a single result larger than the bound is computed and not kept. Callers
asking for a key that another thread is computing wait for that result instead of computing
it again. Results are shared, so their arrays are made read-only: a page that wants to change
one must copy it.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import numpy as np

MAX_BYTES = 256 * 2**20
"""The bound on the arrays the cache holds, 256 MiB: about thirty of the bandit page's largest entry
(200,000 one-sample draws, 8 MB) beside hundreds of the small results."""
OTHER_BYTES = 256
"""What a result's non-array parts count for (numbers, strings, the containers)."""


def parts(value: Any) -> Iterator[Any]:
    """`value` and everything inside it, depth first: the fields of dataclasses, the items of tuples and lists, the values of dicts."""
    yield value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        inner = [getattr(value, f.name) for f in dataclasses.fields(value)]
    elif isinstance(value, (tuple, list)):
        inner = value
    elif isinstance(value, dict):
        inner = value.values()
    else:
        return
    for v in inner:
        yield from parts(v)


def result_bytes(value: Any) -> int:
    """The bytes of the numpy arrays inside `value`, plus `OTHER_BYTES` for each other part (containers included)."""
    return sum(v.nbytes if isinstance(v, np.ndarray) else OTHER_BYTES for v in parts(value))


def freeze(value: Any) -> None:
    """Make the numpy arrays inside `value` read-only, so that no session can change what others share."""
    for v in parts(value):
        if isinstance(v, np.ndarray):
            v.flags.writeable = False


def _hashable(value: Any) -> Any:
    """`value` as a key part: arrays and lists become tuples; everything else must hash as it is."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value


class ResultsCache:
    """Results of deterministic engine calls by (function, arguments), least recently used dropped beyond `max_bytes`."""

    def __init__(self, max_bytes: int = MAX_BYTES):
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._results: OrderedDict[tuple, tuple[Any, int]] = OrderedDict()
        self._pending: dict[tuple, Future] = {}
        self.bytes = 0
        self.hits = self.misses = 0

    def get(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`function(*args, **kwargs)`, computed once per process for these arguments while it stays cached."""
        key = (function.__module__, function.__qualname__, _hashable(args), _hashable(tuple(sorted(kwargs.items()))))
        with self._lock:
            if key in self._results:
                self._results.move_to_end(key)
                self.hits += 1
                return self._results[key][0]
            pending = self._pending.get(key)
            if pending is None:
                self.misses += 1
                self._pending[key] = mine = Future()
        if pending is not None:
            return pending.result()  # another thread computes it now; its error, if any, is raised here too
        try:
            value = function(*args, **kwargs)
            freeze(value)
        except BaseException as error:
            with self._lock:
                del self._pending[key]
            mine.set_exception(error)
            raise
        size = result_bytes(value)
        with self._lock:
            del self._pending[key]
            if size <= self.max_bytes:
                self._results[key] = (value, size)
                self.bytes += size
                while self.bytes > self.max_bytes:
                    _, (_, dropped) = self._results.popitem(last=False)
                    self.bytes -= dropped
        mine.set_result(value)
        return value

    def clear(self) -> None:
        """Drop every result (benchmarks, to time a value nobody has asked for)."""
        with self._lock:
            self._results.clear()
            self.bytes = 0

    def __len__(self) -> int:
        return len(self._results)


RESULTS = ResultsCache()
"""The process's one cache, shared by every session's pages."""
