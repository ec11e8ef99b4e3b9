"""One bad message never stops a worker, through the embedded broker: the probe's poison batch, a
partition moved too far ahead and brought back by an operator, a worker at the debug level under load."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from aiokafka import AIOKafkaProducer

from streams.partitioning import partition_for
from streams.topics import TopicNames
from tests.helpers.livekit import (
    collect,
    collect_results,
    latest_by_call,
    replay_results,
    send,
    settings_for,
    start_worker,
)
from tests.helpers.logkit import build_log

pytestmark = pytest.mark.broker

T0 = 1_760_000_000_000
YEAR_9000_MS = 221_845_392_000_000


def event(type_: str, data: dict, event_id: str, ts: int, call_id: str) -> dict:
    return {"v": 1, "type": type_, "event_id": event_id, "call_id": call_id, "ts_ms": ts, "data": data}


def good_call(call_id: str, ts: int) -> list[bytes]:
    return [
        json.dumps(event("call.started", {"agent_id": "a"}, f"{call_id}:1", ts, call_id)).encode(),
        json.dumps(event("turn", {"role": "user", "text": "hello there"}, f"{call_id}:2", ts + 1000, call_id)).encode(),
        json.dumps(event("call.ended", {"stop_reason": "[EXIT]"}, f"{call_id}:3", ts + 2000, call_id)).encode(),
    ]


def produce(settings, messages: list[tuple[int, bytes, bytes]]) -> None:
    """(partition, key, value) each, with a plain aiokafka producer: what any client could send."""

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=settings.bootstrap)
        await producer.start()
        try:
            for partition, key, value in messages:
                await producer.send_and_wait(
                    TopicNames(settings.topic_prefix).events, value, key=key, partition=partition
                )
        finally:
            await producer.stop()

    asyncio.run(run())


def test_the_probes_poison_batch_is_one_dead_letter_and_the_worker_scores_the_next_call(broker, topic_prefix):
    settings = settings_for(broker, topic_prefix)
    metrics = event(
        "rtvi", {"message": {"type": "metrics", "data": {"ttfb": 100000000000000000000}}}, "p:2", T0 + 1000, "p"
    )
    started = event("call.started", {"agent_id": "a"}, "p:1", T0, "p")
    poison = json.dumps({"v": 1, "call_id": "p", "events": [started, metrics, started]}).encode()
    worker = start_worker(broker, topic_prefix)
    try:
        home = partition_for("p", 4)
        produce(settings, [(home, b"p", poison)])
        nxt = partition_for("next", 4)
        produce(settings, [(nxt, b"next", raw) for raw in good_call("next", T0 + 5000)])
        live = collect_results(settings, {"next": {"version": 1}}, timeout_s=60)
        letters = collect(settings, TopicNames(topic_prefix).deadletter, lambda records: len(records) >= 1, 30)
        health = worker.health()
    finally:
        worker.stop()
    assert latest_by_call(live)["next"]["version"] == 1
    assert [letter["batch_index"] for letter in letters] == [1]
    assert "does not fit in 64 bits - at `data.message.data.ttfb`" in letters[0]["reason"]
    assert health is not None and health["status"] == "ok"


def test_a_partition_moved_too_far_ahead_refuses_new_calls_until_an_operator_resets_it(broker, topic_prefix):
    # Moved before the future-time bound existed (here: the bound off), as events accepted then did.
    from streams.send.watermark_reset import publish_reset

    settings = settings_for(broker, topic_prefix)
    worker = start_worker(broker, topic_prefix, env={"CALLQA_FUTURE_BOUND_S": "0"})
    try:
        partition = partition_for("late", 4)
        far = json.dumps(event("watermark", {"partition": partition}, "w", YEAR_9000_MS, "__watermark__")).encode()
        produce(
            settings,
            [(partition, b"__watermark__", far), *[(partition, b"late", raw) for raw in good_call("late", T0)]],
        )
        collect(settings, TopicNames(topic_prefix).deadletter, lambda records: len(records) >= 3, 60)
        refusing = worker.health()["refusing_late_calls"]
        now_ms = int(time.time() * 1000)
        asyncio.run(publish_reset(settings, partition))
        back = [raw.replace(b'"late', b'"back') for raw in good_call("late", now_ms)]
        produce(settings, [(partition_for("back", 4), b"back", raw) for raw in back])
        live = collect_results(settings, {"back": {"version": 1}}, timeout_s=60)
    finally:
        worker.stop()
    assert refusing[str(partition)]["refused_as_too_late"] == 3
    assert refusing[str(partition)]["watermark_ms"] == YEAR_9000_MS
    assert latest_by_call(live)["back"]["version"] == 1


def test_a_worker_at_the_debug_level_under_load_stays_up_and_scores_as_replay(broker, topic_prefix, tmp_path):
    log = str(tmp_path / "calls.jsonl")
    build_log(log, calls=150, turns=8, seed=5)
    expected = latest_by_call(replay_results(log)[0])
    settings = settings_for(broker, topic_prefix)
    worker = start_worker(broker, topic_prefix, env={"CALLQA_LOG_LEVEL": "debug"})
    try:
        send(log, settings, batch_size=1)
        live = collect_results(settings, expected, timeout_s=180)
        health = worker.health()
        alive = worker.process.poll() is None
    finally:
        worker.stop()
    assert latest_by_call(live) == expected
    assert alive and health is not None and health["status"] == "ok"
