"""Sliding windows in event time: per window length, scope and metric, calls scored, passed, score.

The watermark is the latest call time seen (`ScoredCall.ts_ms`). A window of length L holds the calls
with a time in (watermark - L, watermark]: when the watermark moves on, calls leave the windows they
fell out of, whatever order the results arrived in. A call arriving late still counts if its time is
inside the longest window; a call older than that is dropped (too late to matter to any rule). One
call's time more than `max_leap_ms` past the watermark does not move it until another call bears it
out (scorers/watermarks.py): a call stamped by a clock a year fast would otherwise empty every window
and leave every later call too late to count, for a year. That call itself counts as any other.

A call counts once, with its newest version: a rescore takes back the earlier contribution wherever it
counted and adds the new one. Calls are kept only as long as the longest window reaches back, so
memory is bounded by the calls of one longest window. Every aggregate a change touches is marked
dirty, so the rules evaluate only what can have changed.

Only the aggregates some rule reads are kept: per window length, the (scope kind, metric) pairs it
needs, e.g. {300 000: {("agent", "latency")}}. A call scored on eleven metrics then costs one update
per rule instead of one per scope, metric and window.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from scorers.alerting.calls import Outcome, ScoredCall
from scorers.qa.base import round_score
from scorers.watermarks import DEFAULT_MAX_LEAP_MS, Ahead, next_watermark, watermark_of_times

AFTER_ANY_CALL_ID = "\U0010ffff"  # sorts after every call_id: (t, AFTER_ANY_CALL_ID) > (t, call_id)

AggregateKey = tuple[int, str, str]  # (window length in ms, scope, metric)
Needs = dict[int, frozenset[tuple[str, str]]]  # window length in ms -> (scope kind, metric) pairs


@dataclass(slots=True)
class WindowTotals:
    total: int = 0
    passed: int = 0
    score_tenths: int = 0

    def add(self, outcome: Outcome, sign: int) -> None:
        self.total += sign
        self.score_tenths += sign * outcome.score_tenths
        if outcome.passed:
            self.passed += sign

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.total if self.total else None

    @property
    def average_score(self) -> float | None:
        return round_score(self.score_tenths / self.total / 10) if self.total else None


EMPTY = WindowTotals()


@dataclass
class EventTimeWindows:
    needs: Needs = field(default_factory=dict)
    max_leap_ms: int = DEFAULT_MAX_LEAP_MS
    watermark: int | None = None
    ahead: Ahead | None = None  # (time, call_id) of a leap past the watermark not borne out yet
    calls: dict[str, ScoredCall] = field(default_factory=dict)
    # (ts_ms, call_id) of every kept call, in time order.
    _order: list[tuple[int, str]] = field(default_factory=list)
    _totals: dict[int, dict[tuple[str, str], WindowTotals]] = field(default_factory=dict)
    dirty: set[AggregateKey] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.needs = dict(sorted(self.needs.items()))
        self._totals = {length: {} for length in self.needs}

    @property
    def lengths_ms(self) -> tuple[int, ...]:
        return tuple(self.needs)

    @property
    def retention_ms(self) -> int:
        return self.lengths_ms[-1] if self.lengths_ms else 0

    # ---------------------------------------------------------------------------------- changes

    def counted_version(self, call_id: str) -> int | None:
        """The version of the call that counts now (None: none does)."""
        kept = self.calls.get(call_id)
        return None if kept is None else kept.version

    def has_counted(self, call: ScoredCall) -> bool:
        """Whether this version of the call, or a newer one, already counts (a redelivery, or an older
        version read after a newer one)."""
        counted = self.counted_version(call.call_id)
        return counted is not None and call.version <= counted

    def put(self, call: ScoredCall) -> tuple[bool, list[str]]:
        """Count `call` (replacing an earlier version). Returns whether it was taken, and the call_ids
        no longer kept because the watermark moved past the longest window."""
        if self.has_counted(call):
            return False, []  # a redelivered or older version: the newest already counts
        if self.watermark is not None and call.ts_ms <= self.watermark - self.retention_ms:
            return False, []  # too late for every window
        watermark, self.ahead = next_watermark(self.watermark, self.ahead, call.ts_ms, call.call_id, self.max_leap_ms)
        dropped = self.advance(watermark) if watermark is not None else []
        kept = self.calls.get(call.call_id)  # moving on may have dropped it
        if kept is not None:
            self._remove(kept)
        if watermark is not None and call.ts_ms <= watermark - self.retention_ms:
            # Moving on left the call behind every window (a leap it let catch up, or no window at
            # all): it counts for nothing and is not kept, as a restore would not keep it.
            if kept is not None:
                del self.calls[call.call_id]
                dropped.append(call.call_id)
            return True, dropped
        self.calls[call.call_id] = call
        insort(self._order, (call.ts_ms, call.call_id))
        self._count(call, +1)
        return True, dropped

    def advance(self, ts_ms: int) -> list[str]:
        """Move the watermark to `ts_ms` if it is later; returns the call_ids no longer kept."""
        old = self.watermark
        if old is not None and ts_ms <= old:
            return []
        self.watermark = ts_ms
        if old is None:
            return []
        for length in self.needs:
            for call in self._between(old - length, ts_ms - length):
                self._count_in(length, call, -1)
        cut = bisect_right(self._order, (ts_ms - self.retention_ms, AFTER_ANY_CALL_ID))
        dropped = [call_id for _, call_id in self._order[:cut]]
        del self._order[:cut]
        for call_id in dropped:
            del self.calls[call_id]
        return dropped

    def configure(self, needs: Needs) -> list[str]:
        """Change the aggregates kept (the rules changed): they are rebuilt from the calls kept so
        far. Returns the call_ids no longer kept when the longest window got shorter."""
        self.needs = dict(sorted(needs.items()))
        self._totals = {length: {} for length in self.needs}
        self.dirty.clear()
        for call in self.calls.values():
            self._count(call, +1)
        dropped: list[str] = []
        if self.watermark is not None:
            cut = bisect_right(self._order, (self.watermark - self.retention_ms, AFTER_ANY_CALL_ID))
            dropped = [call_id for _, call_id in self._order[:cut]]
            del self._order[:cut]
            for call_id in dropped:
                del self.calls[call_id]
        return dropped

    def restore(self, calls: Iterable[ScoredCall], time: tuple[int | None, Ahead | None] | None = None) -> None:
        """Rebuild from kept calls (after a restart), at `time` (the watermark and the leap held back,
        as they were). None: from the calls themselves, the latest of them unless that one alone
        leapt past the others (which assumes they were counted in the order of their time)."""
        self.calls = {}
        self._order = []
        for call in calls:
            self.calls[call.call_id] = call
        self._order = sorted((c.ts_ms, c.call_id) for c in self.calls.values())
        self.watermark, self.ahead = watermark_of_times(self._order, self.max_leap_ms) if time is None else time
        self.configure(self.needs)

    def take_dirty(self) -> set[AggregateKey]:
        dirty, self.dirty = self.dirty, set()
        return dirty

    # ---------------------------------------------------------------------------------- reading

    def totals(self, length_ms: int, scope: str, metric: str) -> WindowTotals:
        return self._totals.get(length_ms, {}).get((scope, metric), EMPTY)

    def bounds(self, length_ms: int) -> tuple[int, int]:
        end = self.watermark if self.watermark is not None else 0
        return end - length_ms, end

    def scopes(self, length_ms: int, metric: str) -> list[str]:
        """The scope instances with calls scored on `metric` in the window."""
        return [scope for scope, m in self._totals.get(length_ms, {}) if m == metric]

    def samples(self, length_ms: int, scope: str, metric: str, limit: int) -> list[str]:
        """Up to `limit` call_ids of the window on this scope and metric: failing calls first, then
        passing ones, newest first within each."""
        failing: list[str] = []
        passing: list[str] = []
        start, _ = self.bounds(length_ms)
        for ts_ms, call_id in reversed(self._order):
            if ts_ms <= start or len(failing) >= limit:
                break
            outcome = self.calls[call_id].outcome(scope, metric)
            if outcome is not None:
                (passing if outcome.passed else failing).append(call_id)
        return (failing + passing)[:limit]

    # ---------------------------------------------------------------------------------- helpers

    def _between(self, after: int, up_to: int) -> Iterator[ScoredCall]:
        """Kept calls with a time in (after, up_to]."""
        lo = bisect_right(self._order, (after, AFTER_ANY_CALL_ID))
        hi = bisect_right(self._order, (up_to, AFTER_ANY_CALL_ID))
        for _, call_id in self._order[lo:hi]:
            yield self.calls[call_id]

    def _remove(self, call: ScoredCall) -> None:
        self._count(call, -1)
        index = bisect_right(self._order, (call.ts_ms, call.call_id)) - 1
        del self._order[index]

    def _count(self, call: ScoredCall, sign: int) -> None:
        for length in self.needs:
            if self.watermark is None or call.ts_ms > self.watermark - length:
                self._count_in(length, call, sign)

    def _count_in(self, length: int, call: ScoredCall, sign: int) -> None:
        totals = self._totals[length]
        for scope, metric, outcome in call.contributions(self.needs[length]):
            key = (scope, metric)
            entry = totals.get(key)
            if entry is None:
                entry = totals[key] = WindowTotals()
            entry.add(outcome, sign)
            if entry.total == 0:
                del totals[key]
            self.dirty.add((length, scope, metric))
