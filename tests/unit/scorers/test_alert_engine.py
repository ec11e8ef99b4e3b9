"""The alert engine: event-time windows per scope and metric, and the episode state machine.

The generated streams (tests/alertkit.py) end one call per agent every 10 s; agent k's call of second
s ends at T0 + s*1000 + k ms. With a 300 s window an agent's window holds its last 30 calls, so "n
failing calls" means a pass rate of (30 - n)/30. Agent a1's calls end at second s + 1 ms, so an
alert raised by a1's call of second s carries event time T0 + s*1000 + 1.
"""

from __future__ import annotations

import msgspec
import pytest

from models.alert_rules import AlertRule
from scorers.alerting.calls import scored_call
from scorers.alerting.engine import AlertEngine
from scorers.alerting.windows import EventTimeWindows
from tests.helpers.alertkit import T0, agent_stream, result

RULE = AlertRule(
    name="agent latency",
    scope="agent:*",
    metric="latency",
    window_s=300,
    fire_below=0.5,
    clear_above=0.8,
    min_calls=5,
    for_s=60,
    severity="critical",
)


def latency_windows(*lengths_ms: int) -> EventTimeWindows:
    """Windows of these lengths keeping the latency aggregates of every scope kind."""
    kinds = frozenset({("all", "latency"), ("agent", "latency"), ("cohort", "latency")})
    return EventTimeWindows(dict.fromkeys(lengths_ms, kinds))


def rule(**changes) -> AlertRule:
    return msgspec.structs.replace(RULE, **changes)


def run(stream: list[dict], *rules: AlertRule) -> tuple[AlertEngine, list[dict]]:
    engine = AlertEngine(rules or [RULE])
    alerts = [alert for r in stream for alert in engine.observe(r)]
    return engine, alerts


def at(second: int, agent: int = 1) -> int:
    return T0 + second * 1000 + agent


def a1_fails_between(start: int, end: int):
    return lambda agent, s: agent == "a1" and start <= s < end


def states(alerts: list[dict]) -> list[tuple[str, str, int]]:
    return [(a["state"], a["scope"], a["event_ts_ms"]) for a in alerts]


# ------------------------------------------------------------------------------------- windows


def test_a_window_counts_scored_calls_passes_and_average_score_per_scope_and_metric():
    windows = latency_windows(300_000)
    for r in [
        result("c1", "a1", T0, True, score=90.0, cohort_ids=["billing"]),
        result("c2", "a1", T0 + 1, False, score=40.0),
        result("c3", "a2", T0 + 2, True, score=80.0, cohort_ids=["billing"]),
    ]:
        windows.put(scored_call(r))
    totals = windows.totals(300_000, "all", "latency")
    # all: 3 calls, 2 passed, (90 + 40 + 80) / 3 = 70.0
    assert (totals.total, totals.passed, totals.average_score) == (3, 2, 70.0)
    a1 = windows.totals(300_000, "agent:a1", "latency")
    assert (a1.total, a1.passed, a1.average_score) == (2, 1, 65.0)  # (90 + 40) / 2
    billing = windows.totals(300_000, "cohort:billing", "latency")
    assert (billing.total, billing.passed, billing.average_score) == (2, 2, 85.0)  # (90 + 80) / 2


def test_a_metric_that_did_not_apply_is_not_counted():
    windows = latency_windows(300_000)
    windows.put(scored_call(result("c1", "a1", T0, None)))
    assert windows.totals(300_000, "all", "latency").total == 0


def test_calls_leave_the_window_once_the_watermark_passes_them():
    windows = latency_windows(300_000)
    windows.put(scored_call(result("old", "a1", T0, False)))
    windows.put(scored_call(result("edge", "a1", T0 + 1, True)))
    # Watermark T0 + 300_001: the window is (T0 + 1, T0 + 300_001]; "old" and "edge" have left it.
    windows.put(scored_call(result("new", "a1", T0 + 300_001, True)))
    assert windows.totals(300_000, "all", "latency").total == 1
    # Watermark T0 + 300_000 would still hold "edge": the window is open at the start only.
    other = latency_windows(300_000)
    other.put(scored_call(result("edge", "a1", T0 + 1, True)))
    other.put(scored_call(result("new", "a1", T0 + 300_000, True)))
    assert other.totals(300_000, "all", "latency").total == 2


def test_a_rescore_replaces_the_calls_contribution_and_an_older_version_changes_nothing():
    windows = latency_windows(300_000)
    windows.put(scored_call(result("c1", "a1", T0, True, score=90.0)))
    windows.put(scored_call(result("c1", "a1", T0, False, score=20.0, version=2, event_ts_ms=T0 + 60_000)))
    taken, _ = windows.put(scored_call(result("c1", "a1", T0, True, score=90.0)))  # redelivered v1
    totals = windows.totals(300_000, "agent:a1", "latency")
    assert not taken and (totals.total, totals.passed, totals.average_score) == (1, 0, 20.0)


def test_results_seen_with_no_rule_in_force_are_unwatched_neither_counted_nor_stale():
    engine = AlertEngine()
    for second in (0, 1, 2, 1):  # the last one behind the newest: what read as late before
        engine.observe(result(f"c{second}", "a1", at(second), True))
    assert (engine.counters.unwatched, engine.counters.counted, engine.counters.stale) == (4, 0, 0)
    engine.set_rules([rule()])
    engine.observe(result("c3", "a1", at(3), True))
    engine.observe(result("c3", "a1", at(3), True))  # the version already counted
    assert (engine.counters.unwatched, engine.counters.counted, engine.counters.stale) == (4, 1, 0)
    assert engine.counters.repeated == 1


def test_a_redelivered_version_is_repeated_and_a_result_behind_every_window_is_stale():
    engine = AlertEngine([rule()])
    engine.observe(result("c0", "a1", at(0), True))
    engine.observe(result("c0", "a1", at(0), True))  # redelivered after a restart: harmless
    engine.observe(result("c8", "a1", at(100_000), True))  # time moves far on (two calls bear it out)
    engine.observe(result("c9", "a1", at(100_001), True))
    engine.observe(result("c1", "a1", at(1), True))  # behind every window: alerting lost it
    assert (engine.counters.counted, engine.counters.repeated, engine.counters.stale) == (3, 1, 1)


def test_an_older_version_read_after_a_newer_one_is_superseded_not_repeated():
    # Results count in event time: a judge's answer (version 3, stamped just after the end) comes
    # before the annotation made a minute later (version 2, which version 3 already holds).
    engine = AlertEngine([rule()])
    engine.observe(result("c0", "a1", at(0), True, version=3, event_ts_ms=at(0) + 1))
    engine.observe(result("c0", "a1", at(0), True, version=2, event_ts_ms=at(60)))
    assert (engine.counters.counted, engine.counters.superseded, engine.counters.repeated) == (1, 1, 0)
    engine.observe(result("c0", "a1", at(0), True, version=3, event_ts_ms=at(0) + 1))  # read again
    assert (engine.counters.counted, engine.counters.superseded, engine.counters.repeated) == (1, 1, 1)


def test_a_late_call_inside_the_window_counts_and_one_older_than_the_longest_window_is_dropped():
    windows = latency_windows(60_000, 300_000)
    windows.put(scored_call(result("now", "a1", T0 + 400_000, True)))
    late, _ = windows.put(scored_call(result("late", "a1", T0 + 200_000, False)))
    too_late, _ = windows.put(scored_call(result("too-late", "a1", T0 + 100_000, False)))
    assert late and not too_late
    assert windows.totals(300_000, "all", "latency").total == 2  # now + late
    assert windows.totals(60_000, "all", "latency").total == 1  # late is 200 s old


def test_memory_holds_only_the_calls_of_the_longest_window():
    engine, _ = run(agent_stream(2000, lambda agent, s: False))
    # 300 s at one call per agent every 10 s: 30 calls per agent, 3 agents.
    assert len(engine.windows.calls) == 90


def test_the_samples_name_failing_calls_first_then_passing_ones_newest_first():
    windows = latency_windows(300_000)
    for n, passed in enumerate([False, True, False, True, True]):
        windows.put(scored_call(result(f"c{n}", "a1", T0 + n, passed)))
    assert windows.samples(300_000, "agent:a1", "latency", 4) == ["c2", "c0", "c4", "c3"]


# ---------------------------------------------------------------------------------- acceptance


def test_one_agents_latency_drop_fires_one_alert_for_that_agent_and_resolves_after_recovery():
    stream = agent_stream(2000, a1_fails_between(600, 1200))
    _, alerts = run(stream)
    # Pending when a1's window first holds 16 failing calls (600..750): 14/30 < 0.5, at second 750.
    # Firing 60 s later at second 810 (still breaching: 8/30). Resolved once 24 of the last 30 pass:
    # recovered calls 1200..1430 are 24, at second 1430.
    assert states(alerts) == [
        ("pending", "agent:a1", at(750)),
        ("firing", "agent:a1", at(810)),
        ("resolved", "agent:a1", at(1430)),
    ]
    assert {a["metric"] for a in alerts} == {"latency"}
    assert len({a["dedupe_key"] for a in alerts}) == 1
    assert alerts[1]["event_ts_ms"] - T0 - 600_000 <= 300_000  # fired within one window of the drop
    assert (alerts[1]["passed"], alerts[1]["total"], alerts[1]["pass_rate"]) == (8, 30, 8 / 30)
    assert (alerts[2]["passed"], alerts[2]["total"]) == (24, 30)


def test_an_alert_event_carries_the_rule_window_thresholds_and_failing_samples():
    _, alerts = run(agent_stream(2000, a1_fails_between(600, 1200)))
    firing = alerts[1]
    assert firing["rule"] == "agent latency" and firing["severity"] == "critical"
    assert (firing["fire_below"], firing["clear_above"], firing["min_calls"], firing["for_s"]) == (0.5, 0.8, 5, 60.0)
    assert (firing["window_start_ms"], firing["window_end_ms"]) == (at(810) - 300_000, at(810))
    assert firing["sample_call_ids"] == ["a1-810", "a1-800", "a1-790", "a1-780", "a1-770"]
    assert firing["average_score"] == 31.3  # (8 × 90 + 22 × 10) / 30 = 31.33


def test_rates_flapping_inside_the_hysteresis_band_raise_nothing_more():
    # a1 fails outright for 600..900 (an episode), then one call in three until 1500: its rate climbs
    # to 20/30 and stays inside [0.5, 0.8), so the episode neither resolves nor repeats. a2 fails
    # calls 4, 5, 6 of every 7: 12 to 14 of any 30 fail, a rate between 0.533 and 0.6 (no lower than
    # 0.571 while the window fills): always inside the band or above it, never an episode.
    def fails(agent: str, s: int) -> bool:
        n = s // 10
        if agent == "a1":
            return 600 <= s < 900 or (900 <= s < 1500 and n % 3 == 0)
        return agent == "a2" and n % 7 >= 4

    engine = AlertEngine([RULE])
    alerts, a2_rates = [], set()
    for r in agent_stream(3000, fails):
        alerts.extend(engine.observe(r))
        reading = engine.reading("agent:a2", "latency", 300)
        if reading and reading["total"] == 30:
            a2_rates.add(round(reading["pass_rate"], 3))
    assert [(a["state"], a["scope"]) for a in alerts] == [
        ("pending", "agent:a1"),
        ("firing", "agent:a1"),
        ("resolved", "agent:a1"),
    ]
    # Resolved only after 1500, once at most 6 of the last 30 fail: at 1590 the window holds calls
    # 1300..1590, whose failures are the one-in-three of 1320..1470 (n = 132, 135, …, 147): 6.
    assert alerts[-1]["event_ts_ms"] == at(1590)
    assert min(a2_rates) >= 0.5 and max(a2_rates) < 0.8 and len(a2_rates) > 2  # it did flap


def test_below_min_calls_nothing_fires():
    stream = agent_stream(2000, a1_fails_between(600, 1200))
    # A 300 s window never holds more than 30 of an agent's calls.
    assert run(stream, rule(min_calls=31))[1] == []
    assert [a["state"] for a in run(stream, rule(min_calls=30))[1]] == ["pending", "firing", "resolved"]


def test_for_delays_firing_by_that_much_event_time():
    stream = agent_stream(2000, a1_fails_between(600, 1200))
    immediate = states(run(stream, rule(for_s=0))[1])
    delayed = states(run(stream, rule(for_s=120))[1])
    # for 0: pending and firing in the same evaluation, at 750; for 120: firing at 750 + 120 = 870.
    assert immediate[:2] == [("pending", "agent:a1", at(750)), ("firing", "agent:a1", at(750))]
    assert delayed[:2] == [("pending", "agent:a1", at(750)), ("firing", "agent:a1", at(870))]


def test_a_breach_shorter_than_for_resolves_without_firing():
    # a1 fails 600..770 (18 calls): pending at 750; healthy again when at most 6 of the last 30 fail,
    # i.e. when the window starts after 710: at 1010, 260 s after pending, before for_s = 300.
    _, alerts = run(agent_stream(2000, a1_fails_between(600, 780)), rule(for_s=300))
    assert states(alerts) == [("pending", "agent:a1", at(750)), ("resolved", "agent:a1", at(1010))]


def test_the_long_window_must_breach_too():
    long_rule = rule(for_s=0, long_window_s=1200)
    # A 180 s dip: the 300 s window breaches, the 1200 s window (120 calls) never has more than 18
    # failing: nothing.
    assert run(agent_stream(3000, a1_fails_between(600, 780)), long_rule)[1] == []
    # A long outage: the 1200 s window breaches once 61 of its 120 calls fail (600..1200), at 1200.
    _, alerts = run(agent_stream(3000, a1_fails_between(600, 1800)), long_rule)
    assert states(alerts)[:2] == [("pending", "agent:a1", at(1200)), ("firing", "agent:a1", at(1200))]
    assert alerts[1]["long_window"]["total"] == 120 and alerts[1]["long_window"]["passed"] == 59


def test_the_same_stream_replayed_gives_the_same_alerts():
    stream = agent_stream(3000, lambda agent, s: agent != "a0" and (600 <= s < 1200 or 2000 <= s < 2300))
    first = run(stream)[1]
    assert first and run(stream)[1] == first


def test_each_episode_has_its_own_dedupe_key_shared_by_its_events():
    _, alerts = run(agent_stream(3000, lambda agent, s: agent == "a1" and (600 <= s < 1200 or 2000 <= s < 2300)))
    assert [a["state"] for a in alerts] == ["pending", "firing", "resolved"] * 2
    assert alerts[0]["dedupe_key"] == alerts[1]["dedupe_key"] == alerts[2]["dedupe_key"] != alerts[3]["dedupe_key"]


def test_firing_lists_the_alerts_firing_now():
    stream = agent_stream(2000, a1_fails_between(600, 1200))
    engine = AlertEngine([RULE])
    firing_alert = None
    for r in stream:
        for alert in engine.observe(r):
            if alert["state"] == "firing":
                firing_alert = alert
                assert engine.firing() == [firing_alert]
    assert firing_alert is not None and engine.firing() == []


def test_a_rescore_that_fixes_failing_calls_resolves_the_episode():
    stream = agent_stream(900, a1_fails_between(600, 900))
    engine, alerts = run(stream, rule(for_s=0))
    assert [a["state"] for a in alerts] == ["pending", "firing"]
    # Rescoring a1's last 30 calls as passing, one by one: 24 passing of 30 clears it.
    rescored = [
        result(r["call_id"], "a1", r["ended_ts_ms"], True, version=2, event_ts_ms=at(900))
        for r in stream
        if r["agent_id"] == "a1"
    ][-30:]
    later = [alert for r in rescored for alert in engine.observe(r)]
    assert [a["state"] for a in later] == ["resolved"] and (later[0]["passed"], later[0]["total"]) == (24, 30)


def test_the_weighted_score_rule_reads_each_cohorts_verdict():
    cohort_rule = AlertRule(
        name="cohort verdict", scope="cohort:*", metric="weighted_score", window_s=300, fire_below=0.5, min_calls=5
    )
    stream = []
    for n in range(10):
        verdicts = [
            {"cohort_id": "billing", "weighted_score": 40.0, "passed": False, "metrics_counted": []},
            {"cohort_id": "sales", "weighted_score": 90.0, "passed": True, "metrics_counted": []},
        ]
        # The latency metric passes throughout: only the billing verdict fails.
        stream.append(result(f"c{n}", "a0", T0 + n * 1000, True, cohorts=verdicts))
    _, alerts = run(stream, cohort_rule)
    # Five failing billing verdicts reach min_calls: pending and (for 0) firing at the fifth call.
    assert states(alerts) == [("pending", "cohort:billing", T0 + 4000), ("firing", "cohort:billing", T0 + 4000)]
    assert alerts[1]["average_score"] == 40.0


def test_removing_a_rule_resolves_its_firing_alert():
    engine, alerts = run(agent_stream(900, a1_fails_between(600, 900)))
    assert alerts[-1]["state"] == "firing" and engine.counters.alerts == len(alerts)
    closed = engine.set_rules([])
    assert [(a["state"], a["dedupe_key"], a["reason"]) for a in closed] == [
        ("resolved", alerts[-1]["dedupe_key"], "rule removed or disabled")
    ]
    assert engine.firing() == [] and engine.counters.alerts == len(alerts) + 1  # the resolution counted too


def test_a_rule_added_mid_stream_evaluates_the_calls_already_in_its_window():
    engine, _ = run(agent_stream(900, a1_fails_between(600, 900)), rule(name="other", metric="wer"))
    added = engine.set_rules([rule(name="other", metric="wer"), rule(for_s=0)])
    assert [(a["state"], a["scope"]) for a in added] == [("pending", "agent:a1"), ("firing", "agent:a1")]


def test_a_restored_engine_carries_on_as_if_never_stopped():
    stream = agent_stream(2000, a1_fails_between(600, 1200))
    _, expected = run(stream)
    first = AlertEngine([RULE])
    alerts = [alert for r in stream[: 2400 // 10] for alert in first.observe(r)]  # up to second 800: pending
    assert [a["state"] for a in alerts] == ["pending"]
    # What the worker keeps in its table: the kept calls' documents and the open episodes, as JSON.
    calls = [msgspec.json.decode(msgspec.json.encode(c.to_document())) for c in first.kept_calls()]
    episodes = msgspec.json.decode(msgspec.json.encode(first.episodes_document()))
    second = AlertEngine([RULE])
    assert second.restore(calls, episodes) == []
    alerts += [alert for r in stream[2400 // 10 :] for alert in second.observe(r)]
    assert alerts == expected


@pytest.mark.parametrize("drop_agent", ["a0", "a2"])
def test_only_the_degraded_agent_alerts(drop_agent):
    _, alerts = run(agent_stream(2000, lambda agent, s: agent == drop_agent and 600 <= s < 1200))
    assert {a["scope"] for a in alerts} == {f"agent:{drop_agent}"}


def test_the_compact_document_the_worker_relays_reads_back_as_the_same_call():
    verdicts = [{"cohort_id": "billing", "weighted_score": 62.5, "passed": False, "metrics_counted": [], "details": {}}]
    full = result("c1", "a1", T0, True, score=87.5, cohort_ids=["support"], cohorts=verdicts, event_ts_ms=T0 + 9)
    full["metrics"].append(
        {"metric": "wer", "value": None, "score": None, "passed": None, "details": {"reason": "n/a"}}
    )
    call = scored_call(msgspec.json.encode(full))
    assert scored_call(msgspec.json.encode(call.to_document())) == call
    assert call.scopes == ("all", "agent:a1", "cohort:support", "cohort:billing")
    assert set(call.metrics) == {"latency", "conversation"}  # wer did not apply; the agent spoke


def test_a_result_without_an_end_is_placed_by_its_event_time():
    swept = result("c1", "a1", T0, True, event_ts_ms=T0 + 5000)
    swept["ended_ts_ms"] = None
    assert scored_call(swept).ts_ms == T0 + 5000


def test_an_episode_that_starts_at_the_watermark_where_the_last_one_resolved_gets_a_key_of_its_own():
    # Late results hold the watermark still: one episode resolves and the next starts at the same instant.
    rule = AlertRule(
        name="lat", scope="all", metric="latency", window_s=300, fire_below=0.5, clear_above=0.6, min_calls=2
    )
    engine = AlertEngine([rule])
    stream = [
        result("new", "a", T0 + 60_000, False),
        result("late1", "a", T0 + 10_000, False),
        result("late2", "a", T0 + 20_000, True),
        result("late3", "a", T0 + 30_000, True),
        result("late4", "a", T0 + 40_000, True),
        result("late5", "a", T0 + 41_000, False),
        result("late6", "a", T0 + 42_000, False),
    ]
    alerts = [alert for r in stream for alert in engine.observe(r)]
    assert [a["state"] for a in alerts] == ["pending", "firing", "resolved", "pending", "firing"]
    assert len({a["episode_start_ms"] for a in alerts}) == 1
    first, second = alerts[0]["dedupe_key"], alerts[3]["dedupe_key"]
    assert first != second and alerts[2]["dedupe_key"] == first and alerts[4]["dedupe_key"] == second


def test_kept_calls_no_rule_reads_any_more_are_dropped_from_the_store_on_restore():
    stream = agent_stream(200, lambda agent, s: False)
    first = AlertEngine([RULE])
    for r in stream:
        first.observe(r)
    calls = [c.to_document() for c in first.kept_calls()]
    assert calls
    second = AlertEngine([])  # the rule is gone meanwhile
    second.restore(calls, first.episodes_document())
    assert second.kept_calls() == [] and second.take_changes().dropped == {c["call_id"] for c in calls}


def test_a_metric_rule_on_a_cohort_reads_the_cohorts_verdict_of_the_metric_at_its_own_threshold():
    # Latency scores 73.3: it passes the default threshold (60) but not the billing cohort's (80), and
    # the billing overview counts it failed; sales does not count latency, so the result's verdict stands.
    cohort_rule = AlertRule(
        name="cohort latency", scope="cohort:*", metric="latency", window_s=300, fire_below=0.5, min_calls=5
    )
    stream = []
    for n in range(10):
        billing = {
            "cohort_id": "billing",
            "weighted_score": 73.3,
            "passed": False,
            "metrics_counted": ["latency"],
            "details": {"metrics": {"latency": {"score": 73.3, "threshold": 80, "passed": False, "weight": 1}}},
        }
        stream.append(
            result(f"c{n}", "a0", T0 + n * 1000, True, score=73.3, cohort_ids=["billing", "sales"], cohorts=[billing])
        )
    _, alerts = run(stream, cohort_rule)
    assert states(alerts) == [("pending", "cohort:billing", T0 + 4000), ("firing", "cohort:billing", T0 + 4000)]
    # The compact document the worker re-keys onto the alert input keeps the cohort's verdicts.
    call = scored_call(stream[0])
    assert scored_call(call.to_document()) == call
    assert call.outcome("cohort:billing", "latency").passed is False
    assert call.outcome("cohort:sales", "latency").passed is True
