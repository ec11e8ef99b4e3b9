"""The alert engine's table acknowledges a message only once its changes are in the changelog
(streams/alerts/durable_acks.py): a worker killed under load comes back with the alert episodes that
replay raises, none lost and none raised twice with another content."""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
import time

import pytest

from streams.cli.main import main
from streams.kafka.clients import ensure_topics
from streams.topics import TopicNames
from streams.worker.processes import WorkerProcess
from tests.helpers.alertkit import AGENT_LATENCY_TOML, write_latency_log
from tests.helpers.livekit import collect, send, settings_for

pytestmark = pytest.mark.broker


def a1_slow(agent: str, second: int) -> bool:
    return agent == "a1" and (600 <= second < 1200 or 2400 <= second < 3000)


def unique_in_order(alerts: list[dict]) -> list[dict]:
    seen, kept = set(), []
    for alert in alerts:
        key = json.dumps(alert, sort_keys=True)
        if key not in seen:
            seen.add(key)
            kept.append(alert)
    return kept


def test_a_worker_killed_under_load_raises_the_alert_episodes_replay_raises(broker, topic_prefix, tmp_path):
    log, rules = tmp_path / "calls.jsonl", tmp_path / "rules.toml"
    write_latency_log(str(log), 3600, a1_slow)
    rules.write_text(AGENT_LATENCY_TOML)
    expected_file = tmp_path / "expected.jsonl"
    assert (
        main(
            [
                "replay",
                str(log),
                "--out",
                str(tmp_path / "results.jsonl"),
                "--partitions",
                "1",
                "--rules",
                str(rules),
                "--alerts-out",
                str(expected_file),
            ]
        )
        == 0
    )
    expected = [json.loads(line) for line in expected_file.read_text().splitlines()]
    assert len(expected) >= 4

    settings = settings_for(broker, topic_prefix, partitions=1)
    names = TopicNames(topic_prefix)
    asyncio.run(ensure_topics(settings, names.only(1, names.events, names.results)))
    data_dir = tempfile.mkdtemp(prefix="callqa-worker-")
    env = {
        "CALLQA_TOPIC_PREFIX": topic_prefix,
        "CALLQA_APP_ID": topic_prefix,
        "CALLQA_PARTITIONS": "1",
        "CALLQA_ALERT_RULES_FILE": str(rules),
    }

    def started() -> WorkerProcess:
        worker = WorkerProcess(broker.url, data_dir, log_path=f"{data_dir}/worker.log", env=env).start()
        worker.wait_ready()
        return worker

    worker = started()
    sender = threading.Thread(target=send, args=(str(log), settings), kwargs={"batch_size": 1})
    sender.start()
    try:
        for _ in range(2):  # killed twice while the alerts input flows
            deadline = time.monotonic() + 90
            target = (worker.health() or {}).get("results", 0) + 300
            while time.monotonic() < deadline and (worker.health() or {}).get("results", 0) < target:
                time.sleep(0.05)
            worker.kill()
            worker = started()
        sender.join(180)
        live = collect(settings, names.alerts, lambda records: len(unique_in_order(records)) >= len(expected), 120)
    finally:
        worker.stop()
    assert unique_in_order(live) == expected
