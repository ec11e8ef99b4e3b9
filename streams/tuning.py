"""Process settings for a long-running scorer (the worker) and for `callqa replay`.

The cyclic garbage collector: a scorer allocates several small containers per event and keeps a
call's state for minutes, so with CPython's default thresholds (a young collection every 700
allocations) collections take a quarter of the time and every full collection walks all of the calls
held. Call state holds no reference cycles to speak of, so collections are made rarer; what exists
at start (modules, the app) is frozen out of them altogether.
"""

from __future__ import annotations

import gc
import os

# (young, middle, old) thresholds; CALLQA_GC_THRESHOLDS="700,10,10" restores CPython's defaults.
GC_THRESHOLDS = (50_000, 20, 100)


def tune_gc() -> None:
    thresholds = os.environ.get("CALLQA_GC_THRESHOLDS")
    values = tuple(int(part) for part in thresholds.split(",")) if thresholds else GC_THRESHOLDS
    gc.collect()
    gc.freeze()
    gc.set_threshold(*values)
