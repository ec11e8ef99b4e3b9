"""`callqa replay --rules RULES --alerts-out ALERTS`: the alert events of a scored log, deterministic."""

from __future__ import annotations

import json

from streams.cli.main import main
from streams.cli.render import alert_line
from tests.helpers.alertkit import AGENT_LATENCY_TOML, T0, write_latency_log

RULES_TOML = AGENT_LATENCY_TOML


def a1_slow(agent: str, second: int) -> bool:
    return agent == "a1" and 600 <= second < 1200


def replay_alerts(tmp_path, name: str) -> list[dict]:
    log, rules = tmp_path / "calls.jsonl", tmp_path / "rules.toml"
    if not log.exists():
        write_latency_log(str(log), 2000, a1_slow)
        rules.write_text(RULES_TOML)
    out = tmp_path / f"{name}.alerts.jsonl"
    code = main(
        [
            "replay",
            str(log),
            "--out",
            str(tmp_path / f"{name}.results.jsonl"),
            "--rules",
            str(rules),
            "--alerts-out",
            str(out),
        ]
    )
    assert code == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_replay_writes_one_episode_for_the_agent_whose_latency_degraded(tmp_path):
    alerts = replay_alerts(tmp_path, "first")
    # Each call ends at T0 + second*1000 + agent index; slow calls (3500 ms handoffs) score 16.7 and
    # fail, fast ones (800 ms) score 100. Same arithmetic as the engine test: pending at 750 (16 of 30
    # failing), firing 60 s later at 810, resolved at 1430 (24 of 30 passing).
    assert [(a["state"], a["scope"], a["metric"], a["event_ts_ms"]) for a in alerts] == [
        ("pending", "agent:a1", "latency", T0 + 750_001),
        ("firing", "agent:a1", "latency", T0 + 810_001),
        ("resolved", "agent:a1", "latency", T0 + 1_430_001),
    ]
    # 8 × 100 + 22 × 16.7 = 1167.4 over 30 calls = 38.9
    assert alerts[1]["average_score"] == 38.9


def test_replaying_the_same_log_writes_the_same_alerts(tmp_path):
    assert replay_alerts(tmp_path, "first") == replay_alerts(tmp_path, "second") != []


def test_rules_without_an_alerts_file_is_a_usage_error(tmp_path, capsys):
    log, rules = tmp_path / "calls.jsonl", tmp_path / "rules.toml"
    write_latency_log(str(log), 60, a1_slow)
    rules.write_text(RULES_TOML)
    assert main(["replay", str(log), "--out", str(tmp_path / "r.jsonl"), "--rules", str(rules)]) == 2
    assert "--rules and --alerts-out go together" in capsys.readouterr().err


def test_a_bad_rules_file_stops_the_replay_with_the_rule_and_field(tmp_path, capsys):
    log, rules = tmp_path / "calls.jsonl", tmp_path / "rules.toml"
    write_latency_log(str(log), 60, a1_slow)
    rules.write_text(RULES_TOML.replace('metric = "latency"', 'metric = "latncy"'))
    code = main(
        [
            "replay",
            str(log),
            "--out",
            str(tmp_path / "r.jsonl"),
            "--rules",
            str(rules),
            "--alerts-out",
            str(tmp_path / "a.jsonl"),
        ]
    )
    assert code == 2
    assert "rule 'agent latency' (rule #1): `metric`: unknown metric 'latncy'" in capsys.readouterr().err


def test_tail_prints_an_alert_on_one_readable_line(tmp_path):
    firing = replay_alerts(tmp_path, "first")[1]
    line = alert_line(firing)
    assert line.startswith("[FIRING  ] critical agent latency scope=agent:a1 metric=latency pass_rate=0.267 (8/30)")
    assert "fire<0.50 clear>=0.80 window=300s" in line and f"key={firing['dedupe_key']}" in line


def test_a_log_in_order_only_within_each_partition_alerts_as_the_log_in_time_order(tmp_path):
    """Several producers' logs one after the other (`cat a.jsonl b.jsonl`) are in event-time order
    within each partition, as the worker reads them, but not as a whole: replay counts event time per
    partition, as the worker does, and raises the alerts of the same calls in time order."""
    from streams.partitioning import partition_for

    replay_alerts(tmp_path, "sorted")  # writes calls.jsonl and rules.toml
    in_order = replay_alerts(tmp_path, "sorted")
    lines = (tmp_path / "calls.jsonl").read_text().splitlines()
    by_partition = sorted(lines, key=lambda line: partition_for(json.loads(line)["call_id"], 4))  # (a stable sort)
    (tmp_path / "calls.jsonl").write_text("\n".join(by_partition) + "\n")
    assert by_partition != lines and replay_alerts(tmp_path, "concatenated") == in_order != []
