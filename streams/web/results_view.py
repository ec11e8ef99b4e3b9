"""What a worker knows of the published results, for the HTTP API and the CLI: run summaries and
cohort overviews, kept up to date one result at a time (a newer version replaces the older).

With a window (`CALLQA_VIEW_WINDOW_S`), a call counts until the newest result the view has read is
that much later than its own, in event time: a worker up for months holds the calls of the window,
not of its whole life, and counts what a worker started now would count from a results topic that
keeps that long. A result older than the window, read late, is counted and let go at once. The
view's time is a watermark (scorers/watermarks.py): one call whose clock runs days fast does not
move it on its own, or it would let every other call go.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from models.results import CallResult
from scorers.cohort_overview import CohortOverview
from scorers.runs import RunSummary
from scorers.watermarks import DEFAULT_MAX_LEAP_MS, Ahead, next_watermark


@dataclass
class ResultsView:
    window_ms: int = 0  # 0: every result, for ever
    max_leap_ms: int = DEFAULT_MAX_LEAP_MS  # (CALLQA_MAX_WATERMARK_LEAP_MS)
    runs: dict[str, RunSummary] = field(default_factory=dict)
    cohorts: CohortOverview = field(default_factory=CohortOverview)
    results_seen: int = 0
    calls_let_go: int = 0
    clock_ms: int | None = None  # the latest event time of the results read, as a watermark
    _ahead: Ahead | None = None  # a leap of one call's results, held back
    # (event time, call_id, version, run_id) of each result counted, earliest first.
    _counted: list[tuple[int, str, int, str]] = field(default_factory=list)

    def add(self, result: CallResult) -> None:
        self.results_seen += 1
        self.cohorts.add(result)
        run_id = result.run_id
        if run_id:
            summary = self.runs.get(run_id)
            if summary is None:
                summary = self.runs[run_id] = RunSummary(run_id=run_id)
            summary.add(result)
        if self.window_ms:
            ts = result.event_ts_ms if result.event_ts_ms is not None else result.ended_ts_ms
            if ts is None:  # (not a worker's result: it stamps every one) counted as of now
                ts = self.clock_ms or 0
            heapq.heappush(self._counted, (ts, result.call_id, result.version, run_id or ""))
            self.clock_ms, self._ahead = next_watermark(
                self.clock_ms, self._ahead, ts, result.call_id, self.max_leap_ms
            )
            if self.clock_ms is not None:  # (set by the result just read)
                self._let_go(self.clock_ms - self.window_ms)

    def _let_go(self, horizon_ms: int) -> None:
        """Stop counting the calls whose newest result is older than `horizon_ms`."""
        counted = self._counted
        while counted and counted[0][0] < horizon_ms:
            _, call_id, version, run_id = heapq.heappop(counted)
            if self.cohorts.version_of(call_id) == version:  # (else a newer version counts, or it went)
                self.cohorts.remove(call_id)
                self.calls_let_go += 1
            summary = self.runs.get(run_id) if run_id else None
            if summary is not None and summary.version_of(call_id) == version:
                summary.remove_call(call_id)
                if not len(summary):
                    del self.runs[run_id]
