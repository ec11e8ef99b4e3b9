"""Latency: the nearest-rank median of the call's handoff latency samples, 100 at ≤ 1 s, 0 at 4 s."""

import pytest

from tests.helpers.eventkit import event
from tests.helpers.qa_kit import scored


def latencies(*values_ms):
    return [event("latency", {"latency_ms": v}) for v in values_ms]


def test_call_without_latency_samples_is_not_applicable():
    m = scored("latency", event("turn", {"role": "agent", "text": "Hello"}))
    assert (m.value, m.score, m.passed) == (None, None, None)
    assert m.details["reason"] == "No latency samples"


def test_value_is_the_median_and_details_hold_the_full_statistics():
    # sorted [800, 1200, 3000]: p50 = s[1] = 1200; p90 = s[int(2.7)] = s[2]; p95, p99 = s[2].
    # score 100 * (4000 - 1200) / 3000 = 93.333… → 93.3. mean (800 + 1200 + 3000) / 3 = 1666.66…
    m = scored("latency", *latencies(3000, 800, 1200))
    assert (m.value, m.score, m.passed) == (1200, 93.3, True)
    e2e = m.details["e2e"]
    assert e2e["count"] == 3
    assert e2e["mean"] == pytest.approx(5000 / 3)
    assert (e2e["p50"], e2e["p90"], e2e["p95"], e2e["p99"], e2e["min"], e2e["max"]) == (
        1200,
        3000,
        3000,
        3000,
        800,
        3000,
    )


def test_median_of_an_even_count_is_the_upper_middle_sample():
    # nearest rank, no interpolation: [100, 200, 300, 400] → s[4 // 2] = 300, not 250.
    m = scored("latency", *latencies(100, 200, 300, 400))
    assert m.value == 300


def test_percentiles_are_nearest_rank():
    # 100, 200, …, 2000 (n = 20): p50 = s[10] = 1100, p90 = s[18] = 1900, p95 = s[19] = 2000, p99 = s[19].
    m = scored("latency", *latencies(*range(100, 2001, 100)))
    e2e = m.details["e2e"]
    assert (e2e["p50"], e2e["p90"], e2e["p95"], e2e["p99"]) == (1100, 1900, 2000, 2000)
    assert e2e["mean"] == 1050.0


@pytest.mark.parametrize(
    ("p50_ms", "score", "passed"),
    [
        (400, 100.0, True),
        (1000, 100.0, True),  # 100 at 1000 ms or less
        (2200, 60.0, True),  # 100 * 1800 / 3000 = 60, exactly the threshold
        (2203, 59.9, False),  # 100 * 1797 / 3000 = 59.9
        (2500, 50.0, False),
        (4000, 0.0, False),  # 0 at 4000 ms
        (6000, 0.0, False),
    ],
)
def test_score_falls_linearly_from_1000_to_4000_ms(p50_ms, score, passed):
    m = scored("latency", *latencies(p50_ms))
    assert (m.value, m.score, m.passed) == (p50_ms, score, passed)


def test_score_is_rounded_to_one_decimal():
    # 100 * (4000 - 1235) / 3000 = 92.1666… → 92.2.
    m = scored("latency", *latencies(1235))
    assert m.score == 92.2


def test_samples_come_from_turn_timings_without_other_sources():
    # user turn ends at 2000, the agent starts at 3500 → one sample of 1500 ms; 100 * 2500 / 3000 = 83.3.
    m = scored(
        "latency",
        event("turn", {"role": "user", "text": "hi", "start_ms": 0, "end_ms": 2000}),
        event("turn", {"role": "agent", "text": "hello", "start_ms": 3500, "end_ms": 4000}),
    )
    assert (m.value, m.score, m.details["e2e"]["count"]) == (1500, 83.3, 1)


def metrics(side="agent", **data):
    return event("rtvi", {"side": side, "message": {"label": "rtvi-ai", "type": "metrics", "data": data}})


def test_details_hold_each_agent_services_time_to_first_byte_in_ms():
    m = scored(
        "latency",
        *latencies(1200),
        metrics(
            ttfb=[
                {"processor": "OpenAILLMService#0", "model": "gpt-4o", "value": 0.4},
                {"processor": "CartesiaTTSService#0", "value": 0.15},
            ]
        ),
        metrics(
            ttfb=[{"processor": "OpenAILLMService#0", "value": 0.9}, {"value": 0.2}],
            tokens=[{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}],
        ),
        # not measurements: the user side's, negative, NaN, a string, a bool, not an entry
        metrics(side="user", ttfb=[{"processor": "OpenAILLMService#0", "value": 9.0}]),
        metrics(
            ttfb=[
                {"processor": "OpenAILLMService#0", "value": -0.1},
                {"processor": "x", "value": float("nan")},
                {"processor": "x", "value": "0.3"},
                {"processor": "x", "value": True},
                0.5,
            ]
        ),
        metrics(ttfb={"processor": "x", "value": 0.3}),
    )
    assert m.value == 1200  # the score stays the handoff's: TTFB is part of each handoff, not a sample
    ttfb = m.details["ttfb"]
    assert list(ttfb) == ["CartesiaTTSService#0", "OpenAILLMService#0", "unnamed"]
    assert ttfb["OpenAILLMService#0"] == {
        "count": 2,
        "mean": 650.0,
        "p50": 900.0,
        "p90": 900.0,
        "p95": 900.0,
        "p99": 900.0,
        "min": 400.0,
        "max": 900.0,
    }
    assert ttfb["CartesiaTTSService#0"]["p50"] == 150.0 and ttfb["unnamed"]["p50"] == 200.0


def test_no_ttfb_reported_leaves_the_details_without_it():
    assert "ttfb" not in scored("latency", *latencies(1200), metrics(ttfb=[])).details
