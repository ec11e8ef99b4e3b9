"""`callqa watermark reset --partition N`: bring back a partition whose time was moved too far ahead.

A partition's time (its watermark) only moves forward. Moved far ahead — by a `watermark` event a
producer stamped in the future, or by events accepted before the future-time bound existed — it
refuses every new call as too late (`/health` counts them under `refusing_late_calls`). The command
publishes a `watermark` event with `reset: true` to that partition, stamped with this machine's clock
(or `--to-ms`): the worker owning the partition sets its time there, whatever it was, and journals it.
It goes through the events topic like any event, so `callqa record` keeps it and replay makes the same
reset at the same place.
"""

from __future__ import annotations

import time

from models.events import WATERMARK_CALL_ID, Watermark, WatermarkData
from models.wire import encode_event
from streams.config import Settings


def reset_event(partition: int, ts_ms: int) -> Watermark:
    return Watermark(
        event_id=f"{WATERMARK_CALL_ID}:reset:{partition}:{ts_ms}",
        call_id=WATERMARK_CALL_ID,
        ts_ms=ts_ms,
        data=WatermarkData(partition=partition, reset=True),
    )


async def publish_reset(settings: Settings, partition: int, ts_ms: int | None = None) -> Watermark:
    """Publish the reset of `partition` to `ts_ms` (None: now) and wait for the broker to have it."""
    from streams.kafka.clients import producer
    from streams.topics import TopicNames

    if not 0 <= partition < settings.partitions:
        raise ValueError(
            f"partition {partition} is not one of the events topic's {settings.partitions} (CALLQA_PARTITIONS)"
        )
    event = reset_event(partition, int(time.time() * 1000) if ts_ms is None else ts_ms)
    kafka = producer(settings)
    await kafka.start()
    try:
        await kafka.send_and_wait(
            TopicNames(settings.topic_prefix).events,
            encode_event(event),
            key=WATERMARK_CALL_ID.encode(),
            partition=partition,
        )
    finally:
        await kafka.stop()
    return event
