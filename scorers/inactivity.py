"""The inactivity sweep: calls that never end are ended in event time.

Each partition has an event-time watermark: the highest `ts_ms` it has delivered (or a producer's
explicit `watermark` event). A call whose last activity is older than its inactivity timeout plus the
allowed lateness, measured against its partition's watermark, is ended with a synthetic `call.ended`
(`stop_reason` "[INACTIVITY_TIMEOUT]") stamped at `last activity + timeout`. The caller records that
event in the event log, so that replaying the log reproduces the decision.

The allowed lateness absorbs the bounded reordering a batching producer introduces between calls of
one partition; within a call, order is always kept.

One call's clock does not move everyone's time: an event more than `max_leap_ms` past its partition's
watermark waits to be borne out (scorers/watermarks.py), or a producer whose clock is hours fast would
sweep every open call of the partition at once.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import cast

from models.call_state import CallState
from models.events import CallEnded, CallEndedData, Event
from scorers.watermarks import DEFAULT_MAX_LEAP_MS, Ahead, next_watermark, watermark_of_times

INACTIVITY_STOP_REASON = "[INACTIVITY_TIMEOUT]"
INACTIVITY_ID_SUFFIX = ":inactivity-timeout"
DEFAULT_ALLOWED_LATENESS_MS = 30_000


def inactivity_end_event(call: CallState) -> CallEnded:
    deadline = call.inactivity_deadline_ms()
    assert deadline is not None
    # The id is the call's, plus a number should the call already have applied an event of that id
    # (a producer's): the sweep's end must not be taken for a duplicate, or the call never ends.
    # Deterministic, as the ids a call has applied are.
    base = event_id = f"{call.call_id}{INACTIVITY_ID_SUFFIX}"
    number = 2
    while event_id in call.seen_event_ids:
        event_id, number = f"{base}:{number}", number + 1
    return CallEnded(
        event_id=event_id,
        call_id=call.call_id,
        ts_ms=deadline,
        data=CallEndedData(stop_reason=INACTIVITY_STOP_REASON),
    )


def is_inactivity_end(event: Event) -> bool:
    """Whether `event` is a sweep's end of its call (as `inactivity_end_event` makes them)."""
    return (
        type(event) is CallEnded
        and event.data.stop_reason == INACTIVITY_STOP_REASON
        and event.event_id.startswith(f"{event.call_id}{INACTIVITY_ID_SUFFIX}")
    )


@dataclass
class PartitionClock:
    watermark_ms: int | None = None
    # (event time, call_id) of the one call whose events leapt more than the limit past the
    # watermark, not borne out yet; its highest event time.
    ahead: Ahead | None = None
    # One (deadline, call_id) entry per open call, pushed when the call is first seen; an entry whose
    # call has moved on since is pushed back with the new deadline when it comes up.
    deadlines: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class InactivitySweeper:
    allowed_lateness_ms: int = DEFAULT_ALLOWED_LATENESS_MS
    partitions: dict[int, PartitionClock] = field(default_factory=dict)
    # How far past the watermark one call's event may move it on its own (0: any distance).
    max_leap_ms: int = DEFAULT_MAX_LEAP_MS

    def clock(self, partition: int) -> PartitionClock:
        clock = self.partitions.get(partition)
        if clock is None:
            clock = self.partitions[partition] = PartitionClock()
        return clock

    def watermark(self, partition: int) -> int | None:
        clock = self.partitions.get(partition)
        return clock.watermark_ms if clock is not None else None

    def ahead(self, partition: int) -> Ahead | None:
        """(event time, call_id) of the leap the partition's watermark holds back, if any."""
        clock = self.partitions.get(partition)
        return clock.ahead if clock is not None else None

    def observe(self, partition: int, ts_ms: int, call_id: str | None = None) -> None:
        """An event of `call_id` at `ts_ms`; no call_id: a `watermark` event, which is believed."""
        clock = self.partitions.get(partition) or self.clock(partition)
        watermark = clock.watermark_ms
        if watermark is not None and ts_ms <= watermark:
            return
        # Every event comes here: the usual step (within the limit, no leap held) is taken inline.
        if (
            clock.ahead is None
            and watermark is not None
            and ts_ms - watermark <= self.max_leap_ms
            and call_id is not None
        ):
            clock.watermark_ms = ts_ms
        else:
            clock.watermark_ms, clock.ahead = next_watermark(watermark, clock.ahead, ts_ms, call_id, self.max_leap_ms)

    def reset_time(self, partition: int, ts_ms: int) -> None:
        """Set the partition's time to `ts_ms`, lower or higher, and drop the leap it held back: an
        operator brings back a partition whose time was moved too far ahead (`callqa watermark reset`)."""
        clock = self.clock(partition)
        clock.watermark_ms, clock.ahead = ts_ms, None

    def restore_time(self, partition: int, watermark_ms: int | None, latest: dict[str, int]) -> None:
        """Set a restored partition's time, its calls re-folded without moving it: the journaled
        watermark and the leap it held back, which by the watermark's own rule is the one call with
        events past it (`latest`: each re-folded call's latest event time). A journal that recorded no
        watermark (one older than that record) has it rebuilt from the calls' times."""
        clock = self.clock(partition)
        times = [(ts_ms, call_id) for call_id, ts_ms in latest.items()]
        if watermark_ms is None:
            clock.watermark_ms, clock.ahead = watermark_of_times(times, self.max_leap_ms)
            return
        beyond = max((entry for entry in times if entry[0] > watermark_ms), default=None)
        if beyond is None:
            clock.watermark_ms, clock.ahead = watermark_ms, None
        else:
            clock.watermark_ms, clock.ahead = next_watermark(watermark_ms, None, beyond[0], beyond[1], self.max_leap_ms)

    def forget_leap(self, partition: int, call_ids: list[str]) -> None:
        """A leap held back goes with its call when the call is forgotten (a post-call event stamped
        far ahead can leave it there): a restored worker, whose journal no longer holds the call,
        could not know of it, and a call taken up again under that id would inherit it."""
        clock = self.partitions.get(partition)
        if clock is not None and clock.ahead is not None and clock.ahead[1] in call_ids:
            clock.ahead = None

    def track(self, partition: int, call: CallState) -> None:
        """Start watching a call; call once, when its first activity arrives."""
        deadline = call.inactivity_deadline_ms()
        if deadline is not None and not call.has_ended:
            heapq.heappush(self.clock(partition).deadlines, (deadline, call.call_id))

    def _horizon(self, clock: PartitionClock) -> int:
        """A deadline before this has passed: the watermark less the allowed lateness."""
        return (clock.watermark_ms or 0) - self.allowed_lateness_ms

    def anything_due(self, partition: int) -> bool:
        """Whether `due` can find a call of `partition` (before the end of input): the earliest
        deadline has passed. Entries of calls that moved on since make it a maybe, never a miss."""
        clock = self.partitions.get(partition)
        return clock is not None and bool(clock.deadlines) and clock.deadlines[0][0] < self._horizon(clock)

    def due(
        self,
        partition: int,
        calls: dict[str, CallState],
        end_of_input: bool = False,
        only: Collection[str] | None = None,
    ) -> list[CallState]:
        """Open calls of `partition` whose deadline the watermark has passed; at end of input, all of
        them, or with `only` those it names (the others stay watched)."""
        clock = self.partitions.get(partition)
        if clock is None or not clock.deadlines:
            return []
        horizon = None if end_of_input else self._horizon(clock)
        if horizon is not None and clock.deadlines[0][0] >= horizon:
            return []  # nothing due: the common case, checked before any work
        found: list[CallState] = []
        kept: list[tuple[int, str]] = []  # (open calls an end of input does not name)
        while clock.deadlines and (horizon is None or clock.deadlines[0][0] < horizon):
            deadline, call_id = heapq.heappop(clock.deadlines)
            call = calls.get(call_id)
            if call is None or call.has_ended:
                continue
            current = call.inactivity_deadline_ms()
            if current is None:
                continue  # no activity left to time out (not tracked again)
            if current != deadline:
                heapq.heappush(clock.deadlines, (current, call_id))
                continue
            if only is not None and call_id not in only:
                kept.append((deadline, call_id))
                continue
            found.append(call)
        for entry in kept:
            heapq.heappush(clock.deadlines, entry)
        return found

    def forget_partition(self, partition: int) -> None:
        self.partitions.pop(partition, None)


@dataclass
class RetentionClock:
    """When ended calls may be forgotten: `retention_ms` of event time after the latest event time the
    call has applied of those that would take a call up (its end, or one stamped later: a `call.ended`
    stamped before the call's events, a `db.state` after the end; `CallState.last_ts_ms`), measured
    against their partition's watermark (the same clock as the sweep). Timed from the end alone, a call
    could be forgotten while such an event was still within the retention behind the watermark, and
    that event sent again was taken up as a new call: a second version 1. (Post-call annotations,
    corrections and judge answers never take a call up: one stamped a year fast keeps nothing.)"""

    sweeper: InactivitySweeper
    retention_ms: int
    ends: dict[int, list[tuple[int, str]]] = field(default_factory=dict)

    def deadline(self, call: CallState) -> int:
        return max(call.last_ts_ms or 0, call.ended_ts_ms or 0) + self.retention_ms

    def track_end(self, partition: int, call: CallState) -> None:
        if call.ended_ts_ms is not None:
            heapq.heappush(self.ends.setdefault(partition, []), (self.deadline(call), call.call_id))

    def anything_expired(self, partition: int) -> bool:
        """Whether `expired` can find a call of `partition`: the earliest retention has passed."""
        heap = self.ends.get(partition)
        clock = self.sweeper.partitions.get(partition)
        return (
            heap is not None
            and bool(heap)
            and clock is not None
            and clock.watermark_ms is not None
            and heap[0][0] < clock.watermark_ms
        )

    def expired(self, partition: int, calls: dict[str, CallState]) -> list[str]:
        if not self.anything_expired(partition):
            return []
        heap = self.ends[partition]
        clock = self.sweeper.partitions[partition]
        out: list[str] = []
        while heap and heap[0][0] < cast(int, clock.watermark_ms):  # (not None: `anything_expired`)
            deadline, call_id = heapq.heappop(heap)
            call = calls.get(call_id)
            if call is None:
                continue
            current = self.deadline(call)
            if current > deadline:  # (an event applied since its end moved it on: looked at again then)
                heapq.heappush(heap, (current, call_id))
                continue
            out.append(call_id)
        return out

    def forget_partition(self, partition: int) -> None:
        self.ends.pop(partition, None)
