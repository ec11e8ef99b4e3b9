"""The call index of the results topic: a call's latest version and every version before it, lists
filtered and paged newest first, and the series, as a worker reads them from the topic."""

from __future__ import annotations

import msgspec
import pytest

from models.results import CallResult, CohortVerdict, MetricResult
from scorers.version_history import version_history
from streams.web.call_index import CallIndex
from streams.web.call_list import CallFilter, list_calls
from streams.web.query_params import QueryError

T0 = 1_759_741_200_000
METRICS = ["latency", "sentiment"]


def result(
    call_id: str,
    version: int = 1,
    ended: int = T0,
    latency: float = 80.0,
    sentiment: float | None = None,
    agent: str = "a1",
    cohorts: tuple[str, ...] = (),
    run_id: str | None = None,
) -> CallResult:
    return CallResult(
        call_id=call_id,
        version=version,
        final=True,
        agent_id=agent,
        cohort_ids=list(cohorts),
        run_id=run_id,
        ended_ts_ms=ended,
        event_ts_ms=ended + version,
        evaluation={},
        metrics=[
            MetricResult(metric="latency", value=1.0, score=latency, passed=latency >= 60, details={}),
            MetricResult(
                metric="sentiment",
                value=None,
                score=sentiment,
                passed=None if sentiment is None else sentiment >= 60,
                details={},
            ),
        ],
        cohorts=[
            CohortVerdict(cohort_id=c, weighted_score=latency, passed=True, metrics_counted=["latency"])
            for c in cohorts
        ],
    )


def indexed(*results: CallResult) -> CallIndex:
    index = CallIndex(METRICS)
    for r in results:
        index.add(msgspec.json.encode(r), r)
    return index


def test_the_latest_version_is_answered_as_published_and_an_older_one_read_late_changes_nothing():
    v2 = result("c1", 2, latency=30.0)
    index = indexed(result("c1", 1), v2, result("c1", 1))
    assert index.document("c1") == msgspec.json.encode(v2)
    assert [msgspec.json.decode(d)["version"] for d in index.versions("c1")] == [1, 2]


def test_the_same_version_read_again_replaces_the_copy_before_it():
    again = result("c1", 1, latency=40.0)
    index = indexed(result("c1", 1), again)
    assert index.versions("c1") == [msgspec.json.encode(again)]
    assert index.series.calls("all", T0, T0 + 60_000) == 1


def test_a_rescore_moves_the_calls_verdict_in_the_series():
    index = indexed(result("c1", 1, latency=30.0), result("c1", 2, latency=90.0))
    (bucket,) = index.series.buckets("all", 0, T0, T0 + 60_000, 60_000)
    assert (bucket.calls, bucket.applied, bucket.passed) == (1, 1, 1)


def test_calls_are_listed_newest_first_and_paged_with_the_cursor():
    index = indexed(*(result(f"c{i}", ended=T0 + i * 1000) for i in range(5)))
    first = list_calls(index, CallFilter(), limit=2)
    second = list_calls(index, CallFilter(), limit=2, cursor=first["next_cursor"])
    third = list_calls(index, CallFilter(), limit=2, cursor=second["next_cursor"])
    assert [[row["call_id"] for row in page["calls"]] for page in (first, second, third)] == [
        ["c4", "c3"],
        ["c2", "c1"],
        ["c0"],
    ]
    assert third["next_cursor"] is None


def test_filters_by_agent_cohort_run_metric_verdict_and_time():
    index = indexed(
        result("pass", latency=90.0, agent="a1", cohorts=("billing",), run_id="r1"),
        result("fail", ended=T0 + 60_000, latency=20.0, agent="a2"),
        result("annotated", ended=T0 + 120_000, sentiment=100.0),
    )

    def ids(**where) -> list[str]:
        return [row["call_id"] for row in list_calls(index, CallFilter(**where))["calls"]]

    assert ids(agent_id="a2") == ["fail"]
    assert ids(cohort_id="billing") == ids(run_id="r1") == ["pass"]
    assert ids(metric="latency", verdict="fail") == ["fail"]
    assert ids(metric="sentiment", verdict="na") == ["fail", "pass"]
    assert ids(verdict="fail") == ["fail"]
    assert ids(from_ms=T0 + 60_000, to_ms=T0 + 120_000) == ["fail"]


def test_a_row_names_its_metrics_by_verdict():
    (row,) = list_calls(indexed(result("c1", latency=20.0)), CallFilter())["calls"]
    assert (row["failed"], row["passed"], row["na"], row["time_ms"]) == (["latency"], [], ["sentiment"], T0)


def test_an_unknown_metric_or_a_cursor_not_given_by_the_api_is_refused():
    index = indexed(result("c1"))
    with pytest.raises(QueryError, match="'metric'"):
        list_calls(index, CallFilter(metric="latncy"))
    with pytest.raises(QueryError, match="'cursor'"):
        list_calls(index, CallFilter(), cursor="not-a-cursor")


def test_each_version_says_what_changed_and_why():
    v1 = msgspec.to_builtins(result("c1", 1))
    v2 = msgspec.to_builtins(result("c1", 2, sentiment=100.0))
    history = version_history([v1, v2])
    assert [(h["version"], h["cause"]) for h in history] == [(1, "end"), (2, "annotation")]
    assert history[1]["changes"] == [
        {"name": "sentiment", "before": {"score": None, "passed": None}, "after": {"score": 100.0, "passed": True}}
    ]


def test_a_cohorts_overview_over_a_range_counts_the_calls_of_that_range():
    from streams.web.series_query import windowed_overview

    index = indexed(
        result("early", ended=T0, cohorts=("billing",)),
        result("late", ended=T0 + 3_600_000, cohorts=("billing",)),
        result("other", ended=T0 + 3_600_000),
    )
    assert windowed_overview(index, "billing", {"from": T0 + 1, "to": T0 + 7_200_000})["calls"] == 1
    assert windowed_overview(index, "billing", {"window_s": 7_200})["calls"] == 2
    assert windowed_overview(index, "billing", {"window_s": 60})["calls"] == 1
    with pytest.raises(QueryError, match="'window_s'"):
        windowed_overview(index, "billing", {"window_s": 60, "from": T0})


def test_a_row_names_the_evaluation_scenario_its_domain_and_success():
    evaluated = msgspec.structs.replace(
        result("c1", run_id="r1"), evaluation={"scenario_name": "telecom__bill_001", "is_successful": False}
    )
    production = msgspec.structs.replace(result("c2"), evaluation={"scenario_name": "c2"})
    rows = {row["call_id"]: row for row in list_calls(indexed(evaluated, production), CallFilter())["calls"]}
    assert (rows["c1"]["scenario"], rows["c1"]["domain"], rows["c1"]["is_successful"]) == (
        "telecom__bill_001",
        "telecom",
        False,
    )
    assert (rows["c2"]["scenario"], rows["c2"]["domain"], rows["c2"]["is_successful"]) == (None, None, None)


def test_a_call_older_than_the_window_is_let_go_with_its_documents():
    from streams.web.result_spool import ResultSpool

    index = CallIndex(METRICS, window_ms=3_600_000)
    index.spool = ResultSpool(segment_bytes=1)  # (a segment a record: each can go on its own)
    for r in (result("old", 1, ended=T0), result("old", 2, ended=T0), result("new", ended=T0 + 3_599_999)):
        index.add(msgspec.json.encode(r), r)
    assert set(index.calls) == {"old", "new"}  # (within the hour)
    later = result("later", ended=T0 + 3_600_001)
    index.add(msgspec.json.encode(later), later)
    assert set(index.calls) == {"new", "later"} and index.calls_let_go == 1
    assert index.series.calls("all", T0, T0 + 60_000) == 0
    assert (
        index.spool.segments() == 2 and index.versions("old") == []
    )  # (old's two versions went; new's and later's stay)


def test_one_call_stamped_far_ahead_does_not_let_every_other_call_go():
    index = CallIndex(METRICS, window_ms=3_600_000, max_leap_ms=600_000)
    for r in (result("c1", ended=T0), result("fast-clock", ended=T0 + 365 * 86_400_000), result("c2", ended=T0 + 1000)):
        index.add(msgspec.json.encode(r), r)
    assert set(index.calls) == {"c1", "c2", "fast-clock"}
