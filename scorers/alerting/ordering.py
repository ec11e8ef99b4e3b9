"""Results in event-time order before the alert engine counts them.

The windows and episodes depend on the order results are counted in. Live, results reach the one
evaluating worker in the order the workers' relays append them: the partitions of the results topic
are read in turns, batch messages and a restarted worker's backlog move whole stretches of event time;
replay reads them in the log's order. So both count through `EventTimeOrder`, in the order of the
results' own event time (`event_ts_ms`: a call's end, or a rescore's annotation), then call_id and
version. A result is held until every source has gone `lateness_ms` past it — each partition of the
results topic (they advance independently; replay gives each result its call's partition) — and
counted then. Both paths thus
count the same sequence, and raise the same alerts, as long as no source delivers a result more than
`lateness_ms` behind what it delivered before; a result later than that is counted where it arrives.

Nothing reads the clock: the live worker releases everything held when its input has been quiet for a
while (`release_all`), as replay does at the end of its log; a source that has sent nothing yet holds
everything back until then. One call's result more than `max_leap_ms` past what its source delivered
does not move that source on its own (scorers/watermarks.py): a result stamped by a clock a year fast
would release everything after it as it arrives, out of order. It stays held, to the quiet input or
the end of the log.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scorers.alerting.calls import ScoredCall
from scorers.alerting.engine import AlertEngine
from scorers.watermarks import DEFAULT_MAX_LEAP_MS, Ahead, next_watermark


@dataclass
class EventTimeOrder:
    lateness_ms: int
    sources: int = 1  # the partitions of the results topic
    max_leap_ms: int = DEFAULT_MAX_LEAP_MS
    # The latest event time each source delivered (kept across a restart with the held calls).
    latest_by_source: dict[int, int] = field(default_factory=dict)
    # Each source's leap held back, (time, call_id).
    _ahead_by_source: dict[int, Ahead] = field(default_factory=dict)
    # (event time, call_id, version, arrival number, call): the arrival number orders a redelivered
    # version after the first, and keeps the call itself out of the comparison.
    _held: list[tuple[int, str, int, int, ScoredCall]] = field(default_factory=list)
    _arrivals: int = 0

    def add(self, call: ScoredCall, source: int = 0) -> list[ScoredCall]:
        """Hold `call`, delivered by `source`; returns the held calls now due, in order."""
        self._hold(call, source)
        if len(self.latest_by_source) < self.sources:
            return []  # a source not heard from yet may still deliver anything
        until = min(self.latest_by_source.values()) - self.lateness_ms
        due: list[ScoredCall] = []
        while self._held and self._held[0][0] <= until:
            due.append(heapq.heappop(self._held)[4])
        return due

    def release_all(self) -> list[ScoredCall]:
        """Every held call, in order (end of input, or a quiet input live). The leaps held back go
        with them: a leap's result, counted, no longer waits for its time to be borne out."""
        due = self.held
        self._held.clear()
        self._ahead_by_source.clear()
        return due

    @property
    def held(self) -> list[ScoredCall]:
        """The calls held, in the order they will be released (to keep them across a restart)."""
        return [entry[4] for entry in sorted(self._held)]

    def restore(
        self, held: list[ScoredCall], latest_by_source: dict[int, int], ahead_by_source: dict[int, Ahead] | None = None
    ) -> None:
        """Hold again what was held before a restart, with each source's latest time and leap."""
        for call in held:
            self._hold(call, None)
        for source, latest in latest_by_source.items():
            self._advance(source, latest)
        self._ahead_by_source.update(ahead_by_source or {})

    @property
    def ahead_by_source(self) -> dict[int, Ahead]:
        """Each source's leap held back (to keep across a restart with `latest_by_source`)."""
        return dict(self._ahead_by_source)

    def __len__(self) -> int:
        return len(self._held)

    def _hold(self, call: ScoredCall, source: int | None) -> None:
        self._arrivals += 1
        heapq.heappush(self._held, (call.event_ts_ms, call.call_id, call.version, self._arrivals, call))
        if source is not None:
            self._advance(source, call.event_ts_ms, call.call_id)

    def _advance(self, source: int, ts_ms: int, call_id: str | None = None) -> None:
        """`call_id` None: a time believed whatever the distance (restored)."""
        latest, ahead = next_watermark(
            self.latest_by_source.get(source), self._ahead_by_source.get(source), ts_ms, call_id, self.max_leap_ms
        )
        assert latest is not None
        self.latest_by_source[source] = latest
        if ahead is None:
            self._ahead_by_source.pop(source, None)
        else:
            self._ahead_by_source[source] = ahead


def key_of(call: ScoredCall) -> str:
    """A held call's identity (call and version), for keeping it in a table until it is counted."""
    return f"{call.call_id}\x1f{call.version}"


def observe_in_order(
    engine: AlertEngine, order: EventTimeOrder, result: Any, source_of: Callable[[str], int] | None = None
) -> list[dict[str, Any]]:
    """Read one published result and count, in order, whatever it makes due; returns the alerts.
    `source_of` names the source that delivered a call's result, by its call_id (None: one source)."""
    call = engine.read(result)
    if call is None:
        return []
    return count_due(engine, order.add(call, 0 if source_of is None else source_of(call.call_id)))


def release_in_order(engine: AlertEngine, order: EventTimeOrder) -> list[dict[str, Any]]:
    """Count every held result, in order; returns the alerts."""
    return count_due(engine, order.release_all())


def count_due(
    engine: AlertEngine, due: list[ScoredCall], on_counted: Callable[[ScoredCall], None] | None = None
) -> list[dict[str, Any]]:
    """Count the released results, in order (`on_counted` hears of each, e.g. to stop keeping it);
    returns the alerts they cause."""
    alerts: list[dict[str, Any]] = []
    for call in due:
        if on_counted is not None:
            on_counted(call)
        alerts.extend(engine.count(call))
    return alerts
