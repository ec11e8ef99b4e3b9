"""The fuzz suite: seeded hostile messages (tests/fuzzkit.py) sent with a plain aiokafka producer to a
live worker through the embedded broker. The worker never stops, /health answers, every message is
scored or dead-lettered with a bounded reason, a replay of the same bytes agrees message by message,
and good calls sent afterwards score exactly as replay scores them. Then a short kill -9 loop under
load: nothing lost, live equal to replay.

FUZZ_MESSAGES sets how many (default 3,000; 100,000 for the long run), FUZZ_SEED the seed.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time

import msgspec
import pytest
from aiokafka import AIOKafkaProducer

from models.wire import decode_message
from streams.partitioning import partition_for
from streams.replay.log_replay import END_OF_INPUT_SWEEP, PartitionReplay, ReplayOutputs
from streams.topics import TopicNames
from streams.wiring import build_engine
from tests.helpers.fuzzkit import Fuzzed, HostileMessages
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

FUZZ_MESSAGES = int(os.environ.get("FUZZ_MESSAGES", "3000"))
FUZZ_SEED = int(os.environ.get("FUZZ_SEED", "37"))
PARTITIONS = 4
REASON_BOUND = 800
# Time enough for the long run (pytest-timeout's 300 s is for the default one).
FUZZ_TIMEOUT_S = max(300, FUZZ_MESSAGES // 60)


def good_call(call_id: str, ts: int) -> list[bytes]:
    def event(type_: str, data: dict, n: int, at: int) -> bytes:
        return json.dumps(
            {"v": 1, "type": type_, "event_id": f"{call_id}:{n}", "call_id": call_id, "ts_ms": at, "data": data}
        ).encode()

    return [
        event("call.started", {"agent_id": "a"}, 1, ts),
        event("turn", {"role": "user", "text": "I need to move my flight"}, 2, ts + 1000),
        event("turn", {"role": "agent", "text": "Sure, which day?"}, 3, ts + 2500),
        event("call.ended", {"stop_reason": "[EXIT]"}, 4, ts + 4000),
    ]


def good_calls(prefix: str, count: int, ts: int) -> list[Fuzzed]:
    """`count` calls per partition at least (each partition's time set before the fuzz comes)."""
    messages, per_partition, n = [], dict.fromkeys(range(PARTITIONS), 0), 0
    while min(per_partition.values()) < count:
        call_id = f"{prefix}-{n}"
        n += 1
        home = partition_for(call_id, PARTITIONS)
        if per_partition[home] >= count:
            continue
        per_partition[home] += 1
        messages += [Fuzzed(home, call_id.encode(), raw, "good") for raw in good_call(call_id, ts + n * 10)]
    return messages


def produce(settings, messages: list[Fuzzed]) -> list[tuple[int, int]]:
    """Send in order with a generic producer; (partition, offset) of each."""

    async def run() -> list[tuple[int, int]]:
        producer = AIOKafkaProducer(bootstrap_servers=settings.bootstrap, max_request_size=4 * 1024 * 1024, linger_ms=5)
        await producer.start()
        try:
            futures = [
                await producer.send(
                    TopicNames(settings.topic_prefix).events,
                    message.value,
                    key=message.key,
                    partition=message.partition,
                )
                for message in messages
            ]
            return [(metadata.partition, metadata.offset) for metadata in await asyncio.gather(*futures)]
        finally:
            await producer.stop()

    return asyncio.run(run())


def replayed(settings, sent: list[tuple[tuple[int, int], Fuzzed]]):
    """Replay of the same bytes (strays aside: no replay can place them where they came), with the
    worker's settings: its results by (call, version), and its dead letters by message."""
    placed = [(where, message) for where, message in sent if not message.stray]
    results: dict[tuple[str, int], dict] = {}
    letters: dict[tuple[int, int], list[str]] = {}

    def on_result(key, result, line) -> None:
        results[(result.call_id, result.version)] = json.loads(line)

    def on_dead_letter(key, rejected, index) -> None:
        if key[1] != END_OF_INPUT_SWEEP:  # (a replay ends its input; the live worker's goes on)
            letters.setdefault(placed[index][0], []).append(rejected.reason)

    PartitionReplay(
        build_engine(settings),
        PARTITIONS,
        ReplayOutputs(on_result, on_dead_letter),
        max_message_bytes=settings.max_message_bytes,
        max_result_bytes=settings.max_result_bytes,
    ).run([message.value for _, message in placed])
    return results, letters


@pytest.mark.timeout(FUZZ_TIMEOUT_S * 2)
def test_hostile_messages_never_stop_a_worker_and_score_as_replay_scores_them(broker, topic_prefix):
    settings = settings_for(broker, topic_prefix, partitions=PARTITIONS)
    now_ms = int(time.time() * 1000)
    fuzz = HostileMessages(FUZZ_SEED, PARTITIONS, now_ms).messages(FUZZ_MESSAGES)
    before, after = good_calls("warm", 2, now_ms - 600_000), good_calls("after", 5, now_ms + 5_000)
    # (No idle ticks: the topic then holds exactly what was sent, and the replay reads the same.)
    worker = start_worker(broker, topic_prefix, env={"CALLQA_IDLE_TICK_S": "0"})
    try:
        messages = before + fuzz + after
        sent = list(zip(produce(settings, messages), messages, strict=True))
        expected_results, expected_letters = replayed(settings, sent)
        strays = [where for where, message in sent if message.stray]
        after_calls = {message.key.decode() for message in after}
        live = collect_results(settings, {call_id: {"version": 1} for call_id in after_calls}, timeout_s=FUZZ_TIMEOUT_S)
        wanted = sum(len(reasons) for reasons in expected_letters.values()) + len(strays)
        letters = collect(
            settings, TopicNames(topic_prefix).deadletter, lambda records: len(records) >= wanted, FUZZ_TIMEOUT_S
        )
        health = worker.health()
        alive = worker.process.poll() is None
    finally:
        worker.stop()

    assert alive and health is not None and health["status"] == "ok"
    live_letters: dict[tuple[int, int], list[str]] = {}
    for letter in letters:
        live_letters.setdefault((letter["partition"], letter["offset"]), []).append(letter["reason"])
    assert all(len(letter["reason"]) <= REASON_BOUND for letter in letters)
    # Message by message: the same refusals, live and in replay (strays: the worker's alone).
    assert {where: len(reasons) for where, reasons in live_letters.items() if where not in strays} == {
        where: len(reasons) for where, reasons in expected_letters.items()
    }
    assert [
        where for where in strays if not any("belongs to partition" in reason for reason in live_letters.get(where, []))
    ] == []
    # Every message is scored or dead-lettered: one with no dead letter had events to score.
    for where, message in sent:
        if where not in live_letters:
            assert decode_message(message.value, settings.max_message_bytes).events, (where, message.kind)
    # Every result published is the one replay makes; the good calls after the fuzz are all there.
    assert all(expected_results.get((result["call_id"], result["version"])) == result for result in live)
    latest = latest_by_call(live)
    assert {call_id: latest[call_id] for call_id in after_calls} == {
        call_id: expected_results[(call_id, latest[call_id]["version"])] for call_id in after_calls
    }
    print(
        f"fuzzed {len(fuzz)} messages (seed {FUZZ_SEED}), {len(letters)} dead letters "
        f"over {len(live_letters)} messages, {len(strays)} strays, {len(live)} results"
    )


def test_a_worker_killed_under_load_with_hostile_messages_loses_nothing(broker, topic_prefix, tmp_path):
    log = str(tmp_path / "calls.jsonl")
    build_log(log, calls=300, turns=10, seed=13)
    expected = latest_by_call(replay_results(log, PARTITIONS)[0])
    settings = settings_for(broker, topic_prefix, partitions=PARTITIONS)
    # Only what the decoder refuses goes beside the log: it leaves every partition's time alone.
    hostile = [
        message
        for message in HostileMessages(FUZZ_SEED + 1, PARTITIONS, 1_760_000_000_000).messages(600)
        if not decode_message(message.value, settings.max_message_bytes).events
    ]
    data_dir = str(tmp_path / "worker")
    worker = start_worker(broker, topic_prefix, data_dir=data_dir)
    sender = threading.Thread(target=send, args=(log, settings), kwargs={"batch_size": 1})
    fuzzer = threading.Thread(target=produce, args=(settings, hostile))
    sender.start()
    fuzzer.start()
    kills = 0
    try:
        for _ in range(3):
            applied = (worker.health() or {}).get("applied", 0)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and (worker.health() or {}).get("applied", 0) < applied + 800:
                time.sleep(0.02)
            worker.kill()
            kills += 1
            worker = start_worker(broker, topic_prefix, data_dir=data_dir)
        sender.join(180)
        fuzzer.join(60)
        live = collect_results(settings, expected, timeout_s=180)
        alive = worker.process.poll() is None
    finally:
        worker.stop()
    lost = [call_id for call_id in expected if call_id not in latest_by_call(live)]
    differing = [call_id for call_id, result in latest_by_call(live).items() if expected.get(call_id) != result]
    print(f"kills {kills}, lost {len(lost)}, differing {len(differing)}, hostile {len(hostile)}")
    assert alive and kills == 3 and lost == [] and differing == []
    assert all(msgspec.json.decode(json.dumps(result)) == result for result in live)
