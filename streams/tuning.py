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
    values = gc_thresholds(os.environ.get("CALLQA_GC_THRESHOLDS"))
    gc.collect()
    gc.freeze()
    gc.set_threshold(*values)


def gc_thresholds(text: str | None) -> tuple[int, int, int]:
    """CALLQA_GC_THRESHOLDS as the three thresholds (unset or empty: the scorer's own)."""
    if not text:
        return GC_THRESHOLDS
    parts = text.split(",")
    if len(parts) != 3 or not all(part.strip().isdecimal() for part in parts):
        raise ValueError(f"CALLQA_GC_THRESHOLDS must be three whole numbers, young,middle,old "
                         f"(700,10,10: CPython's defaults), got {text!r}")
    young, middle, old = (int(part) for part in parts)
    return young, middle, old
