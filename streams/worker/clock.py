"""Event time keeps moving when a partition falls quiet.

The inactivity sweep runs on a partition's watermark, which only moves when events arrive. On a quiet
partition (a low-traffic night, a producer that stopped without an end-of-input watermark) a silent
call would wait for the next event. Every `idle_tick_s` the worker checks its partitions: one that has
open calls and has received nothing for that long gets a `watermark` event advanced by the wall-clock
time that passed since its last message. The tick goes through `callqa.events` like any event, so the
sweep it causes happens inside the agent (where state may be written) and is recorded for replay.

The tick also bears out a leap the partition's watermark holds back (one call's events more than
`max_watermark_leap_ms` ahead of it, scorers/watermarks.py) when this worker's own clock says the
leap is real: a call after a quiet night, or after the worker was down, is then swept on time though
no other call came to vouch for it. A leap further ahead of the worker's clock than a leap may be
(a producer's clock hours fast) is not borne out, and is logged once.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from models.events import WATERMARK_CALL_ID, Watermark, WatermarkData
from models.wire import encode_event
from scorers.watermarks import Ahead
from streams.worker.live_scorer import LiveScorer

logger = logging.getLogger("callqa.worker")


def idle_ticks(live: LiveScorer, now: float, idle_s: float, wall_ms: int | None = None) -> list[Watermark]:
    """Watermark events for the partitions that have open calls and were idle for `idle_s` seconds;
    `wall_ms`, this worker's clock (Unix ms), bears out the leaps it finds plausible."""
    ticks = []
    calls = live.engine.calls
    for partition, state in sorted(live.partitions.items()):
        last_seen, watermark_ms = state.last_message_at, state.watermark_at_last_message_ms
        clock = live.engine.sweeper.partitions.get(partition)
        if clock is None or last_seen is None or watermark_ms is None or now - last_seen < idle_s:
            continue
        # A leap held back, checked against this worker's clock (none given: left as it is).
        leap = clock.ahead if wall_ms is not None else None
        wrong_clock = leap is not None and wall_ms is not None and _ahead_of(wall_ms, leap, live)
        # The deadline heap keeps entries of calls that ended until their deadline passes: only a
        # call still open is a reason to move the partition's time, and not the one whose clock runs
        # ahead of this worker's (its deadline lies as far ahead: ticks would go on until then).
        held_back = leap[1] if leap is not None and wrong_clock else None
        if not any(
            call_id in calls and not calls[call_id].has_ended and call_id != held_back for _, call_id in clock.deadlines
        ):
            continue
        ts_ms = watermark_ms + int((now - last_seen) * 1000)
        if leap is not None and not wrong_clock:
            ts_ms = max(ts_ms, leap[0])
        ticks.append(
            Watermark(
                event_id=f"{WATERMARK_CALL_ID}:tick:{partition}:{ts_ms}",
                call_id=WATERMARK_CALL_ID,
                ts_ms=ts_ms,
                data=WatermarkData(partition=partition),
            )
        )
    return ticks


def implausible_leaps(live: LiveScorer, wall_ms: int) -> list[tuple[int, int, str]]:
    """(partition, event time, call_id) of each leap held back that lies further ahead of `wall_ms`
    than a leap may: a producer's clock that is wrong, not time that passed."""
    return [
        (partition, clock.ahead[0], clock.ahead[1])
        for partition, clock in sorted(live.engine.sweeper.partitions.items())
        if clock.ahead is not None and _ahead_of(wall_ms, clock.ahead, live)
    ]


def _ahead_of(wall_ms: int, leap: Ahead, live: LiveScorer) -> bool:
    """Whether a leap lies further ahead of this worker's clock than a leap may (a producer's clock
    that is wrong, not time that passed)."""
    return leap[0] > wall_ms + live.engine.max_watermark_leap_ms


def install_idle_clock(callqa: Any) -> None:
    idle_s = callqa.settings.idle_tick_s
    if idle_s <= 0:
        return
    reported: dict[int, str] = {}  # partition → the call whose implausible leap was logged last

    @callqa.app.timer(interval=idle_s)
    async def tick() -> None:
        wall_ms = int(time.time() * 1000)
        for held_on, leap_ms, leap_call in implausible_leaps(callqa.live, wall_ms):
            if reported.get(held_on) != leap_call:
                reported[held_on] = leap_call
                logger.warning(
                    "call %r on partition %d has events %.0f s ahead of this worker's clock: they do not "
                    "move the partition's event time (check the producer's clock)",
                    leap_call,
                    held_on,
                    (leap_ms - wall_ms) / 1000,
                )
        for watermark in idle_ticks(callqa.live, time.monotonic(), idle_s, wall_ms):
            partition = watermark.data.partition
            await callqa.events_topic.send(
                key=WATERMARK_CALL_ID.encode(), value=encode_event(watermark), partition=partition
            )
            # Until the tick comes back, count the partition as busy so it is not ticked twice.
            callqa.live.mark_busy(partition, time.monotonic(), watermark.ts_ms)
