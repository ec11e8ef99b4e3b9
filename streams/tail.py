"""`callqa tail results|deadletter|alerts`: print a topic's records readably, from the beginning.

It reads outside any consumer group and from the first offset: the embedded broker's "latest offset"
answer is wrong (README, "The embedded broker"), so starting "at the end" cannot be trusted there.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, Callable

from aiokafka import TopicPartition

from streams.config import Settings
from streams.kafka_clients import reader
from streams.render import alert_line, dead_letter_line, result_line

RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "results": result_line,
    "deadletter": dead_letter_line,
    "alerts": alert_line,
}


async def read_topic(settings: Settings, topic: str, idle_exit_s: float | None, on_record: Callable[[bytes, bytes], None],
                     until: Callable[[], bool] | None = None, timeout_s: float | None = None,
                     on_waiting: Callable[[str], None] | None = None) -> int:
    """Deliver every record of `topic` to `on_record(key, value)`; stop after `idle_exit_s` without
    new records (None: follow forever), once `until()` holds, or after `timeout_s`. Returns the number read.
    A topic that does not exist yet is waited for as long (`on_waiting` hears of it once)."""
    consumer = reader(settings)
    count = 0
    try:
        await consumer.start()  # (inside: a broker that cannot be reached still gets its consumer closed)
        partitions = await topic_partitions(consumer, topic, idle_exit_s if idle_exit_s is not None else timeout_s, on_waiting)
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        await consumer.seek_to_beginning()
        idle = 0.0
        deadline = None if timeout_s is None else asyncio.get_running_loop().time() + timeout_s
        while idle_exit_s is None or idle < idle_exit_s:
            if until is not None and until():
                break
            if deadline is not None and asyncio.get_running_loop().time() > deadline:
                break
            batches = await consumer.getmany(timeout_ms=500)
            records = [r for batch in batches.values() for r in batch]
            if not records:
                idle += 0.5
                continue
            idle = 0.0
            for record in records:
                on_record(record.key or b"", record.value or b"")
                count += 1
    finally:
        await consumer.stop()
    return count


async def topic_partitions(consumer: Any, topic: str, wait_s: float | None, on_waiting: Callable[[str], None] | None) -> list[int]:
    """The topic's partitions, once it exists; it is waited for up to `wait_s` (None: for ever)."""
    loop = asyncio.get_running_loop()
    deadline = None if wait_s is None else loop.time() + wait_s
    told = False
    while True:
        partitions = consumer.partitions_for_topic(topic)
        if partitions:
            return sorted(partitions)
        if deadline is not None and loop.time() >= deadline:
            raise SystemExit(f"topic {topic!r} does not exist (is a worker running against this broker, "
                             "with this topic prefix?)")
        if on_waiting is not None and not told:
            on_waiting(f"waiting for topic {topic!r} to exist (a worker creates it on start) ...")
            told = True
        await consumer._client.force_metadata_update()
        await asyncio.sleep(0.25)


def tail(settings: Settings, topic: str, kind: str, follow: bool, raw: bool) -> int:
    render = RENDERERS[kind]

    def show(key: bytes, value: bytes) -> None:
        try:
            # --json: the document as published, byte for byte (workers write it on one line).
            text = value.decode("utf-8") if raw else render(json.loads(value))
        except ValueError:  # (UnicodeDecodeError and JSONDecodeError alike)
            # With --json, standard output holds documents only (`callqa compare` reads it): the
            # note goes to standard error.
            print(f"(undecodable record, key={key!r}, {len(value)} bytes)", file=sys.stderr if raw else sys.stdout)
            return
        print(text, flush=True)

    try:
        def waiting(note: str) -> None:
            print(note, file=sys.stderr, flush=True)

        return asyncio.run(read_topic(settings, topic, None if follow else 3.0, show, on_waiting=waiting if follow else None))
    except BrokenPipeError:  # the reader went away (`| head`): not an error
        sys.stderr.close()
        return 0
