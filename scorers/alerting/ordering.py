"""Results in event-time order before the alert engine counts them.

The windows and episodes depend on the order results are fed in. Live, results reach the one
evaluating worker in the order the workers' relays append them (several partitions, batch messages,
a restarted worker's backlog reorder them); replay reads them in the log's order. So both feed the
engine through `EventTimeOrder`: a result is held until the latest end time seen is `lateness_ms` past
its own, then released with every held result at or before that point, ordered by (end time,
call_id, version). Results that arrive less than `lateness_ms` out of order are therefore evaluated
in the same sequence on both paths and raise the same alerts; one later than that is released at
once, where it arrives (a rescore, which keeps its call's end time, usually is).

Nothing reads the clock: the live worker releases everything held when its input has been quiet for a
while (`release_all`), as replay does at the end of its log.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from scorers.alerting.calls import ScoredCall
from scorers.alerting.engine import AlertEngine


@dataclass
class EventTimeOrder:
    lateness_ms: int
    latest_ms: int | None = None  # the latest end time seen (kept across a restart with the held calls)
    # (end time, call_id, version, arrival number, call): the arrival number orders a redelivered
    # version after the first, and keeps the call itself out of the comparison.
    _held: list[tuple[int, str, int, int, ScoredCall]] = field(default_factory=list)
    _arrivals: int = 0

    def add(self, call: ScoredCall) -> list[ScoredCall]:
        """Hold `call`; returns the held calls now due, in order (possibly `call` itself)."""
        self._hold(call)
        until = self.latest_ms - self.lateness_ms  # type: ignore[operator]  (set by _hold)
        due: list[ScoredCall] = []
        while self._held and self._held[0][0] <= until:
            due.append(heapq.heappop(self._held)[4])
        return due

    def release_all(self) -> list[ScoredCall]:
        """Every held call, in order (end of input, or a quiet input live)."""
        due = self.held
        self._held.clear()
        return due

    @property
    def held(self) -> list[ScoredCall]:
        """The calls held, in the order they will be released (to keep them across a restart)."""
        return [entry[4] for entry in sorted(self._held)]

    def restore(self, held: list[ScoredCall], latest_ms: int | None) -> None:
        """Hold again what was held before a restart."""
        for call in held:
            self._hold(call)
        if latest_ms is not None and (self.latest_ms is None or latest_ms > self.latest_ms):
            self.latest_ms = latest_ms

    def __len__(self) -> int:
        return len(self._held)

    def _hold(self, call: ScoredCall) -> None:
        self._arrivals += 1
        heapq.heappush(self._held, (call.ts_ms, call.call_id, call.version, self._arrivals, call))
        if self.latest_ms is None or call.ts_ms > self.latest_ms:
            self.latest_ms = call.ts_ms


def key_of(call: ScoredCall) -> str:
    """A held call's identity (call and version), for keeping it in a table until it is counted."""
    return f"{call.call_id}\x1f{call.version}"


def observe_in_order(engine: AlertEngine, order: EventTimeOrder, result: Any) -> list[dict[str, Any]]:
    """Read one published result and count, in order, whatever it makes due; returns the alerts."""
    call = engine.read(result)
    if call is None:
        return []
    alerts: list[dict[str, Any]] = []
    for due in order.add(call):
        alerts.extend(engine.count(due))
    return alerts


def release_in_order(engine: AlertEngine, order: EventTimeOrder) -> list[dict[str, Any]]:
    """Count every held result, in order; returns the alerts."""
    alerts: list[dict[str, Any]] = []
    for due in order.release_all():
        alerts.extend(engine.count(due))
    return alerts
