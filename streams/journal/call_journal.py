"""The call journal: how a worker's call state survives a crash or a rebalance.

A call's state is a pure function of its accepted events, so instead of writing the whole (growing)
state to a changelog after each message, the worker journals just the input it accepted, in a
changelog-backed Faust table. Changelog bytes per event therefore stay flat however long a call
grows. On (re)assignment of a partition the worker re-folds the partition's journal in order through
the same engine, which also restores each call's applied position, its seen event_ids and its result
version.

Partition segments (what the worker writes). A table write costs far more than the event it records,
so the worker does not write per message: `JournalBook` gathers what each message of a partition
accepted and writes it as one segment per partition once it holds `SEGMENT_BYTES` or has waited
`SEGMENT_SECONDS`: key `\\x1epartition\\x1f<partition>\\x1f<sequence>`, value `{"p": partition, "s":
sequence, "e": [[call_id, position, bytes], …]}` in the order the events were applied, as MessagePack
compressed with Zstandard (segments written before were compressed with zlib, and still read).
`bytes` is the original message when all its events belong to one call (nothing re-encoded), else
one event. The Kafka messages of a segment are acknowledged only once the segment is written (Faust
flushes the producer before it commits offsets), so a crash loses nothing the journal does not have:
whatever was not journaled is delivered again. A segment is deleted once every call in it has been forgotten.

Retirement. A forgotten call's entries can stay behind in a segment kept for its other calls; read
back, they would bring back a fragment of the call (scored again as a call of its own). So such a
call gets a retirement record, `\x1eretired\x1f<partition>\x1f<call_id>` = `{"p", "c": call_id, "s":
sequence}`: a restore skips its entries in segments before `s` (later ones are a new call of that
id). The record goes once the last of those segments is deleted.

Watermarks. Watermark messages (a producer's, the worker's own idle ticks) move a partition's event
time without changing any call, and the events of forgotten calls leave with their segments: neither
can be re-folded. So whenever a segment falls due the worker also writes the partition's watermark,
when it moved, under `\x1ewatermark\x1f<partition>` (value `{"p": partition, "w": ts_ms, "o":
offset}`, one key a partition, overwritten), and a restore starts the partition's clock there: a
restored worker then sweeps exactly when the one before it would have. `o` is the offset of the last
message the segment holds: a message at or below it, delivered again after a restart (offsets are
committed later), has all its changes in the journal already, those to calls forgotten since
included, so its events of calls no longer held are skipped, not taken up again.

One commit point. A due segment goes out as several changelog records — the segment, then
forgetting's retirement records and deletes, then the watermark record — and a crash can deliver a
prefix of them (Kafka keeps their order). So the segment itself records what the rest says: the
watermark and covered offset (`"w"`, `"o"`) and the calls forgotten since the partition's previous
segment (`"f"`, retired in every earlier segment). A restore takes the latest of the segments and
the watermark record, honours `"f"` as it honours retirement records, and stages again the records
and deletes the crash cut short. When calls were forgotten but nothing was accepted, the segment
holds no entries, only that commit point; the partition's next segment supersedes it and deletes it.
Every message's sends reach the broker before its segment is written (streams/worker/message_flow.py).

Call segments (the first format, still read): key `<call_id>\\x1f<segment>`, value `{"p": partition,
"e": [[position, bytes], …]}`, one per call per message.

An entry's events take the positions `position`, `position + 2`, … (a batch message's events share
one Kafka offset, and the odd positions between them belong to the sweep's ends; see streams/worker/live_scorer.py).
Journals written when they took `position + 1`, … restore the same calls: a message delivered again
at the offset of their last entry finds its events' ids seen, and skips them as duplicates.
"""

from __future__ import annotations

import time
import zlib
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgpack
import zstandard

from scorers.watermarks import later

SEPARATOR = b"\x1f"
# Keys of the worker's own records start with \x1e, which no call_id of a call segment does.
RESERVED_PREFIX = b"\x1e"
PARTITION_SEGMENT_PREFIX = RESERVED_PREFIX + b"partition" + SEPARATOR
WATERMARK_PREFIX = RESERVED_PREFIX + b"watermark" + SEPARATOR
RETIRED_PREFIX = RESERVED_PREFIX + b"retired" + SEPARATOR
# A segment is written when it holds this many bytes of events, or when its oldest entry has waited
# this long (checked whenever the partition delivers a message).
SEGMENT_BYTES = 256 * 1024
SEGMENT_SECONDS = 1.0

# Segments are compressed: event envelopes repeat their keys, ids and phrases. Zstandard at level 1
# makes a bench segment 6.1x smaller (changelog bytes, and memory where the store is in memory) in
# 0.25 µs an event; zlib at level 1, used before, made it 4.3x smaller in 1.0 µs, some 6 % of the
# batched worker's time. Segments written with zlib are still read: a restore may meet them.
SEGMENT_COMPRESSION_LEVEL = 1
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_ZLIB_FIRST_BYTE = b"\x78"

Entry = tuple[int, bytes]  # (position of the first event, the bytes holding the events)


# ----------------------------------------------------------------------------------- call segments


def segment_key(call_id: str, segment: int) -> bytes:
    return call_id.encode() + SEPARATOR + b"%08d" % segment


def split_key(key: bytes) -> tuple[str, int]:
    call_id, _, segment = key.rpartition(SEPARATOR)
    return call_id.decode(), int(segment)


def encode_segment(partition: int, entries: list[Entry]) -> bytes:
    packed: bytes = msgpack.packb({"p": partition, "e": entries}, use_bin_type=True)
    return packed


def decode_segment(value: bytes) -> tuple[int, list[Entry]]:
    document = msgpack.unpackb(value, raw=False)
    return document["p"], [(int(position), bytes(raw)) for position, raw in document["e"]]


def calls_of_partition(items: Iterable[tuple[bytes, bytes]], partition: int) -> Iterator[tuple[str, int, list[Entry]]]:
    """(call_id, number of segments, entries in order) for every call journaled on `partition` in
    call segments (partition segments are read by `JournalBook.restore`)."""
    by_call: dict[str, list[tuple[int, list[Entry]]]] = defaultdict(list)
    for key, value in items:
        if value is None or key.startswith(RESERVED_PREFIX):
            continue
        seg_partition, entries = decode_segment(value)
        if seg_partition != partition:
            continue
        call_id, segment = split_key(key)
        by_call[call_id].append((segment, entries))
    for call_id in sorted(by_call):
        segments = sorted(by_call[call_id])
        yield call_id, len(segments), [entry for _, entries in segments for entry in entries]


# ------------------------------------------------------------------------------------ watermarks


def watermark_key(partition: int) -> bytes:
    return WATERMARK_PREFIX + b"%d" % partition


def encode_watermark(partition: int, ts_ms: int, through_offset: int = -1) -> bytes:
    packed: bytes = msgpack.packb({"p": partition, "w": ts_ms, "o": through_offset})
    return packed


def decode_watermark(value: bytes) -> tuple[int, int]:
    """A watermark record's watermark, and the offset up to which every message's changes are in the
    journal (-1: unknown, as in records written before it was kept)."""
    record = msgpack.unpackb(value)
    return int(record["w"]), int(record.get("o", -1))


# ------------------------------------------------------------------------------ partition segments


def retired_prefix(partition: int) -> bytes:
    return RETIRED_PREFIX + b"%d" % partition + SEPARATOR


def retired_key(partition: int, call_id: str) -> bytes:
    return retired_prefix(partition) + call_id.encode()


def encode_retired(partition: int, call_id: str, sequence: int) -> bytes:
    packed: bytes = msgpack.packb({"p": partition, "c": call_id, "s": sequence}, use_bin_type=True)
    return packed


def partition_segment_prefix(partition: int) -> bytes:
    return PARTITION_SEGMENT_PREFIX + b"%d" % partition + SEPARATOR


def partition_segment_key(partition: int, sequence: int) -> bytes:
    return partition_segment_prefix(partition) + b"%012d" % sequence


@dataclass(frozen=True, slots=True)
class PartitionSegment:
    partition: int
    sequence: int
    entries: list[tuple[str, int, bytes]]
    # The segment is its batch's commit point (see "One commit point" above): the partition's
    # watermark and the last offset it covers when it was written (None / -1: not recorded), and the
    # calls forgotten since the segment before it.
    watermark_ms: int | None = None
    through_offset: int = -1
    forgotten: tuple[str, ...] = ()


def encode_partition_segment(
    partition: int,
    sequence: int,
    entries: list[tuple[str, int, bytes]],
    watermark_ms: int | None = None,
    through_offset: int = -1,
    forgotten: Iterable[str] = (),
) -> bytes:
    packed = msgpack.packb(
        {"p": partition, "s": sequence, "e": entries, "w": watermark_ms, "o": through_offset, "f": list(forgotten)},
        use_bin_type=True,
    )
    return zstandard.compress(packed, SEGMENT_COMPRESSION_LEVEL)


def decode_partition_segment(value: bytes) -> PartitionSegment:
    # A MessagePack map never starts with either compressor's first bytes (0x28, 0x78).
    if value[:4] == _ZSTD_MAGIC:
        value = zstandard.decompress(value)
    elif value[:1] == _ZLIB_FIRST_BYTE:
        value = zlib.decompress(value)
    document = msgpack.unpackb(value, raw=False)
    watermark = document.get("w")
    return PartitionSegment(
        document["p"],
        document["s"],
        [(call_id, int(position), raw) for call_id, position, raw in document["e"]],
        None if watermark is None else int(watermark),
        int(document.get("o", -1)),
        tuple(document.get("f", ())),
    )


@dataclass
class RestoredSegments:
    entries: list[tuple[str, int, bytes]] = field(default_factory=list)  # (call_id, position, bytes)
    watermark_ms: int | None = None  # the latest commit point's (None: nothing recorded one)
    through_offset: int = -1


@dataclass
class _Pending:
    entries: list[tuple[str, int, bytes]] = field(default_factory=list)
    acks: list[Any] = field(default_factory=list)  # what to acknowledge once the segment is written
    size: int = 0
    since: float = 0.0


@dataclass
class JournalBook:
    """Gathers each partition's journal entries into segments, and knows which segments are done.

    No Faust here: the agent stages each message's entries (with what to acknowledge), writes the
    segment `take()` returns when `due()`, then acknowledges."""

    segment_bytes: int = SEGMENT_BYTES
    segment_seconds: float = SEGMENT_SECONDS
    pending: dict[int, _Pending] = field(default_factory=dict)
    next_sequence: dict[int, int] = field(default_factory=dict)
    # Which segments hold a call's entries, and how many calls not yet forgotten each segment holds.
    segments_of_call: dict[str, tuple[int, list[int]]] = field(default_factory=dict)
    live_calls: dict[tuple[int, int], int] = field(default_factory=dict)
    # Forgotten calls whose entries remain in segments kept for other calls: call → (partition, those
    # segments), and segment → such calls. Each has a retirement record until those segments go.
    retired: dict[str, tuple[int, set[int]]] = field(default_factory=dict)
    fragments: dict[tuple[int, int], set[str]] = field(default_factory=dict)
    # Table writes (value None: a delete) that wait to go out with the partition's next segment.
    changes: dict[int, list[tuple[bytes, bytes | None]]] = field(default_factory=dict)
    # Calls forgotten since the partition's last segment, named in its next one (its commit point).
    forgotten_since: dict[int, set[str]] = field(default_factory=dict)
    # The partition's latest segment when it holds no live entries (only its commit point matters):
    # deleted with the partition's next segment, which supersedes it.
    superseded: dict[int, int] = field(default_factory=dict)

    def stage(self, partition: int, journal: dict[str, list[Entry]], ack: Any = None, now: float | None = None) -> None:
        pending = self.pending.get(partition)
        if pending is None:
            pending = self.pending[partition] = _Pending()
        if not pending.acks and not pending.entries:
            pending.since = time.monotonic() if now is None else now
        for call_id, entries in journal.items():
            for position, raw in entries:
                pending.entries.append((call_id, position, raw))
                pending.size += len(raw)
        if ack is not None:
            pending.acks.append(ack)

    def due(self, partition: int, now: float | None = None) -> bool:
        return self._past(partition, 1, now)

    def last_staged(self, partition: int) -> Any:
        """What the last message staged on the partition gave to acknowledge (None: nothing staged)."""
        pending = self.pending.get(partition)
        return pending.acks[-1] if pending is not None and pending.acks else None

    def overdue(self, partition: int, now: float | None = None) -> bool:
        """Twice as big or as old as a due segment: to be written now, whatever it waits for."""
        return self._past(partition, 2, now)

    def _past(self, partition: int, times: int, now: float | None) -> bool:
        pending = self.pending.get(partition)
        if pending is None or not (pending.entries or pending.acks):
            return False
        if pending.size >= self.segment_bytes * times:
            return True
        return (time.monotonic() if now is None else now) - pending.since >= self.segment_seconds * times

    def take(
        self, partition: int, watermark_ms: int | None = None, through_offset: int = -1
    ) -> tuple[bytes | None, bytes | None, list[Any]]:
        """(key, value) of the partition's next segment (None, None when nothing was accepted and no
        call forgotten) and what to acknowledge once it is written. The segment records the
        partition's watermark and the last offset it covers, and the calls forgotten since the last
        segment: written first, it is the commit point of everything that goes out with it."""
        pending = self.pending.pop(partition, None)
        forgotten = self.forgotten_since.pop(partition, set())
        entries, acks = (pending.entries, pending.acks) if pending is not None else ([], [])
        if not entries and not forgotten:
            return None, None, acks
        sequence = self.next_sequence.get(partition, 0)
        self.next_sequence[partition] = sequence + 1
        # An earlier segment kept only for its commit point goes once this one, newer, is written.
        earlier = self.superseded.pop(partition, None)
        if earlier is not None:
            self.stage_changes(partition, [(partition_segment_key(partition, earlier), None)])
        if entries:
            self._register(partition, sequence, entries)
        else:
            self.superseded[partition] = sequence
        value = encode_partition_segment(partition, sequence, entries, watermark_ms, through_offset, sorted(forgotten))
        return partition_segment_key(partition, sequence), value, acks

    def forget(self, call_ids: Iterable[str]) -> None:
        """Stage the table changes that forgetting these calls makes, to go out with their partition's
        next segment (`take_changes`): the segments whose calls are now all forgotten are deleted, and
        a call whose entries stay behind in a segment kept for other calls gets a retirement record,
        written before any delete, so that a restore skips those entries instead of bringing back a
        fragment of the call. Entries of these calls still waiting to be written are dropped: they
        would only bring the calls back on restore."""
        call_ids = set(call_ids)
        for pending in self.pending.values():
            if any(call_id in call_ids for call_id, _, _ in pending.entries):
                pending.entries = [entry for entry in pending.entries if entry[0] not in call_ids]
                pending.size = sum(len(raw) for _, _, raw in pending.entries)
        records: dict[int, list[tuple[bytes, bytes | None]]] = {}
        deletes: dict[int, list[tuple[bytes, bytes | None]]] = {}
        for call_id in sorted(call_ids):
            found = self.segments_of_call.pop(call_id, None)
            if found is None:
                continue
            partition, sequences = found
            self.forgotten_since.setdefault(partition, set()).add(call_id)
            left_behind = set()
            for sequence in sequences:
                key = (partition, sequence)
                left = self.live_calls.get(key, 0) - 1
                if left > 0:
                    self.live_calls[key] = left
                    left_behind.add(sequence)
                else:
                    self.live_calls.pop(key, None)
                    deletes.setdefault(partition, []).extend(self._delete_segment(partition, sequence))
            if left_behind:
                _, earlier = self.retired.get(call_id, (partition, set()))
                self.retired[call_id] = (partition, earlier | left_behind)
                for sequence in left_behind:
                    self.fragments.setdefault((partition, sequence), set()).add(call_id)
                sequence_now = self.next_sequence.get(partition, 0)
                records.setdefault(partition, []).append(
                    (retired_key(partition, call_id), encode_retired(partition, call_id, sequence_now))
                )
        # A call forgotten again here can lose its earlier record to the delete of another call's last
        # segment, which also held its old fragment: staged after its new record, that delete would
        # erase it. The calls still retired at the end keep their records.
        still_retired = {
            retired_key(self.retired[call_id][0], call_id) for call_id in call_ids if call_id in self.retired
        }
        for partition in sorted(records.keys() | deletes.keys()):
            kept = [(key, value) for key, value in deletes.get(partition, []) if key not in still_retired]
            self.stage_changes(partition, records.get(partition, []) + kept)

    def stage_changes(self, partition: int, changes: list[tuple[bytes, bytes | None]]) -> None:
        """Table writes (value None: a delete) to go out with the partition's next segment."""
        self.changes.setdefault(partition, []).extend(changes)

    def _delete_segment(self, partition: int, sequence: int) -> list[tuple[bytes, bytes | None]]:
        """The segment's delete, then the retirement records no longer needed once it is gone."""
        changes: list[tuple[bytes, bytes | None]] = [(partition_segment_key(partition, sequence), None)]
        for call_id in sorted(self.fragments.pop((partition, sequence), ())):
            _, sequences = self.retired[call_id]
            sequences.discard(sequence)
            if not sequences:
                del self.retired[call_id]
                changes.append((retired_key(partition, call_id), None))
        return changes

    def take_changes(self, partition: int) -> list[tuple[bytes, bytes | None]]:
        """The table changes staged for the partition, in the order they must be written."""
        return self.changes.pop(partition, [])

    def drop(self, partitions: set[int]) -> None:
        """Forget partitions this worker no longer owns. Their staged entries were never
        acknowledged, so Kafka delivers those messages again to whoever owns the partition next."""
        for partition in partitions:
            self.pending.pop(partition, None)
            self.next_sequence.pop(partition, None)
        for call_id in [c for c, (p, _) in self.segments_of_call.items() if p in partitions]:
            del self.segments_of_call[call_id]
        for key in [k for k in self.live_calls if k[0] in partitions]:
            del self.live_calls[key]
        for call_id in [c for c, (p, _) in self.retired.items() if p in partitions]:
            del self.retired[call_id]
        for key in [k for k in self.fragments if k[0] in partitions]:
            del self.fragments[key]
        for partition in partitions:
            self.changes.pop(partition, None)
            self.forgotten_since.pop(partition, None)
            self.superseded.pop(partition, None)

    def restore(self, partition: int, items: Iterable[tuple[bytes, bytes]]) -> RestoredSegments:
        """The partition's journal entries in the order they were applied (by position), without the
        entries of retired calls, and its latest commit point (of its segments and its watermark
        record, written after them: a crash can leave the record behind the latest segment, never
        ahead of it); the book learns the partition's segments. What a crash cut short after a
        segment (retirement records, deletes) is staged again."""
        segments: list[PartitionSegment] = []
        retired_before: dict[str, int] = {}  # call → its entries in segments before this one are retired
        recorded: dict[str, int] = {}  # call → the sequence its retirement record names
        # The key names the partition: only this partition's segments are decompressed and decoded.
        prefix, retired_at = partition_segment_prefix(partition), retired_prefix(partition)
        restored = RestoredSegments()
        for key, value in items:
            if value is None:
                continue
            if key.startswith(prefix):
                segment = decode_partition_segment(value)
                if segment.partition == partition:
                    segments.append(segment)
            elif key.startswith(retired_at):
                record = msgpack.unpackb(value, raw=False)
                retired_before[record["c"]] = max(int(record["s"]), retired_before.get(record["c"], -1))
                recorded[record["c"]] = int(record["s"])
            elif key == watermark_key(partition):
                restored.watermark_ms, restored.through_offset = decode_watermark(value)
        segments.sort(key=lambda segment: segment.sequence)
        record_offset = restored.through_offset
        latest: tuple[int, int] | None = None  # (offset, watermark) of the latest segment that has one
        for segment in segments:
            # A segment names the calls forgotten before it: their records may not have followed it.
            for call_id in segment.forgotten:
                retired_before[call_id] = max(segment.sequence, retired_before.get(call_id, -1))
            if segment.watermark_ms is not None:
                latest = (segment.through_offset, segment.watermark_ms)
            restored.through_offset = max(segment.through_offset, restored.through_offset)
        # The newest of the record and the latest segment (by the offset each covers), not the higher
        # watermark: an operator's reset (`callqa watermark reset`) may have set the time lower since.
        # (Without one the newer is also the higher: the same as taking the higher.)
        if latest is not None and (restored.watermark_ms is None or latest[0] >= record_offset):
            restored.watermark_ms = (
                latest[1]
                if restored.watermark_ms is None or latest[0] > record_offset
                else later(restored.watermark_ms, latest[1])
            )
        still_needed: set[str] = set()
        deletes: list[tuple[bytes, bytes | None]] = []
        for segment in segments:
            sequence = segment.sequence
            self.next_sequence[partition] = max(self.next_sequence.get(partition, 0), sequence + 1)
            kept = [entry for entry in segment.entries if sequence >= retired_before.get(entry[0], -1)]
            left_behind = {entry[0] for entry in segment.entries} - {entry[0] for entry in kept}
            if not kept:  # only retired entries (a delete a crash cut short) or none (a commit point)
                if segment is segments[-1]:  # the latest commit point: it goes with the next segment
                    self.superseded[partition] = sequence
                else:
                    deletes.append((partition_segment_key(partition, sequence), None))
                continue
            self._register(partition, sequence, kept)
            for call_id in left_behind:
                _, sequences = self.retired.setdefault(call_id, (partition, set()))
                sequences.add(sequence)
                self.fragments.setdefault((partition, sequence), set()).add(call_id)
            still_needed |= left_behind
            restored.entries.extend(kept)
        # A segment holds a message's entries call by call; re-folded so, a call's later events would
        # move the partition's time past another call's first event, which the engine then refuses as
        # too late for a new call. In position order the engine sees what it saw (a one-call message
        # kept whole sits at its first event; only sweep ends of other calls fall inside it, and an end
        # changes no other call).
        restored.entries.sort(key=lambda entry: entry[1])
        # Named by a segment's "f" and its record lost, or left at an earlier forgetting of the call
        # (a crash cut the write that replaced it short): the segment naming it may go before long.
        records: list[tuple[bytes, bytes | None]] = [
            (retired_key(partition, call_id), encode_retired(partition, call_id, retired_before[call_id]))
            for call_id in sorted(still_needed)
            if recorded.get(call_id, -1) < retired_before[call_id]
        ]
        gone: list[tuple[bytes, bytes | None]] = [
            (retired_key(partition, call_id), None) for call_id in sorted(recorded.keys() - still_needed)
        ]  # every segment it was in is gone
        self.stage_changes(partition, records + deletes + gone)
        return restored

    def _register(self, partition: int, sequence: int, entries: list[tuple[str, int, bytes]]) -> None:
        calls = {call_id for call_id, _, _ in entries}
        self.live_calls[(partition, sequence)] = len(calls)
        for call_id in calls:
            found = self.segments_of_call.get(call_id)
            if found is None:
                self.segments_of_call[call_id] = (partition, [sequence])
            else:
                found[1].append(sequence)
