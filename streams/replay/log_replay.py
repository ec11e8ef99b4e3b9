"""In-process replay: a recorded event log through the same engine as the live worker, no broker.

Events are assigned to partitions exactly as Kafka's default partitioner assigns them by call_id, so
the inactivity sweep sees the same per-partition watermarks as a live worker would. At the end of the
log every call still open is swept, as a producer's end-of-input watermark does live.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import cast

from models.deadletter import oversized_result_reason
from models.events import Event, Watermark
from models.results import CallResult
from models.wire import MAX_MESSAGE_BYTES, Rejected, decode_message, record_call
from scorers.engine import CallEngine, Processed
from streams.partitioning import partition_for, partition_of
from streams.result_size import fitted

ResultSink = Callable[[CallResult], None]
DeadLetterSink = Callable[[Rejected, int], None]
EventSink = Callable[[Event], None]


@dataclass
class ReplayReport:
    records: int = 0
    events: int = 0
    applied: int = 0
    duplicates: int = 0
    rejected: int = 0
    results: int = 0
    swept: int = 0
    calls: int = 0
    watermarks: int = 0
    # The highest partition a watermark of the log named that the replay does not have (None: none
    # did): a log recorded from a topic of more partitions than replayed, whose results then differ.
    partition_beyond: int | None = None
    seconds: float = 0.0

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0


# Where an output falls in the order a sequential replay emits it: (record index, phase, position).
# Per record: its decode rejections (position: their order), then each event's outcome and the sweep
# of its partition right after it (position: the event's place in the record); after the last record
# (index: the record count) the end-of-input sweep (position: the partition). Outputs sharing a key
# come from one partition, in emission order.
OutputKey = tuple[int, int, int]
DECODE_REJECTION, EVENT_OUTCOME, END_OF_INPUT_SWEEP = 0, 1, 2

# A result with its JSON line (encoded once, to be written as it is).
KeyedResultSink = Callable[[OutputKey, CallResult, bytes], None]
KeyedDeadLetterSink = Callable[[OutputKey, Rejected, int], None]


def highest_partition_named(records: Iterable[bytes], partitions: int) -> int | None:
    """The highest partition that a watermark among `records` names beyond `partitions` (None: none
    does), read without decoding the records of one call. What a replay's report says afterwards, for
    those who must know before: a recording writes its sweeps, a judge is paid."""
    highest: int | None = None
    for raw in records:
        if record_call(raw) is not None:
            continue
        for event in decode_message(raw, len(raw)).events:
            if isinstance(event, Watermark):
                highest = partition_beyond(event, partitions, highest)
    return highest


def partition_beyond(watermark: Watermark, partitions: int, highest: int | None) -> int | None:
    """`highest`, or the partition `watermark` names when that is beyond `partitions` and higher."""
    named = watermark.data.partition
    if named is None or named < partitions or (highest is not None and named <= highest):
        return highest
    return named


def replay(
    records: Iterable[bytes],
    engine: CallEngine,
    partitions: int,
    on_result: ResultSink,
    on_dead_letter: DeadLetterSink | None = None,
    on_recorded: EventSink | None = None,
    on_record: Callable[[int], None] | None = None,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    max_result_bytes: int | None = None,
) -> ReplayReport:
    """Feed every record (one Kafka message's bytes) through `engine`.

    `on_recorded` receives each event the replay adds to the log (the inactivity sweep's decisions),
    so a recorded log can be written that replays without any sweep of its own. A record larger than
    `max_message_bytes` is refused as the live worker with the same setting refuses the message, and
    a result larger than `max_result_bytes` (None: no limit) as the worker refuses to publish it.
    """

    def result(key: OutputKey, result: CallResult, line: bytes) -> None:
        on_result(result)

    def dead_letter(key: OutputKey, rejected: Rejected, index: int) -> None:
        if on_dead_letter is not None:
            on_dead_letter(rejected, index)

    outputs = ReplayOutputs(result, dead_letter if on_dead_letter else None, on_recorded, on_record)
    return PartitionReplay(
        engine, partitions, outputs, max_message_bytes=max_message_bytes, max_result_bytes=max_result_bytes
    ).run(records)


@dataclass
class ReplayOutputs:
    """Where a replay hands what it makes, each output with its `OutputKey` (the place that orders the
    outputs of parallel jobs as one replay would)."""

    on_result: KeyedResultSink
    on_dead_letter: KeyedDeadLetterSink | None = None
    # Each event the replay adds to the log (the inactivity sweep's decisions), for `--record`.
    on_recorded: EventSink | None = None
    # Each record's size once it is read, for progress.
    on_record: Callable[[int], None] | None = None


@dataclass
class PartitionReplay:
    """`replay`, restricted to the events of the `owned` partitions (all when None).

    All engine state is per partition, so replays of disjoint sets of partitions, their outputs merged
    by key, give exactly the outputs of one replay of them all. A record of one call (`record_call`)
    is decoded only by the replay that owns the call's partition, which reports its decode rejections;
    every other record is decoded by all, and only one (`report_rejections`) reports its rejections.
    The report counts what this replay did: every record read, but only the events of its own
    partitions and the rejections it reported.
    """

    engine: CallEngine
    partitions: int
    outputs: ReplayOutputs
    owned: Collection[int] | None = None
    report_rejections: bool = True
    max_message_bytes: int = MAX_MESSAGE_BYTES
    max_result_bytes: int | None = None
    report: ReplayReport = field(default_factory=ReplayReport)
    # A call's partition never changes: its id is hashed once, not once per event.
    partition_of_call: dict[str, int] = field(default_factory=dict)

    def run(self, records: Iterable[bytes]) -> ReplayReport:
        """Replay every record, then sweep what is still open as the end of input does; the report."""
        started = time.perf_counter()
        report, engine, owned, on_record = self.report, self.engine, self.owned, self.outputs.on_record
        # Runs for every record and event: locals instead of repeated lookups, and the common outcome
        # (applied, nothing to publish, nothing due) without a further call. (Guarded: an event whose
        # handling raises is dead-lettered with the failure, as the worker does.)
        process, anything_due, known_partition = engine.process_guarded, engine.anything_due, self.partition_of_call.get
        records_read = events = 0
        for index, raw in enumerate(records):
            records_read += 1
            reports_rejections = self.report_rejections
            if owned is not None:
                # Decoding the other replays' records is wasted work (a fifth of a job's time in two jobs):
                # a record of one call is left to the replay owning its partition, read at a sixth of the cost.
                call_id = record_call(raw)
                if call_id is not None:
                    if self._call_partition(call_id) not in owned:
                        if on_record is not None:
                            on_record(len(raw))
                        continue
                    reports_rejections = True
            decoded = decode_message(raw, self.max_message_bytes)
            if decoded.rejected and reports_rejections:
                self._reject(index, decoded.rejected)
            for position, event in enumerate(decoded.events):
                if isinstance(event, Watermark):  # (it names its own partition: `partition_of`)
                    partition = partition_of(event, self.partitions)
                    report.partition_beyond = partition_beyond(event, self.partitions, report.partition_beyond)
                else:
                    known = known_partition(event.call_id)  # (`_call_partition`'s hit, without its call)
                    partition = known if known is not None else self._call_partition(event.call_id)
                if owned is not None and partition not in owned:
                    continue
                events += 1
                processed = process(event, partition)
                if processed.reason is not None or processed.result is not None:
                    self._emit(processed, event, (index, EVENT_OUTCOME, position))
                if anything_due(partition):
                    self._sweep(partition, (index, EVENT_OUTCOME, position))
            if on_record is not None:
                on_record(len(raw))
        report.records, report.events = records_read, events
        for partition in sorted(engine.partitions()):
            self._sweep(partition, (report.records, END_OF_INPUT_SWEEP, partition), end_of_input=True)
        self._count_from_engine()
        report.seconds = time.perf_counter() - started
        return report

    def _call_partition(self, call_id: str) -> int:
        partition = self.partition_of_call.get(call_id)
        if partition is None:
            partition = self.partition_of_call[call_id] = partition_for(call_id, self.partitions)
        return partition

    def _reject(self, index: int, rejected: Iterable[Rejected]) -> None:
        """A record's decode rejections, counted and dead-lettered."""
        for position, rejection in enumerate(rejected):
            self.report.rejected += 1
            if self.outputs.on_dead_letter is not None:
                self.outputs.on_dead_letter((index, DECODE_REJECTION, position), rejection, index)

    def _emit(self, processed: Processed, event: Event, key: OutputKey) -> None:
        """What `process` said of an event, when it said more than that it was applied (or skipped)."""
        on_dead_letter, index = self.outputs.on_dead_letter, key[0]
        if processed.reason is not None and on_dead_letter is not None:  # refused, or left unscored
            on_dead_letter(key, Rejected(processed.reason or "rejected", b"", event.event_id, event.call_id), index)
        if processed.result is None:
            return
        fit = fitted(processed.result, self.max_result_bytes)
        result, line = fit.result, fit.value
        if line is None:
            # Too large to publish: the live worker dead-letters it in its place.
            self.report.rejected += 1
            if on_dead_letter is not None:
                limit = cast(int, self.max_result_bytes)  # (no limit: every result fits)
                reason = oversized_result_reason(result.call_id, result.version, fit.full_size, limit)
                on_dead_letter(key, Rejected(reason, b"", call_id=result.call_id), index)
            return
        self.report.results += 1
        self.outputs.on_result(key, result, line)

    def _sweep(self, partition: int, key: OutputKey, end_of_input: bool = False) -> None:
        """After every event, as if each came alone (docs/concepts/batches.md#a-batch-is-its-events-sent-one-by-one):
        a call whose deadline passes between two events of a batch is ended between them."""
        for synthetic in self.engine.sweep(partition, end_of_input):
            self.report.swept += 1
            if self.outputs.on_recorded is not None:
                self.outputs.on_recorded(synthetic)
            processed = self.engine.process_guarded(synthetic, partition)
            if processed.reason is not None or processed.result is not None:
                self._emit(processed, synthetic, key)
        # Ended calls past their retention are forgotten as the live worker forgets them, so that a
        # post-call event arriving later is dead-lettered here too.
        self.engine.forget_expired(partition)

    def _count_from_engine(self) -> None:
        counters, report = self.engine.counters, self.report
        report.applied = counters.applied
        report.duplicates = counters.duplicate
        report.rejected += counters.rejected + counters.unscored
        report.calls = counters.calls  # forgotten calls included
        report.watermarks = counters.watermarks
