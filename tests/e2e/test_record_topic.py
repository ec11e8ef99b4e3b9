"""`callqa record`: the events topic written as a log whose replay gives the workers' results."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import msgspec
import pytest

from models.wire import JSONL_LOG, MSGPACK_LOG, decode_message, encode_record
from streams.files.event_log import read_log
from streams.kafka.clients import producer
from streams.partitioning import partition_for
from streams.replay.record import (
    TopicRecording,
    events_to_record,
    record_events_topic,
    record_message,
)
from streams.topics import TopicNames
from tests.helpers.livekit import (
    collect_results,
    latest_by_call,
    replay_results,
    send,
    settings_for,
    start_worker,
)
from tests.helpers.logkit import build_log

T0 = 1_760_000_000_000


def _event(call_id: str, n: int, type_: str = "turn", data: dict | None = None) -> dict:
    data = data if data is not None else {"role": "user", "text": "hello", "start_ms": 0, "end_ms": 900}
    return {"v": 1, "event_id": f"{call_id}:{n}", "call_id": call_id, "ts_ms": T0 + n, "type": type_, "data": data}


def _call_on(partition: int, partitions: int = 4, avoid: str = "") -> str:
    return next(f"c{k}" for k in range(1000) if partition_for(f"c{k}", partitions) == partition and f"c{k}" != avoid)


def test_what_the_worker_dead_letters_on_reading_is_left_out_and_counted():
    home, other = _call_on(0), _call_on(1)
    recording = TopicRecording()
    batch = json.dumps({"v": 1, "events": [_event(home, 1), _event(other, 2), {"v": 1, "type": "turn"}]}).encode()
    kept = events_to_record(batch, 0, 4, 1 << 20, recording)
    assert [event.call_id for event in kept.events] == [home] and not kept.whole
    assert (recording.strays, recording.undecodable) == (1, 1)
    assert events_to_record(None, 0, 4, 1 << 20, recording).events == []  # (a tombstone)
    assert events_to_record(b"\xff not an event", 0, 4, 1 << 20, recording).events == []
    big = json.dumps(_event(home, 3, data={"role": "user", "text": "x" * 2000, "start_ms": 0, "end_ms": 1})).encode()
    assert events_to_record(big, 0, 4, 1000, recording).events == []  # over the worker's max_message_bytes
    assert recording.undecodable == 4


def test_a_watermark_is_recorded_on_the_partition_it_came_on_which_the_worker_applied_it_to():
    # Without a partition of its own, replay would apply it to the partition its call_id hashes to.
    for data in ({}, {"partition": 1}):
        tick = json.dumps(
            {"v": 1, "event_id": "w1", "call_id": "__watermark__", "ts_ms": T0, "type": "watermark", "data": data}
        ).encode()
        kept = events_to_record(tick, 3, 4, 1 << 20, TopicRecording())
        assert [event.data.partition for event in kept.events] == [3] and not kept.whole


def test_a_message_in_the_logs_encoding_is_written_as_it_came_and_what_no_encoding_holds_is_left_out():
    """Decoded and encoded again, an event may grow past the size limit; what JSON or MessagePack cannot
    hold (bytes, NaN, an integer beyond 64 bits) the worker refuses on reading (models/wire_limits.py)."""
    call = _call_on(0)
    packed = msgspec.msgpack.encode(
        _event(call, 1, "db.state", {"side": "agent", "hash": "h", "db": {"blob": b"\x00\x01", "ratio": float("nan")}})
    )
    as_json = json.dumps(_event(call, 2)).encode()
    huge = json.dumps(
        _event(
            call,
            3,
            "rtvi",
            {"side": "agent", "message": {"label": "rtvi-ai", "type": "server-message", "data": {"trace": 2**70}}},
        )
    ).encode()

    def record(value: bytes, log_format: str, recording: TopicRecording) -> list[bytes]:
        written: list[bytes] = []
        record_message(value, 0, 4, 1 << 20, log_format, written.append, recording)
        return written

    into_msgpack, into_jsonl = TopicRecording(), TopicRecording()
    assert record(as_json, JSONL_LOG, into_jsonl) == [as_json + b"\n"]
    # In the other encoding, re-encoded.
    assert decode_message(record(as_json, MSGPACK_LOG, into_msgpack)[0]).events == decode_message(as_json).events
    # Refused on reading by the worker, in either encoding: left out and counted as such.
    for value in (packed, huge):
        assert record(value, MSGPACK_LOG, into_msgpack) == [] and record(value, JSONL_LOG, into_jsonl) == []
    assert (into_msgpack.events, into_msgpack.undecodable, into_jsonl.events, into_jsonl.undecodable) == (1, 2, 1, 2)


@pytest.mark.parametrize("log_format", [MSGPACK_LOG, JSONL_LOG])
def test_a_recorded_event_reads_back_as_the_same_event(log_format):
    raw = msgspec.json.encode(
        _event(
            "c1",
            1,
            "rtvi",
            {"side": "agent", "message": {"label": "rtvi-ai", "type": "metrics", "data": {"ttfb": [{"value": 0.25}]}}},
        )
    )
    event = decode_message(raw).events[0]
    again = decode_message(encode_record(event, log_format).rstrip(b"\n")).events
    assert again == [event]


@pytest.mark.broker
def test_silent_calls_on_a_quiet_partition_are_swept_and_the_recorded_topic_replays_to_every_result(
    broker, topic_prefix, tmp_path
):
    """No end-of-input watermark: the worker's idle clock moves event time on and records the ticks.
    The topic then holds what replay needs to agree: those ticks and the ends the sweeps made."""
    log = str(tmp_path / "calls.jsonl")
    stats = build_log(log, calls=40, inactivity_timeout_s=2)
    assert stats["never_end"] >= 2
    expected = latest_by_call(replay_results(log, allowed_lateness_ms=500)[0])
    settings = settings_for(broker, topic_prefix)
    worker = start_worker(broker, topic_prefix, env={"CALLQA_IDLE_TICK_S": "0.5", "CALLQA_ALLOWED_LATENESS_MS": "500"})
    try:
        # One event per message: no batching reorder, which a 500 ms lateness could not absorb.
        send(log, settings, end_of_input=False, batch_size=1)
        stray = _call_on(3)
        asyncio.run(
            _produce(
                settings,
                TopicNames(topic_prefix).events,
                stray,
                partition=0,
                value=json.dumps(_event(stray, 1)).encode(),
            )
        )
        live = collect_results(settings, expected, timeout_s=60)
    finally:
        worker.stop()
    assert latest_by_call(live) == expected
    recorded = str(tmp_path / "topic.msgpack")
    with open(recorded, "wb") as out:
        recording = record_events_topic(settings, TopicNames(topic_prefix).events, out.write, MSGPACK_LOG)
    decoded = [decode_message(record) for record in read_log(log)]
    # (`send` dead-letters an oversized record itself: it never reaches the topic.)
    undecodable = sum(len(d.rejected) for d in decoded if not d.rejected or "-byte limit" not in d.rejected[0].reason)
    assert recording.partitions == 4 and recording.strays == 1 and recording.undecodable == undecodable >= 1
    assert recording.events > sum(len(d.events) for d in decoded)  # (the ticks and the sweeps' ends)
    replayed, _ = replay_results(recorded, allowed_lateness_ms=500)
    by_version = {(r["call_id"], r["version"]): r for r in live}
    assert {(r["call_id"], r["version"]): r for r in replayed} == by_version
    swept = [r for r in latest_by_call(replayed).values() if r["evaluation"]["stop_reason"] == "[INACTIVITY_TIMEOUT]"]
    assert len(swept) == stats["never_end"]


async def _produce(settings, topic: str, key: str, partition: int, value: bytes) -> None:
    kafka = producer(settings)
    await kafka.start()
    try:
        await kafka.send_and_wait(topic, value, key=key.encode(), partition=partition)
    finally:
        await kafka.stop()


@pytest.mark.broker
def test_the_record_command_writes_a_json_lines_log_that_replays_as_the_sent_one(broker, topic_prefix, tmp_path):
    log = str(tmp_path / "calls.jsonl")
    build_log(log, calls=12)
    # (no worker: the topic holds what was sent, and its end-of-input watermarks)
    send(log, settings_for(broker, topic_prefix))
    recorded = tmp_path / "recorded.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "record",
            str(recorded),
            "--broker",
            broker.url,
            "--topic-prefix",
            topic_prefix,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"score it: callqa replay {recorded} --partitions 4 --cohorts COHORTS.json" in done.stderr
    assert "left out, as the workers dead-lettered them: 3 undecodable or oversized" in done.stderr
    assert recorded.read_bytes().startswith(b"{")  # (JSON Lines, by its name)

    def by_version(results: list[dict]) -> dict:  # (the log's calls come partition by partition now)
        return {(r["call_id"], r["version"]): r for r in results}

    assert by_version(replay_results(str(recorded))[0]) == by_version(replay_results(log)[0])
