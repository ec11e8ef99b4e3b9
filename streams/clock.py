"""Event time keeps moving when a partition falls quiet.

The inactivity sweep runs on a partition's watermark, which only moves when events arrive. On a quiet
partition (a low-traffic night, a producer that stopped without an end-of-input watermark) a silent
call would wait for the next event. Every `idle_tick_s` the worker checks its partitions: one that has
open calls and has received nothing for that long gets a `watermark` event advanced by the wall-clock
time that passed since its last message. The tick goes through `callqa.events` like any event, so the
sweep it causes happens inside the agent (where state may be written) and is recorded for replay.
"""

from __future__ import annotations

import time
from typing import Any

from models.events import CONTRACT_VERSION, WATERMARK_CALL_ID, Watermark, WatermarkData
from models.wire import encode_event
from streams.live import LiveScorer


def idle_ticks(live: LiveScorer, now: float, idle_s: float) -> list[Watermark]:
    """Watermark events for the partitions that have open calls and were idle for `idle_s` seconds."""
    ticks = []
    calls = live.engine.calls
    for partition, state in sorted(live.partitions.items()):
        last_seen, watermark_ms = state.last_message_at, state.watermark_at_last_message_ms
        clock = live.engine.sweeper.partitions.get(partition)
        if clock is None or last_seen is None or watermark_ms is None or now - last_seen < idle_s:
            continue
        # The deadline heap keeps entries of calls that ended until their deadline passes: only a
        # call still open is a reason to move the partition's time.
        if not any(call_id in calls and not calls[call_id].has_ended for _, call_id in clock.deadlines):
            continue
        ts_ms = watermark_ms + int((now - last_seen) * 1000)
        ticks.append(Watermark(event_id=f"{WATERMARK_CALL_ID}:tick:{partition}:{ts_ms}", call_id=WATERMARK_CALL_ID,
                               ts_ms=ts_ms, data=WatermarkData(partition=partition), v=CONTRACT_VERSION))
    return ticks


def install_idle_clock(callqa: Any) -> None:
    idle_s = callqa.settings.idle_tick_s
    if idle_s <= 0:
        return

    @callqa.app.timer(interval=idle_s)
    async def tick() -> None:
        for watermark in idle_ticks(callqa.live, time.monotonic(), idle_s):
            partition = watermark.data.partition
            await callqa.events_topic.send(key=WATERMARK_CALL_ID.encode(), value=encode_event(watermark), partition=partition)
            # Until the tick comes back, count the partition as busy so it is not ticked twice.
            callqa.live.mark_busy(partition, time.monotonic(), watermark.ts_ms)
