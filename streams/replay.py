"""In-process replay: a recorded event log through the same engine as the live worker, no broker.

Events are assigned to partitions exactly as Kafka's default partitioner assigns them by call_id, so
the inactivity sweep sees the same per-partition watermarks as a live worker would. At the end of the
log every call still open is swept, as a producer's end-of-input watermark does live.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

from aiokafka.partitioner import murmur2

from models.events import Event, Watermark
from models.results import CallResult
from models.wire import Rejected, decode_message
from scorers.engine import CallEngine

ResultSink = Callable[[CallResult], None]
DeadLetterSink = Callable[[Rejected, int], None]
EventSink = Callable[[Event], None]


def partition_for(call_id: str, partitions: int) -> int:
    """Kafka's default partitioner (murmur2 of the key bytes), as every producer of the contract uses."""
    return (murmur2(call_id.encode()) & 0x7FFFFFFF) % partitions


def partition_of(event: Event, partitions: int) -> int:
    """The partition a live worker saw the event on: a watermark names its own, others go by call_id."""
    if isinstance(event, Watermark) and event.data.partition is not None:
        return event.data.partition % partitions
    return partition_for(event.call_id, partitions)


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
    seconds: float = 0.0
    sweep_events: list[Event] = field(default_factory=list, repr=False)

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0


def replay(
    records: Iterable[bytes],
    engine: CallEngine,
    partitions: int,
    on_result: ResultSink,
    on_dead_letter: DeadLetterSink | None = None,
    on_recorded: EventSink | None = None,
    on_record: Callable[[int], None] | None = None,
) -> ReplayReport:
    """Feed every record (one Kafka message's bytes) through `engine`.

    `on_recorded` receives each event the replay adds to the log (the inactivity sweep's decisions),
    so a recorded log can be written that replays without any sweep of its own.
    """
    report = ReplayReport()
    started = time.perf_counter()

    def feed(event: Event, partition: int, index: int) -> None:
        processed = engine.process(event, partition)
        if processed.status == "rejected" and on_dead_letter is not None:
            on_dead_letter(Rejected(processed.reason or "rejected", b"", event.event_id, event.call_id), index)
        if processed.result is not None:
            report.results += 1
            on_result(processed.result)

    def sweep(partition: int, index: int, end_of_input: bool = False) -> None:
        for synthetic in engine.sweep(partition, end_of_input):
            report.swept += 1
            if on_recorded is not None:
                on_recorded(synthetic)
            feed(synthetic, partition, index)

    # A call's partition never changes: hash its id once, not once per event.
    partition_of_call: dict[str, int] = {}
    for index, raw in enumerate(records):
        report.records += 1
        decoded = decode_message(raw)
        for rejected in decoded.rejected:
            report.rejected += 1
            if on_dead_letter is not None:
                on_dead_letter(rejected, index)
        touched: list[int] = []
        for event in decoded.events:
            report.events += 1
            partition = partition_of_call.get(event.call_id)
            if partition is None or isinstance(event, Watermark):
                partition = partition_of(event, partitions)
                if not isinstance(event, Watermark):
                    partition_of_call[event.call_id] = partition
            feed(event, partition, index)
            if partition not in touched:
                touched.append(partition)
        for partition in touched:
            sweep(partition, index)
        if on_record is not None:
            on_record(len(raw))
    for partition in sorted(engine.partitions()):
        sweep(partition, report.records, end_of_input=True)

    counters = engine.counters
    report.applied = counters.applied
    report.duplicates = counters.duplicate
    report.rejected += counters.rejected
    report.calls = len(engine.calls)
    report.seconds = time.perf_counter() - started
    return report
