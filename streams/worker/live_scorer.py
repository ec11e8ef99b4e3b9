"""What the live worker does with one Kafka message, without Faust in the way.

`LiveScorer.handle()` decodes the message, feeds its events through the shared `CallEngine`, runs the
inactivity sweep and the forgetting of expired calls for the message's partition after each event (a
batch is its events sent one by one), and returns an `Outbox`: results to publish, dead letters,
synthetic events to record in the event log, journal segments to write and calls to forget.
The Faust agent (streams/worker/app.py) only performs those sends. Tests drive this class directly too.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import cast

import msgspec

from models.deadletter import DeadLetter, failure_reason
from models.events import Event, JudgeResult, Watermark
from models.results import CallResult
from models.wire import (
    MAX_MESSAGE_BYTES,
    Rejected,
    batch_item,
    decode_message,
    encode_event,
)
from scorers.engine import CallEngine, Processed
from streams.journal.call_journal import (
    JournalBook,
    calls_of_partition,
    encode_watermark,
    watermark_key,
)
from streams.partitioning import partition_for

logger = logging.getLogger("callqa.worker")

# A batch message's events share one offset: position = offset * 2**20 + 2 * index keeps them in
# order, and leaves an odd position after each one for the ends its sweep makes (a batch is swept as
# its events sent one by one), before the next event: a later event of a call swept there is refused
# as replay refuses it, not skipped as one applied already.
INDEX_BITS = 20
SYNTHETIC_INDEX = (1 << INDEX_BITS) - 1  # after every event of the message
MAX_EVENTS_PER_MESSAGE = 1 << (INDEX_BITS - 1)


def position_of(offset: int, index: int) -> int:
    return (offset << INDEX_BITS) | index


def event_position(offset: int, index: int) -> int:
    """The position of the message's event `index`."""
    return (offset << INDEX_BITS) | (index << 1)


def sweep_position(offset: int, index: int) -> int:
    """The position of what the sweep after the message's event `index` ends."""
    return (offset << INDEX_BITS) | (index << 1 | 1)


def _original(event: Event, message: bytes, batch_index: int | None) -> tuple[bytes, str, str, int | None]:
    """What a dead letter of `event` keeps of the `message` it came in: the message itself, or for an
    item of a batch the item's own bytes (a batch of a thousand events refused one by one, each dead
    letter carrying the whole batch, made hundreds of megabytes of one message)."""
    original = message if batch_index is None else batch_item(message, batch_index) or message
    return original, event.event_id, event.call_id, batch_index


class Outbox(msgspec.Struct, gc=False):  # (one per message: see scorers.engine.Processed)
    # (msgspec gives each instance its own copy of an empty list or dict default.)
    results: list[CallResult] = []
    dead_letters: list[DeadLetter] = []
    recorded_events: list[Event] = []
    journal: dict[str, list[tuple[int, bytes]]] = {}
    forget: list[str] = []


@dataclass(slots=True)
class RestoredResults:
    by_offset: dict[int, list[str]]  # offset -> the calls whose latest result that message produced
    last_offset: int  # the highest of them: past it, a message cannot be one that produced a result


@dataclass(slots=True)
class PartitionState:
    """One partition's bookkeeping, released as a whole when the partition is revoked."""

    restored: bool = False  # its journal was read back (done once, before its first message)
    # Monotonic time of its last message and its watermark then: for the idle clock (None: none yet).
    last_message_at: float | None = None
    watermark_at_last_message_ms: int | None = None
    # Calls a restore found already past their retention: forgotten by the next message's outbox,
    # which also deletes their journal segments.
    expired_at_restore: list[str] = field(default_factory=list)
    # The restored calls by the offset of the message that produced their latest result: what to
    # publish again if that message is delivered again (`LiveScorer._republish_lost_results`).
    results_at_restore: RestoredResults | None = None
    # The watermark last written to the journal (streams/journal/call_journal.py, "Watermarks"); -1: none.
    journaled_watermark_ms: int = -1
    # The offset up to which every message's changes are in the journal (-1: none): a message at or
    # below it is one delivered again after a restart.
    journaled_through_offset: int = -1
    # The offset of the last message handled (-1: none): the next is never lower, unless the topic
    # was re-created or truncated under the worker (`LiveScorer._offsets_went_back`).
    last_offset: int = -1


@dataclass
class LiveScorer:
    engine: CallEngine
    max_message_bytes: int = MAX_MESSAGE_BYTES
    # The events topic's partition count: an event that comes on another partition than its call's
    # (Kafka's default partitioner on its call_id) is dead-lettered. None: not checked.
    topic_partitions: int | None = None
    # call_id -> (partition, segments written); what this worker owns right now.
    owned: dict[str, list[int]] = field(default_factory=dict)
    # What the journal holds and what waits to be written to it (streams/journal/call_journal.py).
    book: JournalBook = field(default_factory=JournalBook)
    # What the worker keeps about each partition it has taken up, besides its calls.
    partitions: dict[int, PartitionState] = field(default_factory=dict)
    dead_lettered: int = 0  # dead letters handed out since start (undecodable parts included)
    # The worker's clock (Unix seconds): what an event from the future is measured against.
    clock: Callable[[], float] = time.time
    offsets_went_back: int = 0  # times a partition's offsets started again lower (`_offsets_went_back`)

    def is_restored(self, partition: int) -> bool:
        state = self.partitions.get(partition)
        return state is not None and state.restored

    def _partition(self, partition: int) -> PartitionState:
        state = self.partitions.get(partition)
        if state is None:
            state = self.partitions[partition] = PartitionState()
        return state

    def mark_busy(self, partition: int, now: float, watermark_ms: int | None) -> None:
        """The partition's last message was at `now` (monotonic), its watermark then `watermark_ms`."""
        state = self._partition(partition)
        state.last_message_at = now
        state.watermark_at_last_message_ms = watermark_ms

    # ------------------------------------------------------------------------------- messages

    def handle(self, value: bytes, topic: str, partition: int, offset: int) -> Outbox:
        state = self._partition(partition)
        if offset < state.last_offset:
            self._offsets_went_back(state, topic, partition, offset)
        state.last_offset = offset
        out = Outbox(forget=state.expired_at_restore)
        state.expired_at_restore = []
        self._republish_lost_results(state, offset, out)
        if self.engine.future_bound_ms:
            self.engine.wall_clock_ms = int(self.clock() * 1000)
        decoded = decode_message(value, self.max_message_bytes)
        for rejected in decoded.rejected:
            out.dead_letters.append(self._dead_letter(rejected, topic, partition, offset))
        events = decoded.events
        # The journal keeps the message itself when all its events are one call's and all were
        # applied (nothing to re-encode); otherwise it keeps the applied events one by one: a restore
        # must not decide again about an event refused or skipped here, as its watermark is not the
        # one this message saw.
        one_call = len(events) == 1 or (bool(events) and all(event.call_id == events[0].call_id for event in events))
        applied: list[tuple[int, Event]] = []  # (position, event) of one call's message, applied
        all_applied = True
        engine = self.engine
        # (Guarded: an event whose handling raises is dead-lettered with the failure, not a stop.)
        process, anything_due = engine.process_guarded, engine.anything_due
        # Delivered again after a restart, with its changes in the journal: its events of calls no
        # longer held belong to calls forgotten since (or were refused then), not to new calls.
        applied_before = offset <= state.journaled_through_offset
        calls = self.engine.calls
        # Checked once per call the message names, not per event (nearly always: none).
        strays = self._strays(events, partition, one_call) if self.topic_partitions is not None else None
        for index, event in enumerate(events):
            if applied_before and event.call_id not in calls:
                continue
            if strays and event.call_id in strays and type(event) is not Watermark:
                all_applied = False
                out.dead_letters.append(
                    DeadLetter(
                        f"event {event.event_id!r}: call {event.call_id!r} belongs to partition "
                        f"{strays[event.call_id]} (the Java client's default partitioner, murmur2, on its call_id), "
                        f"but this message came on partition {partition}: a call's events must all reach its "
                        "partition (key its messages by "
                        "call_id; librdkafka-based clients such as confluent-kafka and kcat hash keys with CRC32 "
                        "unless set with partitioner=murmur2_random, and Go's sarama and kafka-go need a murmur2 "
                        "partitioner too)",
                        topic,
                        partition,
                        offset,
                        *_original(event, value, decoded.batch_index_of(index)),
                    )
                )
                continue
            position = (offset << INDEX_BITS) | (index << 1)  # (`event_position`, inline)
            processed = process(event, partition, position)
            status = processed.status
            if status == "applied":
                # (An applied event is dead-lettered only when its result could not be assembled: only
                # then is its batch index looked up.)
                if not one_call:
                    where = (value, None if processed.reason is None else decoded.batch_index_of(index))
                    self._collect(processed, event, partition, position, topic, offset, out, where)
                else:
                    applied.append((position, event))
                    if processed.result is not None:
                        out.results.append(processed.result)
                    elif processed.reason is not None:
                        self._refused(
                            processed.reason,
                            event,
                            topic,
                            partition,
                            offset,
                            out,
                            (value, decoded.batch_index_of(index)),
                        )
            else:
                all_applied = False
                # (A lower time must reach the journal too.)
                if status == "watermark" and cast(Watermark, event).data.reset:
                    state.journaled_watermark_ms = -1
                if status != "redelivered":  # (redelivered: its lost outputs were published again above)
                    self._collect(
                        processed,
                        event,
                        partition,
                        position,
                        topic,
                        offset,
                        out,
                        (value, decoded.batch_index_of(index)),
                    )
            if anything_due(partition):
                forgotten = self._settle(partition, sweep_position(offset, index), topic, offset, out)
                if applied and events[0].call_id in forgotten:
                    # Journaled whole or event by event, what the message did to the call before it was
                    # forgotten would bring it back on restore: what comes after is a new call of its id.
                    applied.clear()
                    all_applied = False
        if applied:
            try:
                self._journal_one_call(events[0].call_id, applied, all_applied, value, offset, partition, out)
            except Exception as exc:  # what the journal cannot hold is dead-lettered, not a stop
                out.journal.pop(events[0].call_id, None)
                for _, refused in applied:
                    self._refused(
                        failure_reason(refused.event_id, exc), refused, topic, partition, offset, out, (value, None)
                    )
        self.mark_busy(partition, time.monotonic(), self.engine.sweeper.watermark(partition))
        self.dead_lettered += len(out.dead_letters)
        return out

    def refusing_late_calls(self, now_ms: int) -> dict[str, dict[str, int | None]]:
        """For /health: each partition that has refused new calls as too late, with how many of their
        events, its time and how far that is ahead of this worker's clock (far ahead: a time moved too
        far, which `callqa watermark reset --partition N` brings back)."""
        report: dict[str, dict[str, int | None]] = {}
        for partition, refused in sorted(self.engine.too_late.items()):
            watermark = self.engine.sweeper.watermark(partition)
            report[str(partition)] = {
                "refused_as_too_late": refused,
                "watermark_ms": watermark,
                "ahead_of_clock_ms": None if watermark is None else watermark - now_ms,
            }
        return report

    def failed_message(self, exc: Exception, value: bytes, topic: str, partition: int, offset: int) -> Outbox:
        """The outbox of a message whose handling raised outside any one event (a bug): the message is
        dead-lettered with the failure, and the partition goes on."""
        reason = failure_reason(None, exc)
        logger.error("%s[%s]@%s: %s", topic, partition, offset, reason[:300])
        self.mark_busy(partition, time.monotonic(), self.engine.sweeper.watermark(partition))
        self.dead_lettered += 1
        return Outbox(dead_letters=[DeadLetter(reason, topic, partition, offset, value)])

    def _settle(self, partition: int, position: int, topic: str, offset: int, out: Outbox) -> list[str]:
        """After an event, as after a message of its own: end the partition's calls that are due (at
        `position`), then forget its ended calls past their retention; returns those forgotten."""
        for synthetic in self.engine.sweep(partition):
            out.recorded_events.append(synthetic)
            processed = self.engine.process_guarded(synthetic, partition, position)
            self._collect(
                processed, synthetic, partition, position, topic, offset, out, (encode_event(synthetic), None)
            )
        forgotten = self.engine.forget_expired(partition)
        for call_id in forgotten:
            out.forget.append(call_id)
            # What this message journaled of the call would bring it back on restore (and a segment
            # holding it would never be deleted); what the message does with its id from here on is
            # a new call's, and journaled.
            out.journal.pop(call_id, None)
        return forgotten

    def _journal_one_call(
        self,
        call_id: str,
        applied: list[tuple[int, Event]],
        all_applied: bool,
        value: bytes,
        offset: int,
        partition: int,
        out: Outbox,
    ) -> None:
        """Journal what a message of one call applied: the message itself when all its events were
        applied and no sweep ended the call before its last event (a restore re-folds the message
        whole, then the sweep's end), else each applied event; in the order of their positions,
        with the ends the sweeps made of the call."""
        swept = out.journal.pop(call_id, [])
        if all_applied and all(position > applied[-1][0] for position, _ in swept):
            out.journal[call_id] = [(position_of(offset, 0), value), *swept]
        else:
            out.journal[call_id] = sorted(
                [(position, encode_event(event)) for position, event in applied] + swept, key=lambda entry: entry[0]
            )
        self.owned.setdefault(call_id, [partition, 0])

    def _strays(self, events: Sequence[Event], partition: int, one_call: bool) -> dict[str, int]:
        """The calls of `events` that belong to another partition than `partition`, with theirs: where
        the call is held, else by its call_id (watermarks name their own partition)."""
        assert self.topic_partitions is not None
        strays: dict[str, int] = {}
        checked: set[str] = set()
        for event in events:
            if type(event) is Watermark:  # (whatever call_id it carries: it changes no call)
                continue
            call_id = event.call_id
            if call_id not in checked:
                checked.add(call_id)
                owner = self.owned.get(call_id)
                home = owner[0] if owner is not None else partition_for(call_id, self.topic_partitions)
                if home != partition:
                    strays[call_id] = home
            if one_call:  # every event names this call
                break
        return strays

    def _collect(
        self,
        processed: Processed,
        event: Event,
        partition: int,
        position: int,
        topic: str,
        offset: int,
        out: Outbox,
        where: tuple[bytes, int | None],
    ) -> None:
        """`where`: the original bytes to dead-letter the event with, and its index in a batch."""
        if processed.status == "applied":
            out.journal.setdefault(event.call_id, []).append((position, encode_event(event)))
            self.owned.setdefault(event.call_id, [partition, 0])
        if processed.reason is not None:  # refused, or applied with a result that could not be built
            self._refused(processed.reason, event, topic, partition, offset, out, where)
        if processed.result is not None:
            out.results.append(processed.result)

    @staticmethod
    def _refused(
        reason: str, event: Event, topic: str, partition: int, offset: int, out: Outbox, where: tuple[bytes, int | None]
    ) -> None:
        """Dead-letter `event` with `reason`; `where`: the original bytes and its index in a batch."""
        out.dead_letters.append(DeadLetter(reason, topic, partition, offset, *_original(event, *where)))

    def _republish_lost_results(self, state: PartitionState, offset: int, out: Outbox) -> None:
        """Publish again the results that this very message produced before a crash.

        A journal written before segments waited for their messages' sends (streams/worker/message_flow.py)
        can hold a message whose result never reached the broker (a kill -9 between the two sends):
        the restored calls then skip the redelivered message as already applied (or, for a call the
        message's sweep ended, are already ended), and without this the results would never appear.
        With a journal written since, the results are there already and this publishes copies.
        Faust flushes the producer before it commits offsets, so a message that is redelivered is
        exactly one whose outputs may be missing. Results are keyed by the message that produced
        them, whatever it carried: an event of the call, of another call whose time swept it, or a
        watermark.
        """
        restored = state.results_at_restore
        if restored is None:
            return
        call_ids = restored.by_offset.pop(offset, ())
        if offset >= restored.last_offset:
            state.results_at_restore = None  # past every restored result: nothing more to look for
        for call_id in call_ids:
            call = self.engine.calls.get(call_id)
            if call is not None and (
                position_of(offset, 0) <= call.result_position <= position_of(offset, SYNTHETIC_INDEX)
            ):
                result = self.engine.latest_result(call)
                if result is not None:
                    out.results.append(result)

    @staticmethod
    def _dead_letter(rejected: Rejected, topic: str, partition: int, offset: int) -> DeadLetter:
        return DeadLetter(
            rejected.reason,
            topic,
            partition,
            offset,
            rejected.raw,
            rejected.event_id,
            rejected.call_id,
            rejected.batch_index,
        )

    def next_segment(self, call_id: str) -> int:
        """The segment number for the next journal write of `call_id` (and count it)."""
        entry = self.owned[call_id]
        segment = entry[1]
        entry[1] += 1
        return segment

    # ------------------------------------------------------------------------------ ownership

    def _offsets_went_back(self, state: PartitionState, topic: str, partition: int, offset: int) -> None:
        """A message below the last one handled, while the partition stayed with this worker:
        the topic was re-created or truncated (an embedded broker restarted with its memory store,
        say), and its offsets started again. The journal's record of the offsets applied names the
        old topic's: kept, it made the worker skip every new message of a call it did not hold, in
        silence, as if delivered again. New messages are scored from here on."""
        self.offsets_went_back += 1
        logger.error(
            "%s[%s]: offset %s came after offset %s: the topic was re-created or truncated. Its new "
            "messages are scored; the calls held from before stay, and the journal's record of the "
            "offsets applied is set aside (a worker restarted now reads that record again: restart it "
            "only once the journal's changelog topic is re-created too)",
            topic,
            partition,
            offset,
            state.last_offset,
        )
        state.journaled_through_offset = -1
        state.results_at_restore = None

    def restore_partition(self, partition: int, journal_items: Iterable[tuple[bytes, bytes]]) -> int:
        """Rebuild every call journaled on `partition` (call segments first, then partition segments
        in order: a worker writes only one kind); returns how many calls were restored. The engine's
        counters are left as they were: re-folding is no new work, and counted, every restore (each
        rebalance) doubled `/health`'s events applied, results and calls."""
        engine = self.engine
        counted, engine.counters = engine.counters, dataclasses.replace(engine.counters)  # (re-folds count here)
        try:
            return self._restore_partition(partition, journal_items)
        finally:
            engine.counters = counted

    def _restore_partition(self, partition: int, journal_items: Iterable[tuple[bytes, bytes]]) -> int:
        items = list(journal_items)
        calls: set[str] = set()
        latest: dict[str, int] = {}  # each call's latest event time re-folded, that the watermark saw
        for call_id, segments, entries in calls_of_partition(items, partition):
            for position, raw in entries:
                self._refold(partition, position, raw, latest)
            self.owned[call_id] = [partition, segments]
            calls.add(call_id)
        journal = self.book.restore(partition, items)
        for call_id, position, raw in journal.entries:
            self._refold(partition, position, raw, latest)
            self.owned.setdefault(call_id, [partition, 0])
            calls.add(call_id)
        state = self._partition(partition)
        watermark, state.journaled_through_offset = journal.watermark_ms, journal.through_offset
        self.engine.sweeper.restore_time(partition, watermark, latest)
        if watermark is not None:
            state.journaled_watermark_ms = watermark
        by_offset: dict[int, list[str]] = {}
        for call_id in sorted(calls):
            call = self.engine.calls.get(call_id)  # (none when all its journaled events were refused)
            if call is not None and call.version > 0 and call.result_position >= 0:
                by_offset.setdefault(call.result_position >> INDEX_BITS, []).append(call_id)
        if by_offset:
            state.results_at_restore = RestoredResults(by_offset, max(by_offset))
        # A segment is deleted only once all its calls are forgotten, so it can bring back a call
        # whose retention had passed: forget it again before any message can change it.
        expired = self.engine.forget_expired(partition)
        if expired:
            state.expired_at_restore = expired
            calls.difference_update(expired)
        state.restored = True
        return len(calls)

    def restore_quiet_partition(self, partition: int, journal_items: Iterable[tuple[bytes, bytes]], now: float) -> int:
        """Restore a partition assigned to this worker that has delivered no message yet (after a
        restart or a rebalance) and start its idle clock from `now` (monotonic): its open calls would
        otherwise wait for the partition's next message to be swept."""
        restored = self.restore_partition(partition, journal_items)
        self.mark_busy(partition, now, self.engine.sweeper.watermark(partition))
        return restored

    def watermark_to_journal(self, partition: int, through_offset: int = -1) -> tuple[bytes, bytes] | None:
        """(key, value) of the partition's watermark, and of `through_offset` (the last message the
        segment just written holds), when either moved since they were last journaled; written
        together with each segment, so that a restore starts the partition's clock there and knows
        which messages it had applied."""
        watermark = self.engine.sweeper.watermark(partition)
        state = self._partition(partition)
        if watermark is None or (
            watermark <= state.journaled_watermark_ms and through_offset <= state.journaled_through_offset
        ):
            return None
        state.journaled_watermark_ms = max(watermark, state.journaled_watermark_ms)
        state.journaled_through_offset = max(through_offset, state.journaled_through_offset)
        return watermark_key(partition), encode_watermark(
            partition, state.journaled_watermark_ms, state.journaled_through_offset
        )

    def journaled_position(self, partition: int) -> tuple[int | None, int]:
        """The partition's watermark and covered offset as last journaled (None / -1: none), for the
        segment that goes out with them."""
        state = self._partition(partition)
        watermark = state.journaled_watermark_ms
        return (watermark if watermark >= 0 else None), state.journaled_through_offset

    def _refold(self, partition: int, position: int, raw: bytes, latest: dict[str, int]) -> None:
        # The journal holds only what was accepted once: it is read back whatever the size limit is now.
        # Re-folded in the order applied but not in step with the partition's time, which is set from
        # the journal once all are in (`restore_time`): the call leaping ahead of it, if any, may come
        # first (its entries outlive those of the calls forgotten before it).
        for index, event in enumerate(decode_message(raw, max_bytes=max(len(raw), self.max_message_bytes)).events):
            if (
                self.engine.process(event, partition, position + (index << 1), refold=True).status == "applied"
                and type(event) is not JudgeResult
            ):
                latest[event.call_id] = max(event.ts_ms, latest.get(event.call_id, event.ts_ms))

    def release_partitions(self, partitions: set[int]) -> None:
        """Forget what another worker may now change (on revoke): re-read it if it comes back."""
        gone = [call_id for call_id, (partition, _) in self.owned.items() if partition in partitions]
        self.engine.forget(gone)
        for call_id in gone:
            del self.owned[call_id]
        self.engine.release_partitions(partitions)
        for partition in partitions:
            self.partitions.pop(partition, None)
        self.book.drop(partitions)

    def forgotten(self, call_ids: list[str]) -> dict[str, tuple[int, int]]:
        """Drop ownership of expired calls; returns the partition of each this worker owned and how
        many call segments (the journal's first format) it had, for their deletes."""
        owned = {}
        for call_id in call_ids:
            entry = self.owned.pop(call_id, None)
            if entry is not None:
                owned[call_id] = (entry[0], entry[1])
                if call_id in self.engine.calls:  # taken up again, as a new call, by the message that forgot it
                    self.owned[call_id] = [entry[0], 0]
        return owned
