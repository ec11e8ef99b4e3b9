"""The Python streaming peers callqa is measured against, each run as its own process.

`python -m streams.bench.peers KIND BOOTSTRAP TOPIC EVENTS` consumes TOPIC from the beginning (single
events or batch envelopes, MessagePack), counts EVENTS events per call_id, and prints one JSON line:
`{"events": n, "seconds": s, "events_per_s": r}`, timed from the first message to the last event.

- `bare_aiokafka`: aiokafka `getmany()` + msgpack decode + a dict update per event: the limit of a
  Python consumer on this broker, doing nothing else.
- `naive_faust`: the Faust agent most people write first: every event increments the call's count in
  a changelog-backed table (a table write per event), stock `kafka://` transport.
- `quix_stateful`: Quix Streams, the call's count in its RocksDB state with a changelog topic; one
  state update per message (a batch's events counted in one update).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from typing import Any

import msgpack

# This broker holds a new group's join for half the session timeout
# (docs/guides/embedded-broker.md#limits-of-the-embedded-broker): a short one keeps
# every peer's start (not timed) short. librdkafka's default, 45 s, would add 22 s.
SESSION_TIMEOUT_S = 6
HEARTBEAT_S = 2


def events_of(value: bytes) -> list[dict[str, Any]]:
    document = msgpack.unpackb(value, raw=False)
    events = document.get("events")
    return events if events is not None else [document]


def _report(events: int, started: float, finished: float, cpu_started: float, cpu_finished: float) -> None:
    """`started`/`finished` from time.perf_counter, `cpu_*` from time.process_time (every thread of
    the process, librdkafka's included) at the same two moments."""
    seconds = max(finished - started, 1e-9)
    cpu = cpu_finished - cpu_started
    line = (
        json.dumps(
            {
                "events": events,
                "seconds": seconds,
                "events_per_s": events / seconds,
                "cpu_seconds": cpu,
                "cpu_us_per_event": cpu / max(events, 1) * 1e6,
                "cores_busy": cpu / seconds,
            }
        )
        + "\n"
    )
    os.write(1, line.encode())  # straight to the descriptor: a Faust worker takes sys.stdout over


# ------------------------------------------------------------------------------------ bare aiokafka


async def _bare_aiokafka(bootstrap: str, topic: str, total: int) -> None:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"bench-bare-{os.getpid()}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=SESSION_TIMEOUT_S * 1000,
        heartbeat_interval_ms=HEARTBEAT_S * 1000,
    )
    await consumer.start()
    counts: dict[str, int] = {}
    seen = 0
    started = cpu_started = 0.0
    try:
        while seen < total:
            batches = await consumer.getmany(timeout_ms=1000, max_records=10_000)
            for records in batches.values():
                if not started:
                    started, cpu_started = time.perf_counter(), time.process_time()
                for record in records:
                    for event in events_of(record.value):
                        call_id = event["call_id"]
                        counts[call_id] = counts.get(call_id, 0) + 1
                        seen += 1
    finally:
        finished, cpu_finished = time.perf_counter(), time.process_time()
        await consumer.stop()
    _report(seen, started, finished, cpu_started, cpu_finished)


def bare_aiokafka(bootstrap: str, topic: str, total: int) -> None:
    asyncio.run(_bare_aiokafka(bootstrap, topic, total))


# -------------------------------------------------------------------------------------- naive Faust


def naive_faust(bootstrap: str, topic: str, total: int) -> None:
    import faust

    from streams.kafka.embedded_broker import free_port

    app = faust.App(
        f"bench-naive-{os.getpid()}",
        broker=f"kafka://{bootstrap}",
        store="memory://",
        datadir=tempfile.mkdtemp(prefix="bench-naive-"),
        web_port=free_port(),
        topic_partitions=4,
        broker_session_timeout=SESSION_TIMEOUT_S,
        broker_heartbeat_interval=HEARTBEAT_S,
        consumer_auto_offset_reset="earliest",
        key_serializer="raw",
        value_serializer="raw",
        autodiscover=False,
    )
    source = app.topic(topic, key_type=bytes, value_type=bytes)
    counts = app.Table("counts", default=int, partitions=4)
    state: dict[str, Any] = {"seen": 0, "started": 0.0, "cpu_started": 0.0}

    @app.agent(source)
    async def count(stream: Any) -> None:
        async for value in stream:
            if not state["started"]:
                state["started"], state["cpu_started"] = time.perf_counter(), time.process_time()
            for event in events_of(value):
                counts[event["call_id"]] += 1  # the naive pattern: a table write per event
                state["seen"] += 1
            if state["seen"] >= total:
                _report(state["seen"], state["started"], time.perf_counter(), state["cpu_started"], time.process_time())
                os._exit(0)

    worker = faust.Worker(app, loglevel="warning", quiet=True, redirect_stdouts=False)
    worker.execute_from_commandline()


# ----------------------------------------------------------------------------------- Quix Streams


def quix_stateful(bootstrap: str, topic: str, total: int) -> None:
    from quixstreams import Application

    loglevel: Any = os.environ.get("BENCH_QUIX_LOGLEVEL", "WARNING")  # (a level name, read by logging)
    app = Application(
        broker_address=bootstrap,
        consumer_group=f"bench-quix-{os.getpid()}",
        auto_offset_reset="earliest",
        state_dir=tempfile.mkdtemp(prefix="bench-quix-"),
        loglevel=loglevel,
        consumer_extra_config={
            "session.timeout.ms": SESSION_TIMEOUT_S * 1000,
            "heartbeat.interval.ms": HEARTBEAT_S * 1000,
        },
    )
    source = app.topic(topic, key_deserializer="bytes", value_deserializer="bytes")
    progress: dict[str, Any] = {"seen": 0, "started": 0.0, "finished": 0.0, "cpu_started": 0.0, "cpu_finished": 0.0}

    def count(value: bytes, state: Any) -> None:
        if not progress["started"]:
            progress["started"], progress["cpu_started"] = time.perf_counter(), time.process_time()
        events = events_of(value)
        state.set("count", state.get("count", 0) + len(events))  # the message key is the call_id
        progress["seen"] += len(events)
        if progress["seen"] >= total and not progress["finished"]:
            progress["finished"], progress["cpu_finished"] = time.perf_counter(), time.process_time()
            app.stop()

    app.dataframe(source).update(count, stateful=True)
    app.run()
    _report(
        progress["seen"],
        progress["started"],
        progress["finished"] or time.perf_counter(),
        progress["cpu_started"],
        progress["cpu_finished"] or time.process_time(),
    )


PEERS = {"bare_aiokafka": bare_aiokafka, "naive_faust": naive_faust, "quix_stateful": quix_stateful}


if __name__ == "__main__":
    kind, bootstrap_servers, topic_name, expected = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    PEERS[kind](bootstrap_servers, topic_name, expected)
