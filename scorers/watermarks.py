"""An event-time watermark that one source's clock cannot run away with.

A watermark is the highest event time seen, and everything that waits on time reads it: the
inactivity sweep and the forgetting of ended calls (scorers/inactivity.py), the alert windows
(scorers/alerting/windows.py) and the order results are counted in (scorers/alerting/ordering.py),
the end-of-input time `callqa send` gives every partition (streams/send/plan.py). Taken from any one
event, a single producer whose clock is hours fast would end every open call at once, forget the
ended ones, refuse every new call as too late and empty every alert window, until real time caught up.

So an event time more than `max_leap_ms` past the watermark does not move it on its own. It is held
as the leap `ahead` (its source, a call_id, and the highest time that source reached), and the
watermark follows once the leap is borne out:
- by another source as far ahead: the watermark goes to the lower of the two, where both have got;
- by a watermark event (no source: a producer's promise, or the worker's tick, which checks the
  leap against the worker's own clock);
- or by ordinary steps coming within the limit of it.
The held source's own events are not held: only their say on the time is. Deterministic and read
from event times only, so replay holds back exactly what the live worker did.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_LEAP_MS = 600_000

Ahead = tuple[int, str]  # (event time, source) of a leap held back


def later(first: int | None, second: int | None) -> int | None:
    """The later of two watermarks, either of which may be missing (None)."""
    return second if first is None else first if second is None else max(first, second)


def next_watermark(
    watermark: int | None, ahead: Ahead | None, ts_ms: int, source: str | None, max_leap_ms: int
) -> tuple[int | None, Ahead | None]:
    """The watermark and the leap held back after an event of `source` at `ts_ms` (source None: a
    watermark event, believed whatever the distance); `max_leap_ms` 0: no limit."""
    if watermark is not None and ts_ms <= watermark:
        return watermark, ahead
    if source is None or watermark is None or not max_leap_ms or ts_ms <= watermark + max_leap_ms:
        return _caught_up(ts_ms, ahead, max_leap_ms)
    if ahead is None or ahead[1] == source:
        return watermark, (ts_ms if ahead is None else max(ts_ms, ahead[0]), source)
    lower, higher = sorted((ahead, (ts_ms, source)))
    return _caught_up(lower[0], higher, max_leap_ms)


def _caught_up(watermark: int, ahead: Ahead | None, max_leap_ms: int) -> tuple[int, Ahead | None]:
    """A leap held back that the watermark has come within the limit of moves it as any event would."""
    if ahead is not None and (not max_leap_ms or ahead[0] <= watermark + max_leap_ms):
        return max(watermark, ahead[0]), None
    return watermark, ahead


def watermark_of_times(times: list[Ahead], max_leap_ms: int) -> tuple[int | None, Ahead | None]:
    """The watermark and the leap held back after the sources' times were seen in increasing order
    (to rebuild them from what was kept): every leap but the last is borne out by the next source."""
    if not times:
        return None, None
    ordered = sorted(times)
    if len(ordered) >= 2 and max_leap_ms and ordered[-1][0] > ordered[-2][0] + max_leap_ms:
        return ordered[-2][0], ordered[-1]
    return ordered[-1][0], None


@dataclass(slots=True)
class LatestTwo:
    """The two sources that reached the latest times, all `watermark_of_times` reads, kept as events
    pass (a log read once, with no room for every source)."""

    first: Ahead | None = None  # the latest
    second: Ahead | None = None  # the latest of the other sources

    def note(self, ts_ms: int, source: str) -> None:
        entry, first = (ts_ms, source), self.first
        if first is None or source == first[1]:
            if first is None or entry > first:
                self.first = entry
        elif entry > first:
            self.first, self.second = entry, first
        elif self.second is None or entry > self.second:
            self.second = entry

    def times(self) -> list[Ahead]:
        return [entry for entry in (self.second, self.first) if entry is not None]
