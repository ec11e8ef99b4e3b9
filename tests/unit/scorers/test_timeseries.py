"""Pass rates over event time, per minute and scope: a call counts once with its newest version, at
its own time, and a rescore takes the earlier version back exactly."""

from __future__ import annotations

from models.results import MetricResult
from scorers.call_verdicts import encode_verdicts
from scorers.timeseries import CallPoint, Timeseries, call_scopes, default_step_s

ORDER = {"latency": 0, "wer": 1}
T0 = 1_759_741_200_000  # 2025-10-06 09:00 UTC, a whole minute


def point(
    time_ms: int, latency: float | None, wer: float | None = 100.0, agent: str = "a1", cohorts: tuple[str, ...] = ()
) -> CallPoint:
    metrics = [
        MetricResult(
            metric="latency", value=None, score=latency, passed=None if latency is None else latency >= 60, details={}
        ),
        MetricResult(metric="wer", value=None, score=wer, passed=None if wer is None else wer >= 60, details={}),
    ]
    verdicts, scores = encode_verdicts(metrics, ORDER)
    return CallPoint(time_ms, call_scopes(agent, cohorts), verdicts, scores)


def test_calls_are_bucketed_by_their_event_time_with_pass_rate_and_mean_score():
    series = Timeseries(2)
    series.add(point(T0 + 1_000, 80.0))
    series.add(point(T0 + 59_999, 40.0))
    series.add(point(T0 + 60_000, None))  # the next minute; latency did not apply
    first, second = series.buckets("all", 0, T0, T0 + 120_000, 60_000)
    assert (first.calls, first.applied, first.passed, first.to_dict()["pass_rate"], first.to_dict()["mean_score"]) == (
        2,
        2,
        1,
        0.5,
        60.0,
    )
    assert (second.calls, second.applied, second.to_dict()["pass_rate"]) == (1, 0, None)


def test_a_step_adds_its_minutes_and_every_bucket_of_the_range_is_listed():
    series = Timeseries(2)
    for minute in (0, 1, 7):
        series.add(point(T0 + minute * 60_000, 90.0))
    buckets = series.buckets("all", 0, T0, T0 + 15 * 60_000, 5 * 60_000)
    assert [(b.start_ms - T0, b.calls) for b in buckets] == [(0, 2), (300_000, 1), (600_000, 0)]


def test_a_rescore_takes_back_the_earlier_version_exactly():
    series = Timeseries(2)
    before = point(T0, 55.5)
    series.add(before)
    series.add(before, -1)
    series.add(point(T0, 70.1))
    (bucket,) = series.buckets("all", 0, T0, T0 + 60_000, 60_000)
    assert (bucket.calls, bucket.passed, bucket.score_tenths) == (1, 1, 701)
    series.add(point(T0, 70.1), -1)
    assert series.scopes() == set()  # nothing left behind


def test_scopes_count_the_agent_and_each_cohort_with_a_verdict():
    series = Timeseries(2)
    series.add(point(T0, 90.0, agent="a1", cohorts=("billing",)))
    series.add(point(T0, 10.0, agent="a2"))
    assert series.calls("all", T0, T0 + 60_000) == 2
    assert series.buckets("agent:a2", 0, T0, T0 + 60_000, 60_000)[0].passed == 0
    assert series.calls("cohort:billing", T0, T0 + 60_000) == 1


def test_the_default_step_gives_a_readable_number_of_points():
    assert [default_step_s(h * 3_600_000) for h in (1, 24, 24 * 7)] == [60, 300, 3_600]
