"""Pass rates over event time: per scope (`all`, `agent:<id>`, `cohort:<id>`) and per minute of event
time, how many calls there were and, per metric, where it applied, passed and the sum of its scores.

Kept up to date one result at a time, as the cohort overview is: a call counts once, with its newest
version, at its own time (its end); a rescore takes back what the earlier version added. Minute
totals are exact integers (scores in tenths), so taking back leaves nothing behind. A query adds the
minutes of its range into buckets of `step`: 24 hours are 1,440 minutes to add, whatever the number
of calls. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from scorers.call_verdicts import NA, NOT_LISTED, PASS, decode_scores

MINUTE_MS = 60_000
SCOPE_ALL = "all"


@dataclass(frozen=True, slots=True)
class CallPoint:
    """What one version of a call adds to the series."""

    time_ms: int
    scopes: tuple[str, ...]  # `all`, `agent:<id>`, `cohort:<id>`
    verdicts: bytes  # scorers/call_verdicts.py
    scores: bytes


@dataclass(frozen=True, slots=True)
class Bucket:
    start_ms: int
    calls: int
    applied: int
    passed: int
    score_tenths: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "start_ms": self.start_ms,
            "calls": self.calls,
            "applied": self.applied,
            "passed": self.passed,
            "pass_rate": round(self.passed / self.applied, 4) if self.applied else None,
            "mean_score": round(self.score_tenths / self.applied / 10, 1) if self.applied else None,
        }


class Timeseries:
    def __init__(self, metric_count: int) -> None:
        self.metric_count = metric_count
        # (scope, minute) -> [calls, applied_0, passed_0, score_tenths_0, applied_1, ...]
        self._minutes: dict[tuple[str, int], list[int]] = {}

    def add(self, point: CallPoint, sign: int = 1) -> None:
        """Count a call's version (`sign` -1: take it back)."""
        minute = point.time_ms // MINUTE_MS
        scores = decode_scores(point.scores)
        # What the call adds, worked out once for all its scopes: (place in the totals, amount).
        changes = [(0, sign)]
        for place, verdict in enumerate(point.verdicts):
            if verdict in (NOT_LISTED, NA):
                continue
            at = 1 + 3 * place
            changes.append((at, sign))
            if verdict == PASS:
                changes.append((at + 1, sign))
            changes.append((at + 2, sign * scores[place]))
        width = 1 + 3 * self.metric_count
        for scope in point.scopes:
            key = (scope, minute)
            totals = self._minutes.get(key)
            if totals is None:
                totals = self._minutes[key] = [0] * width
            for at, amount in changes:
                totals[at] += amount
            if totals[0] == 0:
                del self._minutes[key]

    def buckets(self, scope: str, place: int, from_ms: int, to_ms: int, step_ms: int) -> list[Bucket]:
        """The buckets of `step_ms` from `from_ms` (a whole minute) to `to_ms` for the metric at `place`.
        `step_ms` is a whole number of minutes."""
        return self.table(scope, from_ms, to_ms, step_ms)[place]

    def table(self, scope: str, from_ms: int, to_ms: int, step_ms: int) -> list[list[Bucket]]:
        """Every metric's buckets (by place), from one pass over the range's minutes."""
        count = max(0, -(-(to_ms - from_ms) // step_ms))
        width = 1 + 3 * self.metric_count
        sums = [[0] * width for _ in range(count)]
        first, last = from_ms // MINUTE_MS, -(-to_ms // MINUTE_MS)
        per_bucket = step_ms // MINUTE_MS
        minutes = self._minutes
        for minute in range(first, last):
            totals = minutes.get((scope, minute))
            if totals is None:
                continue
            bucket = sums[(minute - first) // per_bucket]
            for at, value in enumerate(totals):
                if value:
                    bucket[at] += value
        return [
            [
                Bucket(from_ms + i * step_ms, s[0], s[1 + 3 * place], s[2 + 3 * place], s[3 + 3 * place])
                for i, s in enumerate(sums)
            ]
            for place in range(self.metric_count)
        ]

    def calls(self, scope: str, from_ms: int, to_ms: int) -> int:
        first, last = from_ms // MINUTE_MS, -(-to_ms // MINUTE_MS)
        return sum(self._minutes.get((scope, minute), (0,))[0] for minute in range(first, last))

    def scopes(self) -> set[str]:
        return {scope for scope, _ in self._minutes}


def call_scopes(agent_id: str | None, cohort_ids: Iterable[str]) -> tuple[str, ...]:
    """The scopes a call counts in: everything, its agent, each cohort with a verdict on it."""
    scopes = [SCOPE_ALL]
    if agent_id:
        scopes.append(f"agent:{agent_id}")
    scopes.extend(f"cohort:{cohort_id}" for cohort_id in cohort_ids)
    return tuple(scopes)


def default_step_s(span_ms: int) -> int:
    """A step that gives a chart some 24 to 300 points: a minute up to 2 h, 5 minutes up to 24 h, an hour beyond."""
    if span_ms <= 2 * 3_600_000:
        return 60
    if span_ms <= 24 * 3_600_000:
        return 300
    return 3_600
