"""/metrics in Prometheus' text format: named by its conventions, agent labels bounded, and every series
the provisioned Grafana dashboard asks for is one the worker exposes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
from prometheus_client.parser import text_string_to_metric_families

from streams.web.call_index import CallIndex
from streams.web.prometheus import CallqaCollector, WorkerHealth, exposition, watch_index
from tests.unit.streams.web.test_call_index import METRICS, T0, result

DASHBOARD = Path(__file__).resolve().parents[4] / "docker" / "grafana" / "dashboards" / "callqa.json"


def scrape(*results, max_agents: int = 50, window_ms: int = 0) -> dict[str, list]:
    index = CallIndex(METRICS, window_ms=window_ms)
    tallies = watch_index(index, max_agents)
    for r in results:
        index.add(msgspec.json.encode(r), r)
    health = WorkerHealth(
        lambda: {"applied": 7, "duplicate": 1, "dead_lettered": 2},
        lambda: 3,
        lambda: {0: 5, 2: 0},
        lambda: 4,
        lambda: [("agent latency", "page", "firing"), ("agent latency", "page", "firing")],
    )
    text = exposition(CallqaCollector(index, tallies, health)).decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def values(samples, **labels) -> float:
    return sum(s.value for s in samples if all(s.labels.get(k) == v for k, v in labels.items()))


def test_counters_count_every_version_and_gauges_each_calls_latest():
    families = scrape(result("c1", 1, latency=30.0), result("c1", 2, latency=90.0), result("c2", 1, latency=95.0))
    verdicts = [s for s in families["callqa_metric_verdicts"] if s.name == "callqa_metric_verdicts_total"]
    assert (
        values(verdicts, metric="latency", verdict="pass") == 2
        and values(verdicts, metric="latency", verdict="fail") == 1
    )
    assert values(families["callqa_calls"], metric="latency", verdict="pass") == 2
    assert values(families["callqa_calls"], metric="latency", verdict="fail") == 0
    assert values(families["callqa_calls"], metric="sentiment", verdict="na") == 2


def test_a_call_let_go_from_the_window_leaves_the_gauges_not_the_counters():
    # (Two calls two hours on: one alone would be a leap held back, scorers/watermarks.py.)
    families = scrape(
        result("old", ended=T0, latency=20.0),
        result("new", ended=T0 + 7_200_000, latency=20.0),
        result("newer", ended=T0 + 7_200_001, latency=20.0),
        window_ms=3_600_000,
    )
    assert values(families["callqa_calls"], metric="latency", verdict="fail") == 2
    assert values([s for s in families["callqa_metric_verdicts"] if s.name.endswith("_total")], metric="latency") == 3


def test_score_histograms_have_cumulative_buckets_and_a_sum():
    families = scrape(result("c1", latency=10.0), result("c2", latency=10.1), result("c3", latency=100.0))
    samples = {
        (s.name, s.labels.get("le")): s.value
        for s in families["callqa_metric_score"]
        if s.labels["metric"] == "latency"
    }
    assert (
        samples[("callqa_metric_score_bucket", "10.0")],
        samples[("callqa_metric_score_bucket", "20.0")],
        samples[("callqa_metric_score_bucket", "+Inf")],
    ) == (1, 2, 3)
    assert samples[("callqa_metric_score_sum", None)] == 120.1


def test_agents_beyond_the_configured_number_fold_into_other():
    families = scrape(*(result(f"c{i}", agent=f"agent-{i}") for i in range(5)), max_agents=2)
    agents = {s.labels["agent"] for s in families["callqa_results"]}
    assert agents == {"agent-0", "agent-1", "other"}
    assert values(families["callqa_results"], agent="other") == 3


def test_the_workers_health_and_alerts_are_exposed():
    families = scrape()
    assert values(families["callqa_events_applied"]) == 7 and values(families["callqa_dead_letters"]) == 2
    assert values(families["callqa_consumer_lag_messages"], partition="0") == 5
    assert values(families["callqa_judge_queue_calls"]) == 4
    assert values(families["callqa_alerts"], rule="agent latency", severity="page", state="firing") == 2


def test_names_follow_prometheus_conventions():
    for name, samples in scrape(result("c1")).items():
        assert name.startswith("callqa_")
        for sample in samples:
            assert not sample.name.endswith("_total") or sample.name == name + "_total"


def test_every_series_the_grafana_dashboard_asks_for_is_exposed():
    exposed = {sample.name for samples in scrape(result("c1")).values() for sample in samples}
    dashboard = json.loads(DASHBOARD.read_text())
    asked = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"callqa_\w+", target["expr"])
    }
    asked |= set(re.findall(r"callqa_\w+", json.dumps(dashboard["templating"])))
    assert asked and asked <= exposed
