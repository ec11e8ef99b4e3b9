"""Results in event-time order before the alert engine: arrival order within the lateness does not
change the alerts, and what is held survives a restart."""

from __future__ import annotations

import random
import tomllib

from models.alert_rules import decode_rule
from scorers.alerting.calls import scored_call
from scorers.alerting.engine import AlertEngine
from scorers.alerting.ordering import EventTimeOrder, observe_in_order, release_in_order
from scorers.registry import qa_metrics
from tests.helpers.alertkit import AGENT_LATENCY_TOML, agent_stream

RULES = [decode_rule(rule, [m.name for m in qa_metrics()]) for rule in tomllib.loads(AGENT_LATENCY_TOML)["rules"]]
LATENESS_MS = 30_000


def slow_a1(agent: str, second: int) -> bool:
    return agent == "a1" and 600 <= second < 1200


def alerts_of(results: list[dict], lateness_ms: int = LATENESS_MS) -> list[dict]:
    engine, order = AlertEngine(RULES), EventTimeOrder(lateness_ms)
    alerts = [alert for result in results for alert in observe_in_order(engine, order, result)]
    return alerts + release_in_order(engine, order)


def shuffled_within(results: list[dict], span_ms: int, seed: int) -> list[dict]:
    """Each result moved by up to `span_ms` of event time: sorted by its end plus a random delay."""
    rng = random.Random(seed)
    return [r for _, r in sorted(((r["ended_ts_ms"] + rng.randrange(span_ms), i), r) for i, r in enumerate(results))]


def test_results_out_of_order_within_the_lateness_raise_the_alerts_of_the_ordered_results():
    results = agent_stream(2400, slow_a1)
    ordered = alerts_of(results)
    assert [a["state"] for a in ordered] == ["pending", "firing", "resolved"]
    for seed in range(5):
        assert alerts_of(shuffled_within(results, LATENESS_MS, seed)) == ordered


def test_in_order_results_raise_exactly_what_the_engine_alone_raises():
    results = agent_stream(2400, slow_a1)
    engine = AlertEngine(RULES)
    assert alerts_of(results) == [alert for result in results for alert in engine.observe(result)]


def test_without_the_ordering_stage_the_same_shuffle_changes_the_alerts():
    results = agent_stream(2400, slow_a1)
    engine = AlertEngine(RULES)
    unordered = [alert for result in shuffled_within(results, LATENESS_MS, 1) for alert in engine.observe(result)]
    assert unordered != alerts_of(results)  # what the stage is for


def test_a_result_is_held_until_the_end_times_seen_pass_it_by_the_lateness():
    order = EventTimeOrder(15_000)
    # T0, +10 s, +20 s
    first, second, third = (scored_call(r) for r in agent_stream(30, lambda a, s: False, agents=["a0"]))
    assert order.add(second) == [] and order.add(first) == []  # the latest end, T0 + 10 s, is not 15 s past either
    assert order.add(third) == [first]  # T0 + 20 s: only the call of T0 is 15 s behind
    assert order.held == [second, third] and order.release_all() == [second, third] and len(order) == 0


def test_what_is_held_is_held_again_after_a_restart_with_each_sources_latest_time():
    calls = [scored_call(r) for r in agent_stream(60, lambda a, s: False, agents=["a0"])]
    before = EventTimeOrder(25_000, sources=2)
    for index, call in enumerate(calls[:4]):
        before.add(call, source=index % 2)
    after = EventTimeOrder(25_000, sources=2)
    after.restore(list(reversed(before.held)), dict(before.latest_by_source))
    assert after.held == before.held and after.latest_by_source == before.latest_by_source
    assert after.add(calls[4], source=0) == before.add(calls[4], source=0)


def test_a_source_behind_the_others_holds_back_what_it_may_still_deliver_before():
    first, second, third, fourth = (scored_call(r) for r in agent_stream(40, lambda a, s: False, agents=["a0"]))
    order = EventTimeOrder(5_000, sources=2)
    assert order.add(third, source=0) == []  # source 1 has delivered nothing: it may deliver anything
    assert order.add(first, source=1) == []  # source 1 is at T0: nothing is 5 s behind both
    assert order.add(fourth, source=0) == []  # source 0 moved on, source 1 did not
    assert order.add(second, source=1) == [first]  # both past T0 + 5 s; T0 + 10 s waits for source 1
    assert order.release_all() == [second, third, fourth]
