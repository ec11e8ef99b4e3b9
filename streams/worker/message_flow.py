"""What the live worker does with each message of the events topic, given somewhere to send it.

`MessageFlow.score()` restores the message's partition from the journal the first time this worker
sees it, hands the message to `LiveScorer`, sends what the outbox holds (results, dead letters,
recorded events), stages the journal entries and, when the partition's segment is due, writes it and
acknowledges the messages it covers. Faust stays in streams/worker/app.py, which provides the `Sink`.

The journal before the commit: a segment's messages are acknowledged once the broker has the segment
(`_acknowledge_once_written`), not once it is handed to Faust's table, whose records a commit may
overtake. Outputs before the journal: a segment (with the watermark record naming the last offset it covers)
tells a restore "these messages were applied", and forgetting a call deletes what could bring it
back. So everything the covered messages sent must have reached the broker before the segment is
written. Otherwise a crash could lose a result or a dead letter still in the producer's buffer while
the segment reached the changelog: the restored worker skips those messages as applied (or no longer
holds the forgotten call), and nothing would ever send them again. `Deliveries` keeps each partition's
sends not yet acknowledged by the broker. A segment that falls due while some are in flight waits
for a later message of its partition, by which time they are nearly always delivered; only a
segment overdue (twice the bytes or the time) waits for them, and so does the worker's timer, which
writes the due segment of a partition that no message comes to (`write_quiet_segments`). Waiting
at once for every due segment held the bench's batched worker up for some 4-5 % of its time;
deferring, for about 1 %.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from models.call_state import CallState
from models.deadletter import DeadLetter, oversized_result_reason
from models.results import CallResult
from models.wire import MAX_MESSAGE_BYTES, encode_event
from streams.journal.call_journal import segment_key
from streams.result_size import fitted
from streams.worker.live_scorer import LiveScorer, Outbox, PartitionState

_json = msgspec.json.Encoder()
logger = logging.getLogger("callqa.worker")

# Called after each published result with the call's state (read-only), e.g. to request a judge.
ResultHook = Callable[[CallResult, CallState], Awaitable[None]]


class Sink(Protocol):
    """Where the flow's sends and journal writes go (Faust in the worker, plain objects in tests)."""

    async def send_result(self, key: bytes, value: bytes) -> asyncio.Future[Any]:
        """Hand a result to the producer; returns the future that completes once the broker has it."""

    async def send_dead_letter(self, key: bytes, value: bytes) -> asyncio.Future[Any]: ...

    async def send_event(self, key: bytes, value: bytes) -> asyncio.Future[Any]:
        """An event the worker made (a sweep's end of a call), recorded in the events topic."""

    def journal_items(self) -> Iterable[tuple[bytes, bytes]]:
        """Everything the journal table holds (read once per partition, when it is restored)."""

    def write_journal(self, message: Any, changes: list[tuple[bytes, bytes | None]]) -> list[asyncio.Future[Any]]:
        """Write (value None: delete) these journal keys, in this order, on the message's partition;
        returns the futures that complete once the journal holds them (none: it does already)."""

    def acknowledge(self, acks: list[Any]) -> None:
        """The messages whose changes the journal now holds may be committed."""


@dataclass
class Deliveries:
    """Each partition's sends that the broker has not acknowledged yet."""

    pending: dict[int, list[asyncio.Future[Any]]] = field(default_factory=dict)

    def add(self, partition: int, delivery: asyncio.Future[Any]) -> None:
        self.pending.setdefault(partition, []).append(delivery)

    async def settle(self, partition: int) -> None:
        """Return once every send of the partition reached the broker; a send that failed raises
        here, so that the segment covering its message is not written and the message comes again."""
        sends = self.pending.pop(partition, None)
        if not sends:
            return
        waiting = [send for send in sends if not send.done()]
        if waiting:
            await asyncio.gather(*waiting)
        for send in sends:
            send.result()

    def settled(self, partition: int) -> bool:
        """Whether every send of the partition has been answered (delivered or failed)."""
        return all(send.done() for send in self.pending.get(partition, ()))

    def drop(self, partitions: set[int]) -> None:
        for partition in partitions:
            self.pending.pop(partition, None)


# A result larger than this is dead-lettered instead of published: a record the producer or the broker
# refuses would stop the worker, or hold its partition back for ever (Apache Kafka's default
# `message.max.bytes` is 1 MiB). The worker passes `Settings.max_result_bytes`.
DEFAULT_MAX_RESULT_BYTES = MAX_MESSAGE_BYTES
READY_WAIT_S = 30.0


@dataclass
class MessageFlow:
    live: LiveScorer
    sink: Sink
    result_hooks: list[ResultHook] = field(default_factory=list)
    deliveries: Deliveries = field(default_factory=Deliveries)
    on_restored: Callable[[int, int], None] | None = None  # (partition, calls restored), for the log
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    # Set once what scoring reads besides the events is loaded (the cohorts topic, read to its end):
    # the first message waits for it, at most READY_WAIT_S. None: nothing to wait for.
    ready: asyncio.Event | None = None
    # The events partitions of the group's latest assignment; empty from a revoke until the next one
    # (Faust's assignor still lists the revoked partitions then).
    assigned: set[int] = field(default_factory=set)
    _writing: asyncio.Lock = field(default_factory=asyncio.Lock)
    # By partition, the journal segments written but not yet delivered, oldest first, with the
    # messages each covers; and the partitions one of whose segments could not be written.
    _journal_writes: dict[int, deque[tuple[asyncio.Future[Any], list[Any]]]] = field(default_factory=dict)
    _unwritten: set[int] = field(default_factory=set)

    async def score(self, message: Any) -> Outbox:
        """One message of the events topic (anything with partition, offset, topic and value)."""
        if self.ready is not None:
            await self._wait_until_ready()
        live, book, partition = self.live, self.live.book, message.partition
        if not live.is_restored(partition):
            restored = live.restore_partition(partition, list(self.sink.journal_items()))
            if self.on_restored is not None:
                self.on_restored(partition, restored)
        try:
            out = live.handle(message.value, message.topic, partition, message.offset)
        except Exception as exc:  # one message must never stop the worker (each event's own
            # failures are dead-lettered inside `handle`; this is what is left)
            out = live.failed_message(exc, message.value or b"", message.topic, partition, message.offset)
        # Faust does not wait for a message in progress before it revokes its partition: a send
        # awaited here may resume after that. What the message changed is then the next owner's to
        # redo, so nothing more of it may reach this worker's book or the journal.
        held = live.partitions[partition]
        if out.results or out.dead_letters or out.recorded_events or out.forget:
            await self._send(out, message, held)
            if live.partitions.get(partition) is not held:
                return out
        book.stage(partition, out.journal, message)
        if book.due(partition):
            if not self.deliveries.settled(partition) and not book.overdue(partition):
                return out  # its sends are still in flight: the segment goes with a later message
            await self._write_segment(partition, held)
        return out

    async def _wait_until_ready(self) -> None:
        """A restarted worker scored redelivered calls against no cohorts at all while it was still
        reading the cohorts topic: their results said `"cohorts": []`."""
        assert self.ready is not None
        try:
            await asyncio.wait_for(self.ready.wait(), READY_WAIT_S)
        except TimeoutError:
            logger.warning("the cohorts were not read within %s s; scoring with those known so far", READY_WAIT_S)
        self.ready = None

    async def write_quiet_segments(self) -> None:
        """Write the due segments that no message came to write (a partition fallen quiet), so that
        their messages are committed; called by the worker's timer."""
        live = self.live
        for partition in sorted(live.book.pending):
            held = live.partitions.get(partition)
            if held is not None and live.book.due(partition):
                await self._write_segment(partition, held)

    async def _write_segment(self, partition: int, held: PartitionState) -> None:
        live, book = self.live, self.live.book
        async with self._writing:  # one writer at a time: a message's flow or the timer
            await self.deliveries.settle(partition)
            last = book.last_staged(partition)
            if live.partitions.get(partition) is not held or last is None or not book.due(partition):
                return  # revoked while its sends were awaited (the next owner has it), or written
            # The segment goes first, as the commit point of the rest (streams/journal/call_journal.py).
            watermark = live.watermark_to_journal(partition, last.offset)
            key, value, acks = book.take(partition, *live.journaled_position(partition))
            changes = book.take_changes(partition)
            if key is not None:
                changes.insert(0, (key, value))
            if watermark is not None:
                changes.append(watermark)
            written = self.sink.write_journal(last, changes) if changes else []
            self._acknowledge_once_written(partition, written, acks)

    def _acknowledge_once_written(self, partition: int, written: list[asyncio.Future[Any]], acks: list[Any]) -> None:
        """Acknowledge the segment's messages once the journal holds it: committed before, a crash
        lost them (the commit does not wait for the table's changelog, streams/journal/table.py).
        Waited for off the message path, as the sends are, and in the order the segments were
        written: Faust commits the first unbroken run of acknowledged offsets, from wherever it
        starts, so a later segment acknowledged first could carry the commit past an earlier one.
        A write that fails stops the partition's acknowledgements until a restart, which delivers
        its messages again."""
        if partition in self._unwritten:
            return  # (never to be acknowledged: nothing is kept of them)
        queue = self._journal_writes.setdefault(partition, deque())
        if not queue and all(
            future.done() and not future.cancelled() and future.exception() is None for future in written
        ):
            self.sink.acknowledge(acks)
            return
        waiting = asyncio.gather(*written)
        queue.append((waiting, acks))
        waiting.add_done_callback(lambda _: self._acknowledge_written(partition, queue))

    def _acknowledge_written(self, partition: int, queue: deque[tuple[asyncio.Future[Any], list[Any]]]) -> None:
        """Acknowledge the partition's segments now written, oldest first, up to one still in flight."""
        if self._journal_writes.get(partition) is not queue:
            return  # (the partition was revoked since: the next owner commits it)
        while queue and queue[0][0].done():
            waiting, acks = queue[0]
            if waiting.cancelled() or waiting.exception() is not None:
                if partition not in self._unwritten:
                    self._unwritten.add(partition)
                    logger.error(
                        "partition %s: a journal segment could not be written (%s); its messages and "
                        "every later one stay unacknowledged, to come again after a restart",
                        partition,
                        "cancelled" if waiting.cancelled() else waiting.exception(),
                    )
                return
            queue.popleft()
            self.sink.acknowledge(acks)

    async def _send(self, out: Outbox, message: Any, held: PartitionState) -> None:
        sink, deliveries, partition = self.sink, self.deliveries, message.partition
        for index, result in enumerate(out.results):
            fit = fitted(result, self.max_result_bytes)
            if fit.value is None:
                await self._send_oversized(result, fit.whole, message)
                continue
            out.results[index] = fit.result  # (what the hooks below see is what was published)
            deliveries.add(partition, await sink.send_result(result.call_id.encode(), fit.value))
        for letter in out.dead_letters:
            await self._send_dead_letter(partition, letter)
        for event in out.recorded_events:
            deliveries.add(partition, await sink.send_event(event.call_id.encode(), encode_event(event)))
        if out.forget and self.live.partitions.get(partition) is held:
            self._forget(out.forget)
        calls = self.live.engine.calls
        for result in out.results:
            call = calls.get(result.call_id)
            if call is not None:
                for hook in self.result_hooks:
                    try:
                        await hook(result, call)
                    except Exception:  # a view or alert input failing must not stop scoring
                        logger.exception("a result hook failed on call %r", result.call_id[:100])

    async def _send_oversized(self, result: CallResult, value: bytes, message: Any) -> None:
        """A result too large to publish, dead-lettered with its first bytes, its size and its hash,
        against the message that produced it."""
        reason = oversized_result_reason(result.call_id, result.version, len(value), self.max_result_bytes)
        logger.error("%s", reason)
        self.live.dead_lettered += 1
        await self._send_dead_letter(
            message.partition,
            DeadLetter(reason, message.topic, message.partition, message.offset, value, call_id=result.call_id),
        )

    async def _send_dead_letter(self, partition: int, letter: DeadLetter) -> None:
        self.deliveries.add(
            partition,
            await self.sink.send_dead_letter((letter.call_id or "").encode(), _json.encode(letter.to_document())),
        )

    def _forget(self, call_ids: list[str]) -> None:
        """Forgetting's journal changes go out with each partition's next segment, after the sends
        that segment waits for: the call's result must be delivered before what could restore it goes."""
        book = self.live.book
        book.forget(call_ids)
        for call_id, (partition, segments) in self.live.forgotten(call_ids).items():
            if segments:  # call segments of the journal's first format, keyed by the call
                book.stage_changes(partition, [(segment_key(call_id, segment), None) for segment in range(segments)])

    def release(self, partitions: set[int]) -> None:
        """On revoke: what another worker may now change is forgotten (streams/worker/live_scorer.py)."""
        self.assigned -= partitions
        self.live.release_partitions(partitions)
        self.deliveries.drop(partitions)
        for partition in partitions:
            self._journal_writes.pop(partition, None)
            self._unwritten.discard(partition)

    def assign(self, partitions: set[int]) -> None:
        """The group's new assignment of the events topic. What this worker still holds of any other
        partition goes: another worker changes it now, and if it comes back it is read again from
        the journal (a partition restored by the timer between a revoke and this assignment stayed
        held, stale, and was not read again when it was assigned back later)."""
        self.assigned = set(partitions)
        stale = set(self.live.partitions) - self.assigned
        if stale:
            self.release(stale)

    def quiet_partitions(self) -> list[int]:
        """The assigned partitions not yet restored (none between a revoke and the next assignment)."""
        return [partition for partition in sorted(self.assigned) if not self.live.is_restored(partition)]
