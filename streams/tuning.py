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
        raise ValueError(
            f"CALLQA_GC_THRESHOLDS must be three whole numbers, young,middle,old "
            f"(700,10,10: CPython's defaults), got {text!r}"
        )
    young, middle, old = (int(part) for part in parts)
    return young, middle, old


# RocksDB's settings for callqa's tables (the call journal, the alert engine), one database per table
# partition. Faust's defaults are sized for large tables: 64 MiB write buffers, three of them, and a
# 2 GiB block cache, for each database: gigabytes at their limits for a worker's five, where the
# journal holds a second of each partition's events and the alert engine a few keys. What fills the
# buffers is rewrites of those few keys (in a 33-minute soak the write-ahead log had reached 24 MB,
# not yet flushed once). Smaller buffers flush sooner; at most 5 x (2 x 8 + 32) MiB.
TABLE_STORE_OPTIONS = {
    "write_buffer_size": 8 * 1024 * 1024,
    "max_write_buffer_number": 2,
    "target_file_size_base": 8 * 1024 * 1024,
    "block_cache_size": 32 * 1024 * 1024,
    "block_cache_compressed_size": 8 * 1024 * 1024,
}


def table_store_options() -> dict[str, int]:
    """A copy for each table: Faust's RocksDB store takes keys out of the mapping it is given."""
    return dict(TABLE_STORE_OPTIONS)
