"""The worker's message flow (streams/worker/message_flow.py): what a message sent reaches the broker before
the journal segment that records the message as applied, so that a crash in between loses nothing."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest

from scorers.engine import CallEngine
from streams.journal.call_journal import encode_segment, segment_key
from streams.worker.live_scorer import LiveScorer
from streams.worker.message_flow import MessageFlow
from tests.helpers.workerkit import DictSink, KafkaMessage, message

T0 = 1_700_000_000_000
MINUTE = 60_000


def one_call(call_id: str, start: int) -> list[bytes]:
    return [
        message("call.started", {"agent_id": "a1"}, f"{call_id}-1", start, call_id),
        message("turn", {"role": "user", "text": "my order 48213 is late"}, f"{call_id}-2", start + 1000, call_id),
        message("call.ended", {"stop_reason": "[EXIT]"}, f"{call_id}-3", start + 2000, call_id),
    ]


class HeldSink(DictSink):
    """A sink whose results stay in the producer's buffer until the test delivers (or fails) them."""

    def __init__(self, table: dict[bytes, bytes]) -> None:
        super().__init__(table)
        self.in_flight: list[asyncio.Future[Any]] = []

    async def send_result(self, key: bytes, value: bytes) -> asyncio.Future[Any]:
        self.sent.append(("results", key, value))
        future = asyncio.get_running_loop().create_future()
        self.in_flight.append(future)
        return future


def flow_of(live: LiveScorer, sink: DictSink, write_every_message: bool) -> MessageFlow:
    live.book.segment_seconds = 0.0 if write_every_message else math.inf
    return MessageFlow(live, sink)


async def _settles_after_delivery(sink: HeldSink, flow: MessageFlow, messages: list[bytes]) -> tuple[dict, dict]:
    """Score all messages (the last one's segment due); returns the table before and after the
    result's delivery."""
    for offset, raw in enumerate(messages[:-1]):
        await flow.score(KafkaMessage(raw, offset))
    flow.live.book.segment_seconds = 0.0
    scoring = asyncio.create_task(flow.score(KafkaMessage(messages[-1], len(messages) - 1)))
    for _ in range(5):
        await asyncio.sleep(0)
    before = dict(sink.table), list(sink.acknowledged)
    assert not scoring.done() and [topic for topic, _, _ in sink.sent] == ["results"]
    sink.in_flight[0].set_result(None)
    await scoring
    return before, (dict(sink.table), list(sink.acknowledged))


def test_a_segment_is_written_and_its_messages_acknowledged_only_once_their_result_reached_the_broker():
    sink = HeldSink({})
    flow = flow_of(LiveScorer(CallEngine()), sink, write_every_message=False)
    (table_before, acks_before), (table_after, acks_after) = asyncio.run(
        _settles_after_delivery(sink, flow, one_call("c1", T0))
    )
    assert table_before == {} and acks_before == []
    assert table_after and [m.offset for m in acks_after] == [0, 1, 2]


def test_a_call_forgotten_while_its_result_is_in_flight_stays_in_the_journal_until_the_result_arrives():
    # c1 ends (its result in flight); c2's start, 10 minutes later, forgets c1 in the message whose
    # segment falls due. Written at once, that segment would record messages 0-3 as applied without
    # c1: a crash losing the result would leave no restore able to publish it again.
    sink = HeldSink({})
    flow = flow_of(
        LiveScorer(CallEngine(retention_after_end_ms=MINUTE, allowed_lateness_ms=0)), sink, write_every_message=False
    )
    start_c2 = message("call.started", {"agent_id": "a1"}, "c2-1", T0 + 10 * MINUTE, "c2")
    (table_before, acks_before), (table_after, acks_after) = asyncio.run(
        _settles_after_delivery(sink, flow, one_call("c1", T0) + [start_c2])
    )
    assert table_before == {} and acks_before == []
    assert "c1" not in flow.live.engine.calls and [m.offset for m in acks_after] == [0, 1, 2, 3]
    restored = LiveScorer(CallEngine(retention_after_end_ms=MINUTE, allowed_lateness_ms=0))
    assert restored.restore_partition(0, table_after.items()) == 1 and list(restored.engine.calls) == ["c2"]


def test_the_first_journal_formats_segments_of_a_forgotten_call_are_deleted_with_the_next_segment():
    first: dict[bytes, bytes] = {}
    for_old_format = LiveScorer(CallEngine())
    for offset, raw in enumerate(one_call("c1", T0)):
        out = for_old_format.handle(raw, "callqa.events", 0, offset)
        for call_id, entries in out.journal.items():
            first[segment_key(call_id, for_old_format.next_segment(call_id))] = encode_segment(0, entries)
    live = LiveScorer(CallEngine(retention_after_end_ms=MINUTE, allowed_lateness_ms=0))
    sink = DictSink(dict(first))
    start_c2 = message("call.started", {"agent_id": "a1"}, "c2-1", T0 + 10 * MINUTE, "c2")
    out = asyncio.run(flow_of(live, sink, write_every_message=False).score(KafkaMessage(start_c2, 3)))
    assert out.forget == ["c1"] and all(key in sink.table for key in first)  # waiting for the segment
    asyncio.run(
        flow_of(live, sink, write_every_message=True).score(
            KafkaMessage(message("turn", {"role": "user", "text": "hi"}, "c2-2", T0 + 10 * MINUTE + 1, "c2"), 4)
        )
    )
    assert not any(key in sink.table for key in first) and len(first) == 3


def test_a_send_that_fails_leaves_its_messages_unwritten_and_unacknowledged_so_they_come_again():
    table: dict[bytes, bytes] = {}
    sink = HeldSink(table)
    messages = one_call("c1", T0)

    async def fail_the_result() -> None:
        flow = flow_of(LiveScorer(CallEngine()), sink, write_every_message=False)
        for offset, raw in enumerate(messages[:-1]):
            await flow.score(KafkaMessage(raw, offset))
        flow.live.book.segment_seconds = 0.0
        scoring = asyncio.create_task(flow.score(KafkaMessage(messages[-1], 2)))
        for _ in range(5):
            await asyncio.sleep(0)
        sink.in_flight[0].set_exception(ConnectionError("broker gone"))
        await scoring

    with pytest.raises(ConnectionError):
        asyncio.run(fail_the_result())
    assert table == {} and sink.acknowledged == []
    # The worker that takes over gets the messages again from the last commit and scores the call.
    again = DictSink(table)
    flow = flow_of(LiveScorer(CallEngine()), again, write_every_message=True)
    for offset, raw in enumerate(messages):
        asyncio.run(flow.score(KafkaMessage(raw, offset)))
    assert [json.loads(value)["call_id"] for topic, _, value in again.sent if topic == "results"] == ["c1"]


class BatchSink(DictSink):
    """Keeps each journal write's changes in order: the changelog records a crash may cut short."""

    def __init__(self, table: dict[bytes, bytes]) -> None:
        super().__init__(table)
        self.batches: list[list[tuple[bytes, bytes | None]]] = []

    def write_journal(self, message: Any, changes: list[tuple[bytes, bytes | None]]) -> list[asyncio.Future[Any]]:
        self.batches.append(list(changes))
        return super().write_journal(message, changes)


def test_a_crash_that_delivers_only_a_segment_of_its_batch_restores_the_whole_batch():
    # A's inactivity sweep and retention pass with B's start (offset 3): the batch written then is
    # [segment with B, delete of A's segment, watermark record]. Only its first record arrives.
    log = [
        message("call.started", {"agent_id": "a1", "inactivity_timeout_s": 10}, "A-1", T0, "A"),
        message("turn", {"role": "user", "text": "my order 48213 is late"}, "A-2", T0 + 1_000, "A"),
        message("turn", {"role": "agent", "text": "sure, I can help"}, "A-3", T0 + 5_000, "A"),
        message("call.started", {"agent_id": "a1"}, "B-1", T0 + 200_000, "B"),
    ]
    settings = {"retention_after_end_ms": MINUTE, "allowed_lateness_ms": 0}
    live = LiveScorer(CallEngine(**settings))
    sink = BatchSink({})
    flow = MessageFlow(live, sink)

    async def first_worker() -> None:
        for offset, raw in enumerate(log):
            live.book.segment_seconds = 0.0 if offset in (0, 3) else math.inf
            await flow.score(KafkaMessage(raw, offset))

    asyncio.run(first_worker())
    first_batch, last_batch = sink.batches
    assert len(last_batch) == 3 and last_batch[1][1] is None  # segment, A's delete, watermark record
    changelog = dict(first_batch + last_batch[:1])  # offset 0 committed; the crash cut the rest

    again = LiveScorer(CallEngine(**settings))
    again.restore_partition(0, changelog.items())
    assert list(again.engine.calls) == ["B"]
    assert again.engine.sweeper.watermark(0) == T0 + 200_000 and again.partitions[0].journaled_through_offset == 3
    redelivered = DictSink(changelog)
    flow = flow_of(again, redelivered, write_every_message=True)
    for offset in range(1, 4):  # from the committed offset
        asyncio.run(flow.score(KafkaMessage(log[offset], offset)))
    assert redelivered.sent == []  # A is not taken up again: no second version 1, no dead letters
    assert last_batch[1][0] not in changelog  # the delete the crash lost went out with the next segment


def test_a_message_whose_send_resumes_after_its_partition_was_revoked_leaves_nothing_behind():
    class GatedSink(DictSink):
        def __init__(self, table: dict[bytes, bytes]) -> None:
            super().__init__(table)
            self.gate = asyncio.Event()

        async def send_result(self, key: bytes, value: bytes) -> asyncio.Future[Any]:
            await self.gate.wait()  # the producer waits for metadata or buffer space
            return await super().send_result(key, value)

    messages = one_call("c1", T0)
    sink = GatedSink({})
    live = LiveScorer(CallEngine())
    flow = flow_of(live, sink, write_every_message=False)

    async def revoked_while_sending() -> None:
        for offset, raw in enumerate(messages[:-1]):
            await flow.score(KafkaMessage(raw, offset))
        ending = asyncio.create_task(flow.score(KafkaMessage(messages[-1], 2)))
        await asyncio.sleep(0)
        flow.release({0})  # the rebalance: the partition may go to another worker
        sink.gate.set()
        await ending
        assert live.book.pending == {} and live.owned == {}
        # The partition comes back to this worker, from the last commit (nothing committed).
        live.book.segment_seconds = 0.0
        for offset, raw in enumerate(messages):
            await flow.score(KafkaMessage(raw, offset))

    asyncio.run(revoked_while_sending())
    assert [m.offset for m in sink.acknowledged] == [0, 1, 2]
    restored = LiveScorer(CallEngine())
    restored.restore_partition(0, sink.table.items())
    assert restored.engine.calls["c1"].events_applied == 3


def test_a_due_segment_whose_sends_are_in_flight_goes_with_a_later_message_instead_of_waiting():
    messages = one_call("c1", T0) + [message("call.started", {"agent_id": "a1"}, "c2-1", T0 + 3000, "c2")]
    sink = HeldSink({})
    live = LiveScorer(CallEngine())
    # Due once the first call's three messages are staged; overdue only at twice that.
    live.book.segment_seconds = math.inf
    live.book.segment_bytes = sum(len(raw) for raw in messages[:3])
    flow = MessageFlow(live, sink)

    async def run() -> None:
        for offset, raw in enumerate(messages[:3]):
            await asyncio.wait_for(flow.score(KafkaMessage(raw, offset)), timeout=5)  # never held up
        assert live.book.due(0) and not live.book.overdue(0)
        assert sink.table == {} and sink.acknowledged == []  # the result is still in flight
        sink.in_flight[0].set_result(None)
        await flow.score(KafkaMessage(messages[3], 3))

    asyncio.run(run())
    assert [m.offset for m in sink.acknowledged] == [0, 1, 2, 3]
    restored = LiveScorer(CallEngine())
    assert restored.restore_partition(0, sink.table.items()) == 2


def test_a_due_segment_of_a_partition_fallen_quiet_is_written_by_the_timer_once_its_sends_arrive():
    messages = one_call("c1", T0)
    sink = HeldSink({})
    live = LiveScorer(CallEngine())
    live.book.segment_seconds = math.inf
    live.book.segment_bytes = sum(len(raw) for raw in messages)  # due with the last, not overdue
    flow = MessageFlow(live, sink)

    async def run() -> None:
        for offset, raw in enumerate(messages):
            await flow.score(KafkaMessage(raw, offset))
        assert sink.table == {}  # deferred: the result is in flight, and no message follows
        timer = asyncio.create_task(flow.write_quiet_segments())
        for _ in range(5):
            await asyncio.sleep(0)
        assert not timer.done() and sink.table == {}  # it waits for the result too
        sink.in_flight[0].set_result(None)
        await timer
        await flow.write_quiet_segments()  # nothing left: writes nothing more

    asyncio.run(run())
    assert [m.offset for m in sink.acknowledged] == [0, 1, 2]
    restored = LiveScorer(CallEngine())
    assert restored.restore_partition(0, sink.table.items()) == 1
    assert restored.partitions[0].journaled_through_offset == 2


def test_a_result_too_large_to_publish_is_dead_lettered_and_the_worker_goes_on():
    sink = DictSink({})
    flow = flow_of(LiveScorer(CallEngine()), sink, write_every_message=True)
    flow.max_result_bytes = 2_000  # the sample call's result is some 6 kB

    async def run() -> None:
        for offset, raw in enumerate(one_call("c1", T0) + one_call("c2", T0 + MINUTE)):
            await flow.score(KafkaMessage(raw, offset))

    asyncio.run(run())
    assert [topic for topic, _, _ in sink.sent] == ["deadletter", "deadletter"]
    letter = json.loads(sink.sent[0][2])
    assert letter["call_id"] == "c1" and letter["offset"] == 2 and letter["original_size"] > 2_000
    assert letter["reason"].startswith("the result (version 1) of call 'c1' is ")
    assert letter["reason"].endswith(
        "above the 2000-byte limit for a message (CALLQA_MAX_MESSAGE_BYTES): not published"
    )
    assert json.loads(letter["original_text"])["call_id"] == "c1"
    assert flow.live.dead_lettered == 2 and [m.offset for m in sink.acknowledged] == [0, 1, 2, 3, 4, 5]


def test_the_first_message_waits_until_the_cohorts_are_read_then_none_waits():
    sink = DictSink({})
    flow = flow_of(LiveScorer(CallEngine()), sink, write_every_message=True)

    async def run() -> None:
        flow.ready = asyncio.Event()
        messages = one_call("c1", T0)
        first = asyncio.create_task(flow.score(KafkaMessage(messages[0], 0)))
        for _ in range(10):
            await asyncio.sleep(0)
        assert not first.done() and flow.live.engine.counters.applied == 0  # nothing scored yet
        flow.ready.set()
        await first
        for offset, raw in enumerate(messages[1:], start=1):
            await flow.score(KafkaMessage(raw, offset))

    asyncio.run(run())
    assert flow.ready is None and flow.live.engine.counters.applied == 3
    assert [topic for topic, _, _ in sink.sent] == ["results"]


def test_a_partition_held_but_not_assigned_again_is_released_and_read_again_from_its_journal_when_it_returns():
    # Between a revoke and the next assignment the idle timer restored every partition the assignor
    # still listed; the ones assigned elsewhere stayed held, and scored from stale state when they came back.
    sink = DictSink({})
    live = LiveScorer(CallEngine())
    flow = flow_of(live, sink, write_every_message=True)
    flow.assign({0, 1})
    assert flow.quiet_partitions() == [0, 1]
    for partition in (0, 1):
        live.restore_quiet_partition(partition, [], 0.0)
    asyncio.run(flow.score(KafkaMessage(one_call("c1", T0)[0], 0, partition=1)))
    flow.release({0, 1})  # a rebalance begins: nothing is to be restored until the new assignment
    assert flow.quiet_partitions() == []
    live.restore_quiet_partition(1, list(sink.table.items()), 0.0)  # as the timer did in that window
    flow.assign({0})
    assert not live.is_restored(1) and "c1" not in live.engine.calls and flow.quiet_partitions() == [0]
    live.restore_quiet_partition(0, list(sink.table.items()), 0.0)
    flow.assign({0, 1})  # partition 1 comes back: read again, whatever changed it meanwhile
    assert flow.quiet_partitions() == [1]


class SlowJournalSink(DictSink):
    """A sink whose journal writes reach the changelog only when the test says so, as a Faust
    table's records wait in the producer's buffer."""

    def __init__(self, table: dict[bytes, bytes]) -> None:
        super().__init__(table)
        self.journal_writes: list[asyncio.Future[Any]] = []

    def write_journal(self, message: Any, changes: list[tuple[bytes, bytes | None]]) -> list[asyncio.Future[Any]]:
        super().write_journal(message, changes)
        future = asyncio.get_running_loop().create_future()
        self.journal_writes.append(future)
        return [future]


async def answer(journal_writes: list[asyncio.Future[Any]], delivered: bool) -> None:
    """The broker's answer to these journal writes (delivered, or failed), then the callbacks run."""
    for future in journal_writes:
        if delivered:
            future.set_result(None)
        else:
            future.set_exception(ConnectionError("broker gone"))
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.mark.parametrize("delivered", [True, False])
def test_a_segments_messages_are_acknowledged_only_once_the_changelog_has_it(delivered, caplog):
    # Acknowledged as soon as the table had the segment, they were committed with the segment still
    # in the producer's buffer: a worker killed then lost them.
    async def run() -> SlowJournalSink:
        sink = SlowJournalSink({})
        flow = flow_of(LiveScorer(CallEngine()), sink, write_every_message=True)
        for offset, raw in enumerate(one_call("c1", T0)):
            await flow.score(KafkaMessage(raw, offset))
        assert sink.journal_writes and sink.acknowledged == []
        await answer(sink.journal_writes, delivered)
        return sink

    sink = asyncio.run(run())
    if delivered:
        assert [m.offset for m in sink.acknowledged] == [0, 1, 2]
    else:
        assert sink.acknowledged == []
        assert "a journal segment could not be written (broker gone)" in caplog.text


@pytest.mark.parametrize("first_delivered", [True, False])
def test_segments_are_acknowledged_in_the_order_they_were_written(first_delivered):
    # Faust commits the first unbroken run of acknowledged offsets wherever it starts: the second
    # segment acknowledged while the first is in flight (or lost) would commit past the first.
    async def run() -> SlowJournalSink:
        sink = SlowJournalSink({})
        flow = flow_of(LiveScorer(CallEngine()), sink, write_every_message=True)
        messages = one_call("c1", T0) + one_call("c2", T0 + 10_000)
        for offset, raw in enumerate(messages[:2]):
            await flow.score(KafkaMessage(raw, offset))
        first = list(sink.journal_writes)
        for offset, raw in enumerate(messages[2:], start=2):
            await flow.score(KafkaMessage(raw, offset))
        await answer(sink.journal_writes[len(first) :], delivered=True)
        assert sink.acknowledged == []  # (the first segments still in flight)
        await answer(first, first_delivered)
        return sink

    sink = asyncio.run(run())
    assert [m.offset for m in sink.acknowledged] == ([0, 1, 2, 3, 4, 5] if first_delivered else [])
