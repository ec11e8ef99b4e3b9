"""The always-present metrics.json fields that need no judge, each with a hand-computed value."""

from __future__ import annotations

from tests.helpers.eventkit import T0, event, run_call


def rtvi(kind: str, side: str = "agent", data=None, ts: int | None = None):
    return event("rtvi", {"side": side, "message": {"label": "rtvi-ai", "type": kind, "data": data}}, ts_ms=ts)


def evaluation(events):
    _, results = run_call(events)
    return results[-1].evaluation


def started(**data):
    return event("call.started", {"agent_id": "a1", **data}, ts_ms=T0)


def ended(ts_offset_ms: int, stop_reason: str = "[EXIT]"):
    return event("call.ended", {"stop_reason": stop_reason}, ts_ms=T0 + ts_offset_ms)


def test_scenario_name_comes_from_the_scenario_and_falls_back_to_the_call_id():
    named = evaluation([started(scenario={"name": "airline__rebook_003"}), ended(1000)])
    unnamed = evaluation([started(), ended(1000)])
    assert named["scenario_name"] == "airline__rebook_003"
    assert unnamed["scenario_name"] == "c1"


def test_turns_and_total_turns_list_every_turn_in_order_with_iso_timestamps():
    ev = evaluation(
        [
            started(),
            event("turn", {"role": "user", "text": "hi"}, ts_ms=T0 + 1500),
            event("turn", {"role": "agent", "text": "hello"}, ts_ms=T0 + 2250),
            ended(3000),
        ]
    )
    # T0 = 1_760_000_000_000 ms = 2025-10-09T08:53:20Z
    assert ev["total_turns"] == 2
    assert ev["turns"] == [
        {"timestamp": "2025-10-09T08:53:21.500+00:00", "role": "user", "text": "hi"},
        {"timestamp": "2025-10-09T08:53:22.250+00:00", "role": "agent", "text": "hello"},
    ]


def test_duration_seconds_runs_from_call_started_to_call_ended_in_event_time():
    ev = evaluation([started(), ended(12_345)])
    assert ev["duration_seconds"] == 12.345


def test_latency_stats_are_nearest_rank_over_the_latency_samples():
    samples = [900, 1200, 700, 3000, 1100]
    events = [started()] + [event("latency", {"latency_ms": ms}) for ms in samples] + [ended(9000)]
    ev = evaluation(events)
    # sorted: 700 900 1100 1200 3000; n=5: p50 = s[5//2] = s[2] = 1100; p95 = s[int(4.75)] = s[4] = 3000
    assert ev["latency_stats"] == {
        "count": 5,
        "mean_ms": 1380.0,
        "p50_ms": 1100.0,
        "p95_ms": 3000.0,
        "min_ms": 700.0,
        "max_ms": 3000.0,
    }
    assert [entry["latency_ms"] for entry in ev["latencies"]] == [900.0, 1200.0, 700.0, 3000.0, 1100.0]


def test_latency_stats_are_all_zero_without_samples():
    ev = evaluation([started(), ended(1000)])
    assert ev["latency_stats"] == {
        "count": 0,
        "mean_ms": 0.0,
        "p50_ms": 0.0,
        "p95_ms": 0.0,
        "min_ms": 0.0,
        "max_ms": 0.0,
    }
    assert ev["latencies"] == []


def test_latencies_derived_from_speaking_events_carry_both_transcripts():
    ev = evaluation(
        [
            started(),
            event("turn", {"role": "user", "text": "where is my order"}, ts_ms=T0 + 900),
            rtvi("user-stopped-speaking", ts=T0 + 1000),
            rtvi("bot-started-speaking", ts=T0 + 2350),
            event("turn", {"role": "agent", "text": "it ships today"}, ts_ms=T0 + 2400),
            ended(5000),
        ]
    )
    # user stopped at +1000, bot started at +2350: one handoff of 1350 ms
    assert ev["latencies"] == [
        {"user_transcript": "where is my order", "agent_transcript": "it ships today", "latency_ms": 1350.0}
    ]


def test_stop_reason_is_the_call_ended_reason():
    assert evaluation([started(), ended(1000, "[SIMULATOR_EXIT]")])["stop_reason"] == "[SIMULATOR_EXIT]"


def test_inactivity_timeout_seconds_defaults_to_120_and_follows_call_started():
    assert evaluation([started(), ended(1000)])["inactivity_timeout_seconds"] == 120.0
    assert evaluation([started(inactivity_timeout_s=45), ended(1000)])["inactivity_timeout_seconds"] == 45.0


def test_last_speaker_is_the_role_of_the_final_turn_or_null():
    document = evaluation([started(), event("turn", {"role": "agent", "text": "bye"}), ended(1000)])
    assert document["last_speaker"] == "agent"
    assert evaluation([started(), ended(1000)])["last_speaker"] is None


def test_token_usage_counts_each_tokens_entry_as_one_llm_call_per_side():
    tokens = lambda p, c: {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}  # noqa: E731
    ev = evaluation(
        [
            started(),
            rtvi("metrics", data={"tokens": [tokens(100, 20), tokens(150, 30)]}),
            rtvi("metrics", data={"ttfb": [{"processor": "OpenAILLMService#0", "value": 0.4}]}),
            rtvi("metrics", side="user", data={"tokens": [tokens(80, 10)]}),
            ended(1000),
        ]
    )
    # agent: 2 calls, 100+150 prompt, 20+30 completion; user: 1 call
    assert ev["token_usage"] == {
        "agent": {"n_calls": 2, "prompt": 250, "completion": 50},
        "user": {"n_calls": 1, "prompt": 80, "completion": 10},
    }


def test_auto_retry_count_counts_discarded_attempts_and_lists_their_reasons():
    ev = evaluation(
        [
            event("attempt.discarded", {"reason": "0 conversation turns (bots never exchanged audio)"}),
            event("attempt.discarded", {"reason": "stale"}),
            started(),
            ended(1000),
        ]
    )
    assert ev["auto_retry_count"] == 2
    assert ev["auto_retry_reasons"] == ["0 conversation turns (bots never exchanged audio)", "stale"]
    without = evaluation([started(), ended(1000)])
    assert without["auto_retry_count"] == 0 and "auto_retry_reasons" not in without


def test_a_discarded_attempts_turns_tokens_and_latencies_are_dropped_and_the_call_keeps_its_start():
    def tokens():
        return rtvi("metrics", data={"tokens": [{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}]})

    engine, results = run_call(
        [
            started(scenario={"name": "s1", "min_agent_turns": 2}),
            event("turn", {"role": "agent", "text": "hello"}),
            tokens(),
            event("latency", {"latency_ms": 9000}),
            event("attempt.discarded", {"reason": "stale"}),  # the harness re-runs the scenario: attempt 2
            event("turn", {"role": "agent", "text": "hello again"}),
            tokens(),
            event("turn", {"role": "user", "text": "hi"}),
            event("latency", {"latency_ms": 1000}),
            ended(1000),
        ]
    )
    ev = results[-1].evaluation
    assert ev["scenario_name"] == "s1" and results[-1].agent_id == "a1"  # call.started came in attempt 1
    assert ev["auto_retry_count"] == 1 and ev["auto_retry_reasons"] == ["stale"]
    assert ev["total_turns"] == 2 and ev["token_usage"]["agent"]["n_calls"] == 1
    assert ev["latency_stats"]["count"] == 1 and ev["latency_stats"]["p50_ms"] == 1000.0
    latency = next(m for m in results[-1].metrics if m.metric == "latency")
    assert latency.value == 1000 and latency.score == 100.0
    assert ev["insufficient_agent_turns"] is True  # one LLM call in the accepted attempt, below the floor of 2
    assert [t.text for t in engine.calls["c1"].turns] == ["hello again", "hi"]


def test_the_accepted_attempt_measures_its_duration_from_the_last_discard():
    _, results = run_call(
        [
            started(),
            event("attempt.discarded", {"reason": "stale"}, ts_ms=T0 + 90_000),
            event("turn", {"role": "user", "text": "hi", "start_ms": 0, "end_ms": 1000}, ts_ms=T0 + 91_000),
            event("turn", {"role": "agent", "text": "hello", "start_ms": 500, "end_ms": 1500}, ts_ms=T0 + 92_000),
            ended(100_000),
        ]
    )
    ev = results[-1].evaluation
    assert (ev["duration_seconds"], ev["scenario_duration"]) == (10.0, 100.0)
    overlap = next(m for m in results[-1].metrics if m.metric == "overlapping_speech")
    assert overlap.details["call_length_ms"] == 10_000.0
    # A discard before the call started (the harness's stale first attempt) moves nothing.
    _, results = run_call([event("attempt.discarded", {"reason": "stale"}, ts_ms=T0 - 5_000), started(), ended(10_000)])
    assert results[-1].evaluation["duration_seconds"] == 10.0


def test_streamed_audio_levels_do_not_hold_a_silent_call_open():
    engine, _ = run_call(
        [started(inactivity_timeout_s=60), event("turn", {"role": "user", "text": "hi"}, ts_ms=T0 + 2_000)]
        + [
            rtvi(kind, side="user", data={"value": 0.0}, ts=T0 + 3_000 + 1_000 * i)
            for i, kind in enumerate(["user-audio-level", "bot-audio-level"] * 150)
        ]
    )
    assert engine.calls["c1"].inactivity_deadline_ms() == T0 + 2_000 + 60_000  # from the user's turn
    engine, _ = run_call([rtvi("user-audio-level", side="user", data={"value": 0.0}, ts=T0)])
    assert engine.calls["c1"].inactivity_deadline_ms() == T0 + 120_000  # a call's first event starts its clock
