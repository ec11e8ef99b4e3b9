"""The API's view of the published results counts the calls of its window in event time: a worker up
for months holds what a worker started now would read back, not every call of its life."""

from __future__ import annotations

import msgspec

from models.results import CallResult
from scorers.cohorts import CohortBook
from scorers.engine import CallEngine
from streams.web.results_view import ResultsView
from tests.helpers.eventkit import T0, event, run_call

MINUTE = 60_000


def finished(call_id: str, ended_at: int, run_id: str = "run-1") -> CallResult:
    book = CohortBook()
    book.apply({"cohort_id": "vip", "name": "VIP", "metrics": [{"metric": "wer"}]})
    _, results = run_call(
        [
            event(
                "call.started",
                {"agent_id": "a1", "run_id": run_id, "cohort_ids": ["vip"]},
                call_id=call_id,
                ts_ms=ended_at - 1_000,
            ),
            event("turn", {"role": "user", "text": "hello there"}, call_id=call_id, ts_ms=ended_at - 500),
            event("call.ended", {"stop_reason": "[EXIT]"}, call_id=call_id, ts_ms=ended_at),
        ],
        CallEngine(cohorts=book),
    )
    return results[-1]


def rescored(result: CallResult, at: int) -> CallResult:
    return msgspec.structs.replace(result, version=result.version + 1, event_ts_ms=at)


def counted(view: ResultsView) -> tuple[int, int]:
    """(calls in the overviews of every cohort, calls in run-1's summary)."""
    calls = sum(o["calls"] for o in view.cohorts.overviews())
    return calls, len(view.runs["run-1"]) if "run-1" in view.runs else 0


def test_a_call_is_let_go_once_the_newest_result_read_is_a_window_later():
    view = ResultsView(window_ms=10 * MINUTE, max_leap_ms=0)  # (any step of time believed: see below)
    a, b = finished("a", T0), finished("b", T0 + 5 * MINUTE)
    view.add(a)
    view.add(b)
    assert counted(view) == (2, 2)
    view.add(finished("c", T0 + 10 * MINUTE + 1))
    assert counted(view) == (2, 2) and view.cohorts.version_of("a") is None and view.calls_let_go == 1
    view.add(finished("d", T0 + 30 * MINUTE, run_id="run-2"))
    assert counted(view) == (1, 0) and "run-1" not in view.runs and list(view.runs) == ["run-2"]


def test_a_rescored_call_counts_from_its_newest_result():
    view = ResultsView(window_ms=10 * MINUTE)
    a = finished("a", T0)
    view.add(a)
    view.add(rescored(a, T0 + 8 * MINUTE))
    view.add(finished("b", T0 + 12 * MINUTE))
    assert view.cohorts.version_of("a") == 2 and counted(view) == (2, 2)
    view.add(finished("c", T0 + 18 * MINUTE + 1))
    assert view.cohorts.version_of("a") is None and counted(view) == (2, 2)


def test_a_result_older_than_the_window_read_late_is_let_go_at_once_and_without_a_window_nothing_is():
    view = ResultsView(window_ms=10 * MINUTE)
    view.add(finished("new", T0 + 60 * MINUTE))
    view.add(finished("old", T0))
    assert counted(view) == (1, 1) and view.cohorts.version_of("old") is None
    forever = ResultsView()
    for call_id, at in (("old", T0), ("new", T0 + 60 * MINUTE)):
        forever.add(finished(call_id, at))
    assert counted(forever) == (2, 2)


def test_one_call_whose_clock_runs_days_fast_lets_no_other_call_go():
    # The view's time is a watermark: one call's leap past it is held until another call bears it out.
    view = ResultsView(window_ms=10 * MINUTE)
    for i in range(5):
        view.add(finished(f"c{i}", T0 + i * MINUTE))
    view.add(finished("fast", T0 + 8 * 24 * 60 * MINUTE))
    assert counted(view) == (6, 6) and view.calls_let_go == 0
    for i in range(5, 10):
        view.add(finished(f"c{i}", T0 + i * MINUTE))
    assert counted(view) == (11, 11)
    view.add(finished("also-fast", T0 + 8 * 24 * 60 * MINUTE + MINUTE))  # (a second call bears the leap out)
    assert counted(view) == (2, 2)
