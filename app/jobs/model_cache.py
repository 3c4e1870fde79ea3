"""What the sessions of one process share: the loaded models, and the newest results they computed.

`ModelCache`: each model is loaded from disk (or downloaded) once per process, by whichever
job asks first; the others wait for that load instead of starting their own. Runs train
copies. In a Dask worker (app/jobs/cluster.py) it holds the models of the jobs that worker runs;
in the web process it keeps the newest few results that sessions computed (pair sets, trained
reward models) under the settings that made them, so that a second learner asking for the
same computation gets it at once instead of queueing for the device again.

Thread-safe (a worker runs jobs on threads, a web process serves pages on several). It does
not import torch: the cache is handed its loader, so the light pages never pay for torch.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

RESULTS_KEPT = 8
"""Computed results (pair sets, trained reward models) the model cache keeps, the newest."""


class ModelCache:
    """Objects loaded once per key and kept: `get(key, load)` calls `load()` only for the first caller.

    Concurrent callers of one key wait for the first load rather than loading again; callers
    of other keys do not wait. A load that raises is not kept, so the next caller tries again
    (a model that was missing may have been copied in since). Results a session computed are
    handed in with `keep(key, value)` and read with `result(key)`; the newest `results` stay.
    """

    def __init__(self, results: int = RESULTS_KEPT):
        self._lock = threading.Lock()
        self._items: dict[Hashable, object] = {}
        self._loading: dict[Hashable, threading.Lock] = {}
        self._results: OrderedDict[Hashable, object] = OrderedDict()
        self.results = results

    def keep(self, key: Hashable, value: object) -> None:
        """Keep a computed result under `key` (the settings that made it), dropping the oldest beyond `results`."""
        with self._lock:
            self._results[key] = value
            self._results.move_to_end(key)
            while len(self._results) > self.results:
                self._results.popitem(last=False)

    def result(self, key: Hashable):
        """The result kept under `key`, or None."""
        with self._lock:
            return self._results.get(key)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def get(self, key: Hashable, load: Callable[[], object]):
        with self._lock:
            if key in self._items:
                return self._items[key]
            key_lock = self._loading.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._items:
                    return self._items[key]
            value = load()
            with self._lock:
                self._items[key] = value
                self._loading.pop(key, None)
            return value

    def model(self, name: str, device, source: str | None = None):
        """(model, tokenizer) of causal LM `name` on `device`, loaded once, from `source` if given (a downloaded folder)."""
        from engines.lm.models import load_causal_lm

        return self.get(("model", name, str(device)), lambda: load_causal_lm(source or name, device))

    def reward(self, name: str, device, source: str | None = None):
        """The reward `name` on `device`, loaded once, from `source` if given (a downloaded classifier's folder)."""
        from engines.lm.rewards import load_reward

        return self.get(("reward", name, str(device)), lambda: load_reward(source or name, device))


MODELS = ModelCache()
"""The models (and reward classifiers) this process shares, by (kind, name, device), and the newest results."""
