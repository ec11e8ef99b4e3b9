"""/health says whether the worker's brokers answer: a probe of the cluster's metadata, over a real
connection, turns the worker's health to 503 `broker_unreachable` once two probes in a row failed."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from streams.kafka.embedded_broker import EmbeddedBroker, free_port
from streams.kafka.health import FAILURES_BEFORE_UNREACHABLE, BrokerHealth, BrokerProbe
from tests.helpers.livekit import start_worker


def test_one_failed_probe_is_not_an_outage_two_are_and_an_answer_ends_it():
    health = BrokerHealth()
    assert health.reachable is None  # nothing known before the first probe
    health.answered(now=100.0)
    assert health.reachable is True
    health.failed("KafkaConnectionError: refused")
    assert health.reachable is True and health.failures_in_a_row == 1
    for _ in range(FAILURES_BEFORE_UNREACHABLE - 1):
        health.failed("KafkaConnectionError: refused")
    assert health.reachable is False
    assert health.document(now=112.34) == {
        "reachable": False,
        "last_answer_s_ago": 12.3,
        "failed_probes_in_a_row": 2,
        "last_error": "KafkaConnectionError: refused",
    }
    health.answered(now=120.0)
    assert health.reachable is True
    assert health.document(now=120.0) == {
        "reachable": True,
        "last_answer_s_ago": 0.0,
        "failed_probes_in_a_row": 0,
        "last_error": None,
    }


def test_a_broker_that_never_answered_has_no_last_answer():
    health = BrokerHealth()
    health.failed("no answer within 4 s")
    health.failed("no answer within 4 s")
    assert health.document(now=5.0)["last_answer_s_ago"] is None and health.reachable is False


async def _probe_twice(bootstrap: str) -> BrokerHealth:
    health = BrokerHealth()
    probe = BrokerProbe({"bootstrap_servers": bootstrap}, health)
    try:
        await probe.probe()  # bootstraps
        await probe.probe()  # asks the known brokers again
    finally:
        await probe.close()
    return health


@pytest.mark.broker
def test_the_probe_reaches_a_running_broker(broker):
    health = asyncio.run(_probe_twice(broker.bootstrap))
    assert health.reachable is True and health.probes == 2 and health.last_error is None


def test_the_probe_names_what_went_wrong_when_nothing_listens():
    health = asyncio.run(_probe_twice(f"127.0.0.1:{free_port()}"))
    assert health.reachable is False and health.last_answer_at is None
    assert "Kafka" in health.last_error or "answer" in health.last_error, health.last_error


def test_a_probe_that_fails_in_an_unexpected_way_counts_as_a_failed_probe_and_probes_on():
    async def probe_twice() -> BrokerHealth:
        health = BrokerHealth()
        probe = BrokerProbe({"bootstrap_servers": "127.0.0.1:9", "no_such_option": 1}, health)
        await probe.probe()
        await probe.probe()
        return health

    health = asyncio.run(probe_twice())
    assert health.reachable is False and health.last_error.startswith("TypeError")


def _wait_for_health(worker, predicate, timeout_s: float) -> dict:
    deadline = time.monotonic() + timeout_s
    health = None
    while time.monotonic() < deadline:
        health = worker.health()
        if health is not None and predicate(health):
            return health
        time.sleep(0.2)
    raise AssertionError(f"/health never got there; last: {health}")


@pytest.mark.broker
def test_a_worker_whose_broker_goes_away_answers_503_broker_unreachable_and_still_stops_on_sigterm(topic_prefix):
    # A broker of its own, which the test stops (the session's serves every other test).
    own = EmbeddedBroker().start(log_path=tempfile.mkdtemp(prefix="callqa-broker-") + "/broker.log")
    worker = None
    try:
        worker = start_worker(own, topic_prefix, env={"CALLQA_BROKER_PROBE_S": "0.5"})
        healthy = _wait_for_health(worker, lambda h: h["broker"]["reachable"] is True, 30)
        assert healthy["status"] == "ok" and healthy["broker"]["last_error"] is None
        own.stop()
        down = _wait_for_health(worker, lambda h: h["status"] == "broker_unreachable", 30)
        assert down["broker"]["reachable"] is False and down["broker"]["last_error"]
        assert down["broker"]["failed_probes_in_a_row"] >= FAILURES_BEFORE_UNREACHABLE
        # The counters stay there for whoever watches the worker.
        assert "applied" in down and "assigned_partitions" in down
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(f"http://127.0.0.1:{worker.web_port}/health", timeout=2)
        assert answer.value.code == 503
        # A supervisor stopping it (Kubernetes: SIGTERM, then SIGKILL after a 30 s grace period) finds
        # it gone well within the grace period; it waited 60 s on a consumer thread that never ended.
        os.killpg(worker.process.pid, signal.SIGTERM)
        assert worker.process.wait(timeout=20) == 0
        assert "closing its connections without it" in Path(worker.log_path).read_text()
    finally:
        if worker is not None:
            worker.kill()
        own.stop()


def test_a_background_task_asks_a_failing_broker_again_instead_of_ending_the_worker(caplog):
    # A worker's task that raised (a broker stopped just as it asked) crashed the whole worker.
    from aiokafka.errors import KafkaConnectionError

    from streams.kafka.clients import retrying

    answers = iter([KafkaConnectionError("Unable to bootstrap"), OSError("Connection refused"), "created"])

    async def attempt() -> str:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    with caplog.at_level("WARNING"):
        assert asyncio.run(retrying("creating t.alerts", attempt, logging.getLogger("test"), retry_s=0)) == "created"
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == ["creating t.alerts failed"] * 2
    assert "KafkaConnectionError" in caplog.records[0].getMessage()
