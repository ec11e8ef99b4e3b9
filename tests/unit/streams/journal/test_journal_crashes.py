"""A worker that crashes and is restored from its journal publishes what it would have published had
it never stopped: after a batch of several calls, after calls forgotten and taken up again, and after
a crash that cut a journal write short. Driven through the worker's own message flow, with the
journal table a dict; every message not acknowledged before a crash is delivered again."""

from __future__ import annotations

import asyncio
import json
import math
import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from scorers.engine import CallEngine
from streams.partitioning import partition_for
from streams.worker.live_scorer import LiveScorer
from streams.worker.message_flow import MessageFlow
from tests.helpers.logkit import edge_log, sent
from tests.helpers.workerkit import DictSink, KafkaMessage

T0 = 1_760_000_000_000
# No lateness and no retention beyond it: a deadline or a retention passes with the next event.
NO_LATENESS = {"allowed_lateness_ms": 0, "retention_after_end_ms": 0}


def doc(type_: str, data: dict, event_id: str, ts: int, call_id: str) -> dict:
    return {"v": 1, "type": type_, "event_id": event_id, "call_id": call_id, "ts_ms": T0 + ts, "data": data}


def start(call_id: str, ts: int) -> dict:
    return doc("call.started", {"agent_id": "a1"}, f"{call_id}-start", ts, call_id)


def turn(call_id: str, n: int, ts: int) -> dict:
    return doc("turn", {"role": "user", "text": f"turn {n}"}, f"{call_id}-{n}", ts, call_id)


def end(call_id: str, ts: int, event_id: str | None = None) -> dict:
    return doc("call.ended", {"stop_reason": "[EXIT]"}, event_id or f"{call_id}-end", ts, call_id)


def batch(*documents: dict) -> bytes:
    return json.dumps({"v": 1, "events": list(documents)}).encode()


def one(document: dict) -> bytes:
    return json.dumps(document).encode()


END_OF_INPUT = one(doc("watermark", {"end_of_input": True, "partition": 0}, "end", 0, "__watermark__"))


class Crashed(Exception):
    pass


class Topic(DictSink):
    """The events topic's partitions and the journal table, as the worker's sink sees them: the
    events it records (its sweeps' ends) join the end of their call's partition, and a crash can cut
    one journal write after its first changes."""

    def __init__(self, partitions: dict[int, list[bytes]]) -> None:
        super().__init__({})
        self.partitions = {partition: list(messages) for partition, messages in partitions.items()}
        self.cut_after: int | None = None

    async def send_event(self, key: bytes, value: bytes) -> asyncio.Future[Any]:
        self.partitions[partition_for(key.decode(), len(self.partitions))].append(value)
        return await super().send_event(key, value)

    def write_journal(self, message: Any, changes: list[tuple[bytes, bytes | None]]) -> list[asyncio.Future[Any]]:
        if self.cut_after is None:
            return super().write_journal(message, changes)
        kept, self.cut_after = self.cut_after, None
        super().write_journal(message, changes[:kept])
        raise Crashed


@dataclass
class Schedule:
    """When the worker crashes and when a segment is due. Fixed: after the messages in `crash_after`,
    and while writing the segment of a message in `cut_writing` (after that many changes), a segment
    after every message. With `rng`: at random, a few times a run."""

    crash_after: set[tuple[int, int]] = field(default_factory=set)  # (partition, offset)
    cut_writing: dict[tuple[int, int], int] = field(default_factory=dict)
    rng: random.Random | None = None
    crashes_left: int = 4

    def next_partition(self, ready: list[int]) -> int:
        return self.rng.choice(ready) if self.rng else ready[0]

    def segment_due(self) -> bool:
        return self.rng is None or self.rng.random() < 0.5

    def cut(self, where: tuple[int, int]) -> int | None:
        if self.rng is None:
            return self.cut_writing.pop(where, None)
        return self.rng.randint(0, 3) if self.crashes_left and self.rng.random() < 0.05 else None

    def crash(self, where: tuple[int, int]) -> bool:
        if self.rng is None:
            if where in self.crash_after:
                self.crash_after.discard(where)
                return True
            return False
        return self.crashes_left > 0 and self.rng.random() < 0.1


def published(
    partitions: dict[int, list[bytes]], schedule: Schedule | None = None, settings: dict | None = None
) -> tuple[set[bytes], set[bytes]]:
    """The distinct results and dead letters the worker publishes for the topic's messages. After a
    crash a new worker restores each partition from the journal and reads on from the message after
    the last acknowledged one (a message may so come twice; a result or dead letter published twice
    is one)."""
    topic, schedule = Topic(partitions), schedule or Schedule()
    settings = settings or NO_LATENESS

    def new_worker() -> MessageFlow:
        return MessageFlow(LiveScorer(CallEngine(**settings), topic_partitions=len(partitions)), topic)

    async def run() -> None:
        flow, next_offset = new_worker(), dict.fromkeys(partitions, 0)
        while ready := [p for p, messages in topic.partitions.items() if next_offset[p] < len(messages)]:
            partition = schedule.next_partition(ready)
            offset = next_offset[partition]
            flow.live.book.segment_seconds = 0.0 if schedule.segment_due() else math.inf
            topic.cut_after = schedule.cut((partition, offset))
            try:
                await flow.score(KafkaMessage(topic.partitions[partition][offset], offset, partition))
                crashed = schedule.crash((partition, offset))
            except Crashed:
                crashed = True
            next_offset[partition] += 1
            if crashed:
                schedule.crashes_left -= 1
                flow = new_worker()
                for p in partitions:
                    next_offset[p] = 1 + max((m.offset for m in topic.acknowledged if m.partition == p), default=-1)

    asyncio.run(run())
    return (
        {value for kind, _, value in topic.sent if kind == "results"},
        {value for kind, _, value in topic.sent if kind == "deadletter"},
    )


def test_a_batch_of_several_calls_is_restored_in_the_order_its_events_were_applied():
    # Re-folded call by call, A's second turn moved time past B's start, which the engine then refused
    # as too late for a new call: B was lost.
    topic = {0: [batch(turn("A", 1, 1_000), start("B", 1_200), turn("A", 2, 1_300)), END_OF_INPUT]}
    uninterrupted = published(topic)
    assert {json.loads(result)["call_id"] for result in uninterrupted[0]} == {"A", "B"}
    assert published(topic, Schedule(crash_after={(0, 0)})) == uninterrupted


def test_a_call_forgotten_again_with_another_keeps_its_new_retirement_record():
    # At offset 2, a and x are forgotten at once: deleting a's last segment also deleted x's earlier
    # retirement record, after x's new one was written. Restored after offset 3, x's turn came back
    # as a call of its own and was swept.
    topic = {
        0: [
            batch(start("a", 0), start("x", 1), end("x", 2)),
            batch(start("b", 3), turn("x", 1, 4)),
            batch(end("a", 5), end("x", 6, "x-end2"), start("c", 7)),
            batch(end("c", 8), start("d", 9)),
            END_OF_INPUT,
        ]
    }
    assert published(topic, Schedule(crash_after={(0, 3)})) == published(topic)


def test_a_retirement_record_left_by_a_cut_write_is_brought_up_to_date_on_restore():
    # x is forgotten twice; the write of the second forgetting is cut after its segment (which names x
    # as forgotten), leaving x's record of the first. The restore re-wrote only missing records, so
    # once that segment went, x's turn of offset 2 came back as a call of its own.
    topic = {
        0: [
            batch(start("a", 0), start("x", 1), end("x", 2)),
            one(start("b", 3)),
            batch(turn("x", 1, 4), turn("b", 1, 5)),
            one(end("x", 6, "x-end2")),
            one(turn("a", 1, 7)),
            one(end("a", 8)),
            one(start("c", 9)),
            END_OF_INPUT,
        ]
    }
    assert published(topic, Schedule(crash_after={(0, 6)}, cut_writing={(0, 4): 1})) == published(topic)


SETTINGS = [
    NO_LATENESS,
    {"allowed_lateness_ms": 600, "retention_after_end_ms": 2_000},
    {"allowed_lateness_ms": 0, "retention_after_end_ms": 86_400_000},
]


@pytest.mark.parametrize("partitions", [1, 3])
def test_crashes_at_random_points_change_nothing_a_sent_log_publishes(partitions):
    rng = random.Random(f"crashes:{partitions}")
    crashed = 0
    for n in range(80):
        settings = SETTINGS[n % len(SETTINGS)]
        topic = sent(edge_log(rng), partitions, rng.choice([1, 4, 50]))
        schedule = Schedule(rng=random.Random(f"{partitions}:{n}"))
        assert published(topic, schedule, settings) == published(topic, settings=settings), n
        crashed += schedule.crashes_left < 4
    assert crashed > 40  # most runs crashed at least once
