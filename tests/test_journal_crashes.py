"""A worker that crashes and is restored from its journal publishes what it would have published had
it never stopped: after a batch of several calls, after calls forgotten and taken up again, and after
a crash that cut a journal write short. Driven through the worker's own message flow, with the
journal table a dict; every message not acknowledged before a crash is delivered again."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from scorers.engine import CallEngine
from streams.live import LiveScorer
from streams.message_flow import MessageFlow
from workerkit import DictSink, KafkaMessage

T0 = 1_760_000_000_000


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


class CuttableSink(DictSink):
    """The journal table as a dict; a crash can cut one journal write after its first changes."""

    def __init__(self) -> None:
        super().__init__({})
        self.cut_after: int | None = None

    def write_journal(self, message: Any, changes: list[tuple[bytes, bytes | None]]) -> None:
        if self.cut_after is None:
            return super().write_journal(message, changes)
        kept, self.cut_after = self.cut_after, None
        super().write_journal(message, changes[:kept])
        raise Crashed


def published(messages: list[bytes], crash_after: frozenset[int] = frozenset(),
              cut_writing: dict[int, int] | None = None) -> tuple[set[bytes], set[bytes]]:
    """The distinct results and dead letters of partition 0's messages, a segment written after each.
    After the messages at the offsets of `crash_after` the worker crashes; while writing the segment
    of an offset in `cut_writing`, it crashes after that many changes. A new worker then restores the
    partition and reads on from the message after the last acknowledged one."""
    sink, cuts = CuttableSink(), dict(cut_writing or {})

    def new_worker() -> MessageFlow:
        # No lateness and no retention beyond it: a deadline or a retention passes with the next event.
        live = LiveScorer(CallEngine(allowed_lateness_ms=0, retention_after_end_ms=0))
        live.book.segment_seconds = 0.0
        return MessageFlow(live, sink)

    async def run() -> None:
        flow, offset, crashed = new_worker(), 0, set()
        while offset < len(messages):
            sink.cut_after = cuts.pop(offset, None)
            try:
                await flow.score(KafkaMessage(messages[offset], offset))
            except Crashed:
                crashed.add(offset)
            if offset in crashed or (offset in crash_after and offset not in crashed):
                crashed.add(offset)
                flow = new_worker()
                offset = max((message.offset for message in sink.acknowledged), default=-1) + 1
                continue
            offset += 1

    asyncio.run(run())
    return ({value for topic, _, value in sink.sent if topic == "results"},
            {value for topic, _, value in sink.sent if topic == "deadletter"})


def test_a_batch_of_several_calls_is_restored_in_the_order_its_events_were_applied():
    # Re-folded call by call, A's second turn moved time past B's start, which the engine then refused
    # as too late for a new call: B was lost.
    messages = [batch(turn("A", 1, 1_000), start("B", 1_200), turn("A", 2, 1_300)), END_OF_INPUT]
    uninterrupted = published(messages)
    assert {json.loads(result)["call_id"] for result in uninterrupted[0]} == {"A", "B"}
    assert published(messages, crash_after=frozenset({0})) == uninterrupted


def test_a_call_forgotten_again_with_another_keeps_its_new_retirement_record():
    # At offset 2, a and x are forgotten at once: deleting a's last segment also deleted x's earlier
    # retirement record, after x's new one was written. Restored after offset 3, x's turn came back
    # as a call of its own and was swept.
    messages = [batch(start("a", 0), start("x", 1), end("x", 2)), batch(start("b", 3), turn("x", 1, 4)),
                batch(end("a", 5), end("x", 6, "x-end2"), start("c", 7)), batch(end("c", 8), start("d", 9)),
                END_OF_INPUT]
    assert published(messages, crash_after=frozenset({3})) == published(messages)


def test_a_retirement_record_left_by_a_cut_write_is_brought_up_to_date_on_restore():
    # x is forgotten twice; the write of the second forgetting is cut after its segment (which names x
    # as forgotten), leaving x's record of the first. The restore re-wrote only missing records, so
    # once that segment went, x's turn of offset 2 came back as a call of its own.
    messages = [batch(start("a", 0), start("x", 1), end("x", 2)), one(start("b", 3)),
                batch(turn("x", 1, 4), turn("b", 1, 5)), one(end("x", 6, "x-end2")), one(turn("a", 1, 7)),
                one(end("a", 8)), one(start("c", 9)), END_OF_INPUT]
    assert published(messages, crash_after=frozenset({6}), cut_writing={4: 1}) == published(messages)
