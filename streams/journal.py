"""The call journal: how a worker's call state survives a crash or a rebalance.

A call's state is a pure function of its accepted events, so instead of writing the whole (growing)
state to a changelog after each message, the worker appends just the events it accepted for each call
touched by the message, as one journal segment: key `<call_id>\\x1f<segment>`, value
`{"p": partition, "e": [[position, event msgpack], …]}` in a changelog-backed Faust table. Changelog
bytes per event therefore stay flat however long a call grows. On (re)assignment of a partition the
worker re-folds each call's segments in order through the same engine, which also restores the
call's applied position, its seen event_ids and its result version.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Iterator

import msgpack

SEPARATOR = b"\x1f"


def segment_key(call_id: str, segment: int) -> bytes:
    return call_id.encode() + SEPARATOR + b"%08d" % segment


def split_key(key: bytes) -> tuple[str, int]:
    call_id, _, segment = key.rpartition(SEPARATOR)
    return call_id.decode(), int(segment)


def encode_segment(partition: int, entries: list[tuple[int, bytes]]) -> bytes:
    return msgpack.packb({"p": partition, "e": entries}, use_bin_type=True)


def decode_segment(value: bytes) -> tuple[int, list[tuple[int, bytes]]]:
    document = msgpack.unpackb(value, raw=False)
    return document["p"], [(int(position), bytes(raw)) for position, raw in document["e"]]


def calls_of_partition(items: Iterable[tuple[bytes, bytes]], partition: int) -> Iterator[tuple[str, int, list[tuple[int, bytes]]]]:
    """(call_id, number of segments, entries in order) for every call journaled on `partition`."""
    by_call: dict[str, list[tuple[int, list[tuple[int, bytes]]]]] = defaultdict(list)
    for key, value in items:
        if value is None:
            continue
        seg_partition, entries = decode_segment(value)
        if seg_partition != partition:
            continue
        call_id, segment = split_key(key)
        by_call[call_id].append((segment, entries))
    for call_id in sorted(by_call):
        segments = sorted(by_call[call_id])
        yield call_id, len(segments), [entry for _, entries in segments for entry in entries]
