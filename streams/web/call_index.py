"""Every call of the results topic, as a worker reads it: where its latest result lies (in the result
spool, streams/web/result_spool.py), what is needed to filter and chart it without reading that
document again, and the minute totals of the pass-rate series (scorers/timeseries.py).

Every worker reads the whole results topic (outside the consumer group), so every worker's index
holds every call, whichever worker scored it: `GET /calls/{id}` is answered by the worker asked.
A call counts with its newest version; the same version read again (published again after a crash)
replaces the earlier copy, as in the run summaries; an older version read late changes nothing.

With a window (`CALLQA_VIEW_WINDOW_S`, as the overviews), a call is kept until the index's event time
is that much past the call's own, and then let go with its documents: a worker up for months holds
the calls a worker started now would read back from a results topic that keeps that long. The
index's time is a watermark (scorers/watermarks.py): one call stamped years ahead does not let every
other call go. Per call the index keeps some 870 bytes of memory (docs/reference/http-api.md).
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgspec

from models.results import CallResult
from scorers.call_verdicts import encode_verdicts
from scorers.timeseries import CallPoint, Timeseries, call_scopes
from scorers.watermarks import DEFAULT_MAX_LEAP_MS, Ahead, next_watermark
from streams.web.result_spool import NO_PREVIOUS, ResultSpool


class IndexedCall(msgspec.Struct, gc=False):
    """What the index keeps of a call's latest version (out of the cyclic GC: strings and numbers only)."""

    version: int
    position: int  # of its document in the spool
    time_ms: int  # the call's time: its end, else the event that produced the result
    event_ts_ms: int | None
    ended_ts_ms: int | None
    agent_id: str | None
    run_id: str | None
    cohorts: tuple[str, ...]  # the cohorts with a verdict on it
    verdicts: bytes  # scorers/call_verdicts.py, in the index's metric order
    scores: bytes
    scenario: str | None = None  # an evaluation scenario's name (None: a production call, which has none)
    successful: bool | None = None  # the evaluation's is_successful

    def point(self) -> CallPoint:
        return CallPoint(self.time_ms, call_scopes(self.agent_id, self.cohorts), self.verdicts, self.scores)


# Told of every new version a worker reads: (result, the call's entry before, None for a new call).
NewVersion = Callable[[CallResult, IndexedCall | None], None]
# Told of every call let go (it left the window): (call_id, its entry).
LetGo = Callable[[str, IndexedCall], None]


def call_time(result: CallResult) -> int:
    """When a call happened, for its place in time: its end, else the event that produced the result."""
    if result.ended_ts_ms is not None:
        return result.ended_ts_ms
    return result.event_ts_ms if result.event_ts_ms is not None else 0


def _scenario(result: CallResult) -> str | None:
    name = result.evaluation.get("scenario_name")
    return name if isinstance(name, str) and name != result.call_id else None  # (a call without one: its id)


def _successful(result: CallResult) -> bool | None:
    successful = result.evaluation.get("is_successful")
    return successful if isinstance(successful, bool) else None


class CallIndex:
    def __init__(
        self,
        metric_names: list[str],
        spool_dir: str | None = None,
        window_ms: int = 0,
        max_leap_ms: int = DEFAULT_MAX_LEAP_MS,
    ) -> None:
        self.window_ms = window_ms  # 0: every call, for ever
        self.max_leap_ms = max_leap_ms
        self.clock_ms: int | None = None  # the latest call time read, as a watermark
        self._ahead: Ahead | None = None
        self._kept: list[tuple[int, str, int]] = []  # (time, call_id, version) of each version kept, earliest first
        self.calls_let_go = 0
        self.on_let_go: list[LetGo] = []
        self.metric_names = list(metric_names)
        self.metric_order = {name: place for place, name in enumerate(self.metric_names)}
        self.calls: dict[str, IndexedCall] = {}
        self.series = Timeseries(len(self.metric_names))
        self.spool = ResultSpool(spool_dir)
        self.newest_ms: int | None = None  # the latest call time read
        self.results_read = 0
        self.on_new_version: list[NewVersion] = []
        self._cohort_tuples: dict[tuple[str, ...], tuple[str, ...]] = {}  # one tuple per distinct set

    def add(self, document: bytes, result: CallResult) -> bool:
        """Index a result as published (`document`, decoded as `result`). False: an older version, ignored."""
        self.results_read += 1
        held = self.calls.get(result.call_id)
        if held is not None and result.version < held.version:
            return False
        if held is None:
            previous = NO_PREVIOUS
        elif result.version > held.version:
            previous = held.position
        else:  # the same version again: it replaces the copy read before, which goes
            previous = self.spool.previous(held.position)
            self.spool.release(held.position)
        verdicts, scores = encode_verdicts(result.metrics, self.metric_order)
        cohorts = tuple(v.cohort_id for v in result.cohorts)
        entry = IndexedCall(
            version=result.version,
            position=self.spool.append(document, previous),
            time_ms=call_time(result),
            event_ts_ms=result.event_ts_ms,
            ended_ts_ms=result.ended_ts_ms,
            agent_id=sys.intern(result.agent_id) if result.agent_id else None,
            run_id=sys.intern(result.run_id) if result.run_id else None,
            cohorts=self._cohort_tuples.setdefault(cohorts, cohorts),
            verdicts=verdicts,
            scores=scores,
            scenario=_scenario(result),
            successful=_successful(result),
        )
        if held is not None:
            self.series.add(held.point(), -1)
        self.series.add(entry.point(), +1)
        self.calls[result.call_id] = entry
        if self.newest_ms is None or entry.time_ms > self.newest_ms:
            self.newest_ms = entry.time_ms
        if held is None or result.version > held.version:
            for listener in self.on_new_version:
                listener(result, held)
        if self.window_ms:
            heapq.heappush(self._kept, (entry.time_ms, result.call_id, entry.version))
            self.clock_ms, self._ahead = next_watermark(
                self.clock_ms, self._ahead, entry.time_ms, result.call_id, self.max_leap_ms
            )
            if self.clock_ms is not None:  # (set by the entry just read)
                self._let_go(self.clock_ms - self.window_ms)
        return True

    def _let_go(self, horizon_ms: int) -> None:
        """Let go of the calls whose time is before `horizon_ms`, with their documents."""
        kept = self._kept
        while kept and kept[0][0] < horizon_ms:
            _, call_id, version = heapq.heappop(kept)
            entry = self.calls.get(call_id)
            if entry is None or entry.version != version:
                continue  # (a newer version is kept, or the call went)
            del self.calls[call_id]
            self.series.add(entry.point(), -1)
            for position in self.spool.positions(entry.position):
                self.spool.release(position)
            self.calls_let_go += 1
            for listener in self.on_let_go:
                listener(call_id, entry)

    def document(self, call_id: str) -> bytes | None:
        """The call's latest result as published."""
        entry = self.calls.get(call_id)
        read = None if entry is None else self.spool.read(entry.position)
        return None if read is None else read[1]

    def versions(self, call_id: str) -> list[bytes]:
        """Every version read of the call, oldest first."""
        entry = self.calls.get(call_id)
        return [] if entry is None else self.spool.chain(entry.position)

    def results(self, call_ids: Iterable[str]) -> Iterator[dict[str, Any]]:
        for call_id in call_ids:
            document = self.document(call_id)
            if document is not None:
                yield msgspec.json.decode(document)

    def __len__(self) -> int:
        return len(self.calls)
