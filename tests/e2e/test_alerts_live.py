"""Alerts through the real (embedded) broker: the worker publishes on `callqa.alerts` exactly the
alert events `callqa replay --rules` writes, with rules from its file and from `callqa.alert-rules`."""

from __future__ import annotations

import asyncio
import http.server
import json
import tempfile
import threading
import time
import tomllib
import urllib.error
import urllib.request

import pytest

from models.alert_rules import AlertRule, encode_rule
from streams.cli.main import main
from streams.kafka.clients import ensure_topics, producer
from streams.topics import TopicNames
from streams.worker.processes import WorkerProcess
from tests.helpers.alertkit import AGENT_LATENCY_TOML, write_latency_log
from tests.helpers.livekit import collect, send, settings_for
from tests.helpers.paths import REPO

pytestmark = pytest.mark.broker

FILE_RULE = AGENT_LATENCY_TOML
# a1 is one call in three: while it is slow, the pass rate of all calls is 2/3, below 0.7.
TOPIC_RULE = AlertRule(
    name="all latency",
    scope="all",
    metric="latency",
    window_s=300,
    fire_below=0.7,
    clear_above=0.9,
    min_calls=10,
    for_s=0,
)


def a1_slow(agent: str, second: int) -> bool:
    return agent == "a1" and 600 <= second < 1200


def get_alerts(worker: WorkerProcess, page: str = "/alerts") -> dict | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{worker.web_port}{page}", timeout=2) as response:
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


async def publish_rule(settings, topic: str, rule: AlertRule) -> None:
    client = producer(settings)
    await client.start()
    try:
        await client.send_and_wait(topic, key=rule.name.encode(), value=encode_rule(rule))
    finally:
        await client.stop()


class Receiver:
    """A webhook receiver on loopback, in a thread of its own: what it was POSTed, in order."""

    def __init__(self) -> None:
        received = self.received = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_the_worker_publishes_the_alerts_replay_writes(broker, topic_prefix, tmp_path):
    log, rules_file, both_rules = tmp_path / "calls.jsonl", tmp_path / "rules.toml", tmp_path / "both.json"
    write_latency_log(str(log), 2000, a1_slow)
    rules_file.write_text(FILE_RULE)
    both_rules.write_text(json.dumps(tomllib.loads(FILE_RULE)["rules"] + [json.loads(encode_rule(TOPIC_RULE))]))
    expected_file = tmp_path / "expected.jsonl"
    # One partition: the worker scores (and so evaluates) in the order of the log, as replay does.
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
                str(both_rules),
                "--alerts-out",
                str(expected_file),
            ]
        )
        == 0
    )
    expected = [json.loads(line) for line in expected_file.read_text().splitlines()]
    assert {a["rule"] for a in expected} == {"agent latency", "all latency"}

    settings = settings_for(broker, topic_prefix, partitions=1)
    names = TopicNames(topic_prefix)
    data_dir = tempfile.mkdtemp(prefix="callqa-worker-")
    receiver = Receiver()
    worker = WorkerProcess(
        broker.url,
        data_dir,
        log_path=f"{data_dir}/worker.log",
        env={
            "CALLQA_TOPIC_PREFIX": topic_prefix,
            "CALLQA_APP_ID": topic_prefix,
            "CALLQA_PARTITIONS": "1",
            "CALLQA_ALERT_RULES_FILE": str(rules_file),
            "CALLQA_ALERT_WEBHOOK_URL": receiver.url,
        },
    )
    # The broker would create the worker's topics with its own default of 4 partitions.
    asyncio.run(ensure_topics(settings, names.only(1, names.events, names.results)))
    worker.start()
    try:
        worker.wait_ready()
        asyncio.run(publish_rule(settings, names.alert_rules, TOPIC_RULE))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (get_alerts(worker) or {}).get("rules") != [
            "agent latency",
            "all latency",
        ]:
            time.sleep(0.3)
        assert (get_alerts(worker) or {}).get("rules") == ["agent latency", "all latency"]
        in_force = get_alerts(worker, "/alerts/rules")
        send(str(log), settings)
        live = collect(settings, names.alerts, lambda records: len(records) >= len(expected), timeout_s=60)
        firing_now = get_alerts(worker)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(receiver.received) < len(expected):
            time.sleep(0.2)
    finally:
        worker.stop()
        receiver.close()
    assert live == expected
    assert receiver.received == expected  # the webhook, in the topic's order
    # Both episodes resolved by the end of the log: nothing is firing.
    assert firing_now is not None and firing_now["firing"] == []
    assert firing_now["counters"]["published"] == len(expected)
    # The rules in force, fetched whole, are a rules file a replay of the same log raises the same
    # alerts with: the file's rule and the one published on the topic.
    fetched = tmp_path / "in-force.json"
    fetched.write_text(json.dumps(in_force))
    assert (
        main(
            [
                "replay",
                str(log),
                "--out",
                str(tmp_path / "again.jsonl"),
                "--partitions",
                "1",
                "--rules",
                str(fetched),
                "--alerts-out",
                str(tmp_path / "again-alerts.jsonl"),
            ]
        )
        == 0
    )
    assert [json.loads(line) for line in (tmp_path / "again-alerts.jsonl").read_text().splitlines()] == expected


def test_removing_a_rule_resolves_its_firing_episode_at_once_and_once(broker, topic_prefix, tmp_path):
    """No result follows the removal and no one asks GET /alerts: the change alone resolves the episode."""
    log = tmp_path / "calls.jsonl"
    write_latency_log(str(log), 1200, lambda agent, second: agent == "a1" and second >= 600)  # slow to the end
    settings = settings_for(broker, topic_prefix, partitions=1)
    names = TopicNames(topic_prefix)
    data_dir = tempfile.mkdtemp(prefix="callqa-worker-")
    worker = WorkerProcess(
        broker.url,
        data_dir,
        log_path=f"{data_dir}/worker.log",
        env={"CALLQA_TOPIC_PREFIX": topic_prefix, "CALLQA_APP_ID": topic_prefix, "CALLQA_PARTITIONS": "1"},
    )
    asyncio.run(ensure_topics(settings, names.only(1, names.events, names.results)))
    worker.start()
    try:
        worker.wait_ready()
        asyncio.run(publish_rule(settings, names.alert_rules, TOPIC_RULE))
        send(str(log), settings)
        collect(settings, names.alerts, lambda records: any(r["state"] == "firing" for r in records), timeout_s=60)
        asyncio.run(publish_rule(settings, names.alert_rules, AlertRule(name=TOPIC_RULE.name, deleted=True)))
        alerts = collect(
            settings, names.alerts, lambda records: any(r["state"] == "resolved" for r in records), timeout_s=60
        )
        time.sleep(2)  # anything published twice would be on the topic by now
        alerts = collect(settings, names.alerts, lambda records: len(records) >= len(alerts), timeout_s=30)
    finally:
        worker.stop()
    assert [a["state"] for a in alerts] == ["pending", "firing", "resolved"]
    assert "removed" in alerts[-1]["reason"] and len({a["dedupe_key"] for a in alerts}) == 1


def test_results_reordered_by_partitions_and_batches_raise_the_alerts_replay_writes(broker, topic_prefix, tmp_path):
    """Four partitions and batch messages: results reach the evaluating worker out of end-time order,
    which the event-time ordering stage takes back, as replay's does."""
    samples = REPO / "samples"
    log, rules, cohorts = samples / "calls.jsonl", samples / "alert-rules.toml", samples / "cohorts.json"
    expected_file = tmp_path / "expected.jsonl"
    assert (
        main(
            [
                "replay",
                str(log),
                "--out",
                str(tmp_path / "results.jsonl"),
                "--rules",
                str(rules),
                "--alerts-out",
                str(expected_file),
                "--cohorts",
                str(cohorts),
            ]
        )
        == 0
    )
    expected = [json.loads(line) for line in expected_file.read_text().splitlines()]
    assert expected and {a["state"] for a in expected} == {"pending", "firing"}
    settings = settings_for(broker, topic_prefix, partitions=4)
    names = TopicNames(topic_prefix)
    data_dir = tempfile.mkdtemp(prefix="callqa-worker-")
    worker = WorkerProcess(
        broker.url,
        data_dir,
        log_path=f"{data_dir}/worker.log",
        env={
            "CALLQA_TOPIC_PREFIX": topic_prefix,
            "CALLQA_APP_ID": topic_prefix,
            "CALLQA_PARTITIONS": "4",
            "CALLQA_ALERT_RULES_FILE": str(rules),
            "CALLQA_COHORTS_FILE": str(cohorts),
        },
    )
    worker.start()
    try:
        worker.wait_ready()
        send(str(log), settings)  # batch messages of up to 50 events of one call
        live = collect(settings, names.alerts, lambda records: len(records) >= len(expected), timeout_s=60)
    finally:
        worker.stop()
    assert live == expected


def _alerts_answer(worker: WorkerProcess, page: str = "/alerts") -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{worker.web_port}{page}", timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize("first", ["misnamed", "reachable"])
def test_alerts_asked_of_either_worker_come_from_the_one_evaluating_them(broker, topic_prefix, first, tmp_path):
    """GET /alerts is passed on to the worker that evaluates alerts, reached by its CALLQA_WEB_HOST.
    One worker here names itself by an address it does not listen on (as 0.0.0.0 would in a
    container): asked through the other worker, its alerts are a 502 that says so, not a 503 that
    blames the assignment; and the other worker's alerts, asked through it, arrive. (The worker
    started first keeps the evaluation: each order sees one of the two cases.) Each has a rules file
    of its own: the rules in force, names and whole, are the evaluating worker's."""
    from tests.helpers.livekit import start_worker

    env = {"misnamed": {"CALLQA_WEB_HOST": "127.0.0.3", "CALLQA_WEB_BIND": "127.0.0.1"}, "reachable": {}}
    for name in env:
        rules_file = tmp_path / f"{name}.toml"
        rules_file.write_text(AGENT_LATENCY_TOML.replace('"agent latency"', f'"{name} latency"'))
        env[name]["CALLQA_ALERT_RULES_FILE"] = str(rules_file)
    workers: dict[str, WorkerProcess] = {}
    try:
        for name in (first, "reachable" if first == "misnamed" else "misnamed"):
            workers[name] = start_worker(broker, topic_prefix, partitions=1, env=env[name])
        deadline = time.monotonic() + 60
        answers = {}
        while time.monotonic() < deadline:
            answers = {name: _alerts_answer(worker) for name, worker in workers.items()}
            if all(status in (200, 502) for status, _ in answers.values()):
                break
            time.sleep(0.5)
        rules = {name: _alerts_answer(worker, "/alerts/rules") for name, worker in workers.items()}
        if answers["misnamed"][0] == 200 and answers["reachable"][0] == 502:  # the misnamed one evaluates
            assert "127.0.0.3" in answers["reachable"][1]["error"]
            assert "CALLQA_WEB_HOST" in answers["reachable"][1]["error"]
            assert answers["misnamed"][1]["rules"] == ["misnamed latency"]
            assert rules["misnamed"][0] == 200 and rules["reachable"][0] == 502
            assert [rule["name"] for rule in rules["misnamed"][1]["rules"]] == ["misnamed latency"]
        else:  # the reachable one evaluates: the misnamed one passes the request on to it
            assert answers["misnamed"] == answers["reachable"]
            assert answers["reachable"][0] == 200 and answers["reachable"][1]["rules"] == ["reachable latency"]
            assert rules["misnamed"] == rules["reachable"]
            assert rules["reachable"][0] == 200
            assert rules["reachable"][1]["rules"] == [
                {
                    **tomllib.loads(AGENT_LATENCY_TOML)["rules"][0],
                    "name": "reachable latency",
                    "description": "",
                    "long_window_s": None,
                    "enabled": True,
                    "deleted": False,
                }
            ]
    finally:
        for worker in workers.values():
            worker.stop()
