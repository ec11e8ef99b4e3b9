"""Measurements that run in a process of their own, so that nothing else in the benchmark's process
(the workload, other runs' garbage) weighs on them.

`python -m streams.bench.probes replay LOG PARTITIONS` replays a `.msgpack` log as `callqa replay` does
(reading it included), in one process per CPU (at most one per partition), then in one, and prints
`{"events", "jobs", "seconds", "events_per_s", "events_per_s_one_process", ...}`.

`python -m streams.bench.probes memory CALLS EXCHANGES` holds CALLS open calls, each started and
EXCHANGES user/agent exchanges in, as the live worker holds them, and prints the process's resident
memory before and after, per call. The journal's segments are counted apart (`journal_bytes_per_call`):
with the RocksDB store (production) they live on disk, with the memory store in the worker's memory too.
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time

import msgspec


def replay_probe(path: str, partitions: int) -> dict[str, float]:
    """`callqa replay` of a log, from reading the file to the last result line written: in as many
    processes as it uses by default, then in one."""
    import os
    import tempfile

    from scorers.engine import CallEngine
    from streams.replay.outputs import ReplayFiles
    from streams.replay.parallel import default_jobs, replay_log

    jobs = default_jobs(partitions)
    with tempfile.TemporaryDirectory(prefix="callqa-probe-") as out:
        # The jobs first, forked from a process that has not yet replayed anything itself.
        with ReplayFiles.open(os.path.join(out, f"jobs-{jobs}.jsonl")) as files:
            parallel = replay_log(path, partitions, jobs, CallEngine, files)
        with ReplayFiles.open(os.path.join(out, "one.jsonl")) as files:
            cpu_started = time.process_time()
            one = replay_log(path, partitions, 1, CallEngine, files)
            cpu_one = time.process_time() - cpu_started
    return {
        "events": parallel.events,
        "results": parallel.results,
        "jobs": jobs,
        "seconds": parallel.seconds,
        "events_per_s": parallel.events_per_s,
        "seconds_one_process": one.seconds,
        "events_per_s_one_process": one.events_per_s,
        "cpu_us_per_event_one_process": cpu_one / max(one.events, 1) * 1e6,
    }


def _rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize()


def memory_probe(calls: int, exchanges: int) -> dict[str, float]:
    from scorers.engine import CallEngine
    from streams.bench.workload import Workload
    from streams.tuning import tune_gc
    from streams.worker.live_scorer import LiveScorer

    tune_gc()
    live = LiveScorer(CallEngine())
    journal_bytes = 0
    # The first `exchanges` exchanges of a few hundred calls, renamed for each further few hundred:
    # every call distinct, none ended, and the workload never held in memory whole.
    chunk = min(500, calls)
    template = Workload(calls=chunk, turns=exchanges, start_every_ms=0)
    cutoff = template.t0_ms + 500 + exchanges * template.exchange_ms - 1000  # before any call's end
    opening = [event for event in template.events if event["ts_ms"] < cutoff]
    del template
    encode = msgspec.msgpack.Encoder().encode
    gc.collect()
    before = _rss_bytes()
    started = time.perf_counter()
    events = 0
    for first in range(0, calls, chunk):
        prefix = f"{first}:"
        for event in opening:
            renamed = {**event, "call_id": prefix + event["call_id"], "event_id": prefix + event["event_id"]}
            out = live.handle(encode(renamed), "callqa.events", 0, events)
            live.book.stage(0, out.journal)
            events += 1
        _, segment, _ = live.book.take(0)
        journal_bytes += len(segment or b"")
    gc.collect()
    after = _rss_bytes()
    open_calls = sum(1 for call in live.engine.calls.values() if not call.has_ended)
    return {
        "calls": open_calls,
        "events": events,
        "events_per_call": events / max(open_calls, 1),
        "rss_before_bytes": before,
        "rss_after_bytes": after,
        "bytes_per_call": (after - before) / max(open_calls, 1),
        "journal_bytes_per_call": journal_bytes / max(open_calls, 1),
        "seconds": time.perf_counter() - started,
    }


if __name__ == "__main__":
    if sys.argv[1] == "replay":
        print(json.dumps(replay_probe(sys.argv[2], int(sys.argv[3]))), flush=True)
    elif sys.argv[1] == "memory":
        print(json.dumps(memory_probe(int(sys.argv[2]), int(sys.argv[3]))), flush=True)
    else:
        raise SystemExit(f"unknown probe {sys.argv[1]!r}")
