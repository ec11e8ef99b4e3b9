"""What `callqa send` publishes, scored by the live worker, gives exactly what `callqa replay` gives
for the same log, whatever the batch size: results, dead letters and inactivity sweeps, on logs made
to sit on the edges (calls silent past their timeout that speak again, annotations arriving as their
call's retention passes, events reordered within the allowed lateness). Modelled without Kafka: each
partition's messages go through `LiveScorer` in the order sent, and what the worker records in the
events topic (its sweeps' ends) comes back after them, as it would."""

from __future__ import annotations

import collections
import json
import random

import msgspec
import pytest

from models.events import CONTRACT_VERSION, WATERMARK_CALL_ID
from scorers.engine import CallEngine
from streams.live import LiveScorer
from streams.partitioning import partition_for
from streams.replay import replay
from streams.send_plan import SendPlan

T0 = 1_760_000_000_000
SECOND = 1_000


def generated_log(rng: random.Random) -> list[bytes]:
    events = []
    for c in range(rng.randint(2, 7)):
        call_id = f"call-{c}"
        ts = T0 + rng.randint(0, 20 * SECOND)
        n = 0

        def add(type_: str, data: dict, at: int) -> None:
            nonlocal n
            n += 1
            events.append({"v": 1, "type": type_, "event_id": f"{call_id}:{n}", "call_id": call_id, "ts_ms": at, "data": data})

        add("call.started", {"agent_id": "a1", "inactivity_timeout_s": rng.choice([1, 2, 5])}, ts)
        for _ in range(rng.randint(1, 8)):
            ts += rng.choice([200, 900, 1_500, 3_000, 7_000, 12_000])  # now and then longer than the timeout
            if rng.random() < 0.2:
                add("rtvi", {"message": {"label": "rtvi-ai", "type": "user-audio-level", "data": {"value": 0.2}}}, ts)
            else:
                add("turn", {"role": rng.choice(["user", "assistant"]), "text": f"turn {n}"}, ts)
        if rng.random() < 0.7:
            ts += rng.choice([100, 2_000])
            add("call.ended", {"stop_reason": "[EXIT]"}, ts)
            if rng.random() < 0.6:
                add("call.annotated", {"user_sentiment": "Positive"}, ts + rng.choice([500, 3_000, 9_000]))
    # In event-time order, each event moved by up to half a second: the reordering a live feed has.
    events.sort(key=lambda e: (e["ts_ms"] + rng.randint(-500, 500), e["event_id"]))
    return [json.dumps(e).encode() for e in events]


def engine(settings: dict) -> CallEngine:
    return CallEngine(**settings)


def replayed(log: list[bytes], partitions: int, settings: dict) -> tuple[dict, collections.Counter]:
    results: dict[str, list[bytes]] = {}
    dead: collections.Counter = collections.Counter()
    replay(log, engine(settings), partitions, lambda r: results.setdefault(r.call_id, []).append(msgspec.json.encode(r)),
           on_dead_letter=lambda rejected, index: dead.update([(rejected.event_id, rejected.reason)]))
    return results, dead


def sent_and_scored(log: list[bytes], partitions: int, batch_size: int, settings: dict) -> tuple[dict, collections.Counter]:
    plan = SendPlan(partitions, batch_size)
    messages = [m for raw in log for m in plan.add(raw)] + plan.finish()
    topic: dict[int, collections.deque] = {p: collections.deque() for p in range(partitions)}
    for message in messages:
        partition = message.partition if message.partition is not None else partition_for(message.key.decode(), partitions)
        topic[partition].append(message.value)
    ts = plan.report.max_ts_ms or 0
    for partition in range(partitions):  # what `callqa send` ends a log with
        topic[partition].append(msgspec.msgpack.encode({
            "v": CONTRACT_VERSION, "type": "watermark", "event_id": f"{WATERMARK_CALL_ID}:{ts}:{partition}",
            "call_id": WATERMARK_CALL_ID, "ts_ms": ts, "data": {"end_of_input": True, "partition": partition}}))
    live = LiveScorer(engine(settings), topic_partitions=partitions)
    results: dict[str, list[bytes]] = {}
    dead: collections.Counter = collections.Counter()
    for partition, queue in topic.items():
        offset = 0
        while queue:
            out = live.handle(queue.popleft(), "callqa.events", partition, offset)
            offset += 1
            for result in out.results:
                results.setdefault(result.call_id, []).append(msgspec.json.encode(result))
            dead.update((letter.event_id, letter.reason) for letter in out.dead_letters)
            for event in out.recorded_events:  # recorded in the events topic, keyed by its call
                queue.append(msgspec.msgpack.encode(event))
    return results, dead


SETTINGS = [
    {"allowed_lateness_ms": 0, "retention_after_end_ms": 0},
    {"allowed_lateness_ms": 600, "retention_after_end_ms": 2_000},
    {"allowed_lateness_ms": 2_000, "retention_after_end_ms": 86_400_000},
]


@pytest.mark.parametrize("settings", SETTINGS, ids=["no-lateness-no-retention", "short", "defaults-retention"])
@pytest.mark.parametrize("partitions", [1, 3])
def test_a_sent_log_scores_live_exactly_as_replay_scores_it_at_every_batch_size(settings, partitions):
    rng = random.Random(f"{partitions}:{settings}")
    swept = 0
    for _ in range(25):
        log = generated_log(rng)
        expected = replayed(log, partitions, settings)
        swept += sum(b"INACTIVITY" in line for lines in expected[0].values() for line in lines)
        for batch_size in (1, 4, 50):
            assert sent_and_scored(log, partitions, batch_size, settings) == expected, (batch_size, log)
    assert swept > 10  # the logs do reach the sweep's edges
