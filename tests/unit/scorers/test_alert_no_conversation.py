"""An alert rule on `conversation` pages on dead calls: its pass rate is the share of calls whose
agent spoke (the result's `no_conversation` false)."""

from __future__ import annotations

import pytest

from models.alert_rules import AlertRule, AlertRuleError, validate_rule
from scorers.alerting.engine import AlertEngine
from tests.helpers.alertkit import T0, result

RULE = AlertRule(name="dead calls", scope="all", metric="conversation", window_s=300, fire_below=0.8, min_calls=5)


def call(n: int, dead: bool) -> dict:
    document = result(f"c{n}", "a1", T0 + n * 1000, True)
    document["no_conversation"] = dead
    return document


def test_a_rule_on_conversation_is_valid_for_any_scope():
    for scope in ("all", "agent:*", "cohort:vip"):
        validate_rule(AlertRule(name="r", scope=scope, metric="conversation", window_s=60, fire_below=0.9), ["latency"])
    with pytest.raises(AlertRuleError, match="conversation"):
        validate_rule(AlertRule(name="r", metric="nonsense", window_s=60, fire_below=0.9), ["latency"])


def test_it_fires_once_dead_calls_take_the_share_of_calls_with_a_conversation_below_its_threshold():
    engine = AlertEngine([RULE])
    # Calls 0-4 spoke (5/5), then calls 5 and 6 are dead: 5/6 = 0.83, then 5/7 = 0.71 < 0.8.
    fired = [n for n in range(7) for alert in engine.observe(call(n, dead=n >= 5)) if alert["state"] == "firing"]
    assert fired == [6]
