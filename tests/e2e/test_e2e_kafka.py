"""End to end through the real (embedded) broker: the worker scores exactly what replay scores."""

from __future__ import annotations

import threading
import time

import pytest

from streams.topics import TopicNames
from tests.helpers.livekit import (
    assert_one_content_per_version,
    collect,
    collect_results,
    latest_by_call,
    replay_results,
    send,
    settings_for,
    start_worker,
)
from tests.helpers.logkit import build_log
from tests.helpers.paths import REPO

pytestmark = pytest.mark.broker


def test_send_scores_every_call_as_replay_does(broker, topic_prefix, tmp_path):
    log = str(tmp_path / "calls.jsonl")
    stats = build_log(log, calls=60)
    expected_results, report = replay_results(log)
    expected = latest_by_call(expected_results)
    settings = settings_for(broker, topic_prefix)
    worker = start_worker(broker, topic_prefix)
    try:
        send(log, settings)
        live = collect_results(settings, expected)
        letters = collect(settings, TopicNames(topic_prefix).deadletter, lambda r: len(r) >= stats["malformed"], 60)
    finally:
        worker.stop()
    assert latest_by_call(live) == expected
    assert_one_content_per_version(live)
    assert len(letters) == stats["malformed"] == report.rejected
    assert all(letter["reason"] and letter["original_b64"] for letter in letters)


@pytest.mark.parametrize("scheme,direct", [("kafka", True), ("aiokafka", False)])
def test_a_worker_given_a_kafka_url_scores_as_replay_does(broker, topic_prefix, tmp_path, scheme, direct):
    """`kafka://` (Apache Kafka in production) takes callqa's hot-path transport without the embedded
    broker's own fixes, `aiokafka://` Faust's stock one; the embedded broker speaks Kafka's protocol,
    so both run here."""
    log = str(tmp_path / "calls.jsonl")
    build_log(log, calls=20)
    expected = latest_by_call(replay_results(log)[0])
    settings = settings_for(broker, topic_prefix)
    worker = start_worker(broker, topic_prefix, env={"CALLQA_BROKER": f"{scheme}://{broker.bootstrap}"})
    try:
        send(log, settings)
        live = collect_results(settings, expected)
        health = worker.health()
    finally:
        worker.stop()
    assert latest_by_call(live) == expected
    assert_one_content_per_version(live)
    assert health["direct_delivery"] is direct


@pytest.mark.parametrize("store", ["memory://", "rocksdb://"])
def test_worker_killed_mid_send_restarts_to_the_same_results(broker, topic_prefix, tmp_path, store):
    log = str(tmp_path / "calls.jsonl")
    build_log(log, calls=300, turns=10, seed=11)
    expected = latest_by_call(replay_results(log)[0])
    settings = settings_for(broker, topic_prefix)
    data_dir = str(tmp_path / "worker")
    env = {"CALLQA_STORE": store}
    worker = start_worker(broker, topic_prefix, data_dir=data_dir, env=env)
    # Single-event messages make the send long enough to kill the worker in the middle of it.
    sender = threading.Thread(target=send, args=(log, settings), kwargs={"batch_size": 1})
    sender.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (worker.health() or {}).get("applied", 0) < 2000:
        time.sleep(0.02)
    assert (worker.health() or {}).get("applied", 0) >= 2000, "the worker never got going"
    worker.kill()
    worker = start_worker(broker, topic_prefix, data_dir=data_dir, env=env)
    try:
        sender.join(120)
        live = collect_results(settings, expected, timeout_s=180)
    finally:
        worker.stop()
    assert latest_by_call(live) == expected
    assert_one_content_per_version(live)


SAMPLE = REPO / "samples" / "calls.jsonl"


@pytest.mark.skipif(not SAMPLE.exists(), reason="no bundled sample log")
def test_the_bundled_sample_scores_live_exactly_as_replay(broker, topic_prefix):
    expected_results, report = replay_results(str(SAMPLE))
    expected = latest_by_call(expected_results)
    settings = settings_for(broker, topic_prefix)
    worker = start_worker(broker, topic_prefix)
    try:
        send(str(SAMPLE), settings)
        live = collect_results(settings, expected, timeout_s=120)
        letters = collect(settings, TopicNames(topic_prefix).deadletter, lambda r: len(r) >= report.rejected, 60)
        health = worker.health()
    finally:
        worker.stop()
    assert latest_by_call(live) == expected
    assert len(letters) == report.rejected
    assert health["applied"] == report.applied and health["dead_lettered"] == report.rejected


@pytest.mark.parametrize("sent_with, published_with", [("lz4", "zstd"), ("snappy", "gzip")])
def test_compressed_messages_are_scored_and_results_can_be_compressed(
    broker, topic_prefix, tmp_path, sent_with, published_with
):
    """Java producers often compress with lz4, snappy or zstd: a worker without those codecs stopped at
    the first such batch (aiokafka's UnsupportedCodecError) and again after every restart."""
    log = str(tmp_path / "calls.jsonl")
    build_log(log, calls=20)
    expected = latest_by_call(replay_results(log)[0])
    settings = settings_for(broker, topic_prefix)
    worker = start_worker(broker, topic_prefix, env={"CALLQA_KAFKA_COMPRESSION": published_with})
    try:
        send(log, settings.with_overrides(kafka_compression=sent_with))
        live = collect_results(settings, expected)
        health = worker.health()
    finally:
        worker.stop()
    assert latest_by_call(live) == expected
    assert health["status"] == "ok"
