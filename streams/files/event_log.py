"""Event logs on disk: each record of a JSON Lines or MessagePack log as the bytes a message carries.

`read_log` yields a log's records; `log_format` tells which of the two formats a log is written in, and
`refuse_unreadable` stops a log that is compressed or UTF-16 text before any of it is read as records.
A MessagePack log's records are cut out of the file as written, never decoded here, and a damaged or
cut-short stretch comes back as a record of its own so that it is dead-lettered, not lost.
"""

from __future__ import annotations

import itertools
import re
from typing import Any, Iterator

from models.wire import (
    GZIP_MAGIC,
    JSONL_LOG,
    MAX_MESSAGE_BYTES,
    MSGPACK_LOG,
    UTF8_BOM,
    UTF16_BOMS,
    decode_message,
)


def read_log(path: str) -> Iterator[bytes]:
    """Yield each record of an event log as the bytes a Kafka message would carry.

    JSON Lines: one JSON object a line (blank lines skipped). MessagePack: a stream of MessagePack
    values, each yielded as the very bytes it was written as (cut out, never decoded here). Which of
    the two a log is: `log_format`.
    """
    if log_format(path) == MSGPACK_LOG:
        yield from _msgpack_records(path)
        return
    with open(path, "rb") as handle:
        for number, line in enumerate(handle):
            line = line.strip()
            if number == 0 and line.startswith(UTF8_BOM):  # written by some editors and Windows tools
                line = line[len(UTF8_BOM):].strip()
            if line:
                yield line


def log_format(path: str) -> str:
    """MSGPACK_LOG or JSONL_LOG. By the name when it ends in `.msgpack` (any case), else by the first
    byte: a MessagePack map (an event or a batch) makes a MessagePack log, anything else (`{`, text)
    a JSON Lines one, so that a JSON Lines log under any name reads as it always did."""
    with open(path, "rb") as handle:
        first = handle.read(2)
    refuse_unreadable(first, path)
    if log_format_by_name(path) == MSGPACK_LOG:
        return MSGPACK_LOG
    return MSGPACK_LOG if first and first[0] in _MAP_HEADERS else JSONL_LOG


def log_format_by_name(path: str) -> str:
    """The format a log is written in, by its name alone (a log being written cannot be read yet):
    MSGPACK_LOG when it ends in `.msgpack` (any case), else JSONL_LOG."""
    return MSGPACK_LOG if path.lower().endswith(".msgpack") else JSONL_LOG


def refuse_unreadable(first: bytes, name: str, piped: bool = False) -> None:
    """Refuse a log whose first bytes show it is gzip-compressed or UTF-16 text (as PowerShell writes
    text): read as records, every byte would be dead-lettered and nothing scored. `name` is what the
    message calls it; `piped`: it came in on a stream (standard input, a pipe), and the advice is to
    convert it on its way in."""
    if first == GZIP_MAGIC:
        how = "on its way in (`zcat LOG.gz | callqa … -`)" if piped else f"first (`zcat {name} | callqa … -`)"
        raise ValueError(f"{name} is gzip-compressed: decompress it {how}")
    if first in UTF16_BOMS:
        how = ("on its way in (`iconv -f UTF-16 -t UTF-8 LOG | callqa … -`)" if piped
               else f"first (`iconv -f UTF-16 -t UTF-8 {name} > log.jsonl`)")
        raise ValueError(f"{name} is UTF-16 text: convert it to UTF-8 {how}")


_LOG_CHUNK_BYTES = 1 << 20
# The most an unpacker may hold while it looks for a value's end. msgpack's default, 100 MiB, made a
# larger record (a turn of 300 MB) end the whole replay with BufferFull instead of being refused as
# oversized like any other; 2 GiB is as much as it can take.
_UNPACKER_BUFFER_BYTES = 2**31 - 1


def _unpacker() -> Any:
    """A MessagePack unpacker that holds up to `_UNPACKER_BUFFER_BYTES`."""
    import msgpack

    return msgpack.Unpacker(max_buffer_size=_UNPACKER_BUFFER_BYTES)


def _read_on(chunks: Iterator[bytes], pending: int) -> bytes:
    """The next stretch of a log: a chunk, or as many as are `pending` already (b"": the end). A value
    spanning many chunks is so put together in linear time: read a chunk at a time, each appended to
    what was pending, a 300 MB record was copied 300 times over (34 s). No more is read than an
    unpacker holding the `pending` bytes can take besides: it would refuse records far smaller than
    its limit, for the bytes read after them."""
    room = _UNPACKER_BUFFER_BYTES - pending - _LOG_CHUNK_BYTES  # (chunks are read whole)
    wanted = max(_LOG_CHUNK_BYTES, min(pending, room))
    parts: list[bytes] = []
    size = 0
    while size < wanted:
        chunk = next(chunks, b"")
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _msgpack_records(path: str) -> Iterator[bytes]:
    import msgpack

    with open(path, "rb") as handle:
        first = handle.read(_LOG_CHUNK_BYTES)
        if first.lstrip(b" \t\r\n").startswith((b"{", UTF8_BOM)):
            raise ValueError(f"{path}: this is JSON, not MessagePack (it starts with '{{'): "
                             "name a JSON Lines log anything but *.msgpack")
        try:
            yield from _msgpack_values(itertools.chain([first], iter(lambda: handle.read(_LOG_CHUNK_BYTES), b"")))
        except msgpack.BufferFull:
            raise ValueError(f"{path}: a record (or a damaged stretch) runs on past {_UNPACKER_BUFFER_BYTES} bytes, "
                             f"read up to byte {handle.tell()}: a MessagePack log's records are read whole, and "
                             "none this large can be; cut it out of the log") from None


def _msgpack_values(chunks: Iterator[bytes]) -> Iterator[bytes]:
    # The unpacker only finds where each value ends (skip + tell); the bytes are cut from the chunks
    # read, which is several times cheaper than unpacking and packing every record again. A value cut
    # short at the end of the file is yielded as it is: it does not decode, so it is dead-lettered and
    # counted like any other bad record instead of vanishing. So are bytes that start no value, or a
    # value that is no map and so neither an event nor a batch (a damaged stretch of the file: zero
    # padding, pasted text, each of whose bytes MessagePack reads as a small number): they are yielded
    # as one record up to the next place where a whole event or batch starts, and reading goes on.
    #
    # A record cut short inside the log (a writer that died mid-record, and another that appended)
    # reads on into the records after it: the value ends somewhere in a later record, and what is
    # left of that one reads as damage, or the file ends first. So each record is held until the next
    # one reads well: when damage or the end follows it, and it is no message that decodes, a whole
    # event or batch starting inside it is where the next record really began. It is cut there, and
    # the good records are read again instead of being dead-lettered with the broken one.
    import msgpack

    while True:  # once, and again from a record found inside a value the end of the file cut short
        pending = next(chunks, b"")  # read, not yet yielded
        unpacker = _unpacker()
        unpacker.feed(pending)
        fed_from = 0  # where in `pending` the unpacker's first byte is
        at_end = not pending
        held: bytes | None = None  # the last record read, not yet yielded
        while True:
            cut = 0  # the end of the last record read, in `pending`
            while True:
                try:
                    unpacker.skip()
                    damaged = pending[cut] not in _MAP_HEADERS
                    unreadable = False
                except msgpack.OutOfData:
                    break
                except (msgpack.FormatError, msgpack.StackError):
                    damaged = unreadable = True
                if damaged:
                    # A whole record must be read to be found: what follows the damage is read up to
                    # the largest message first (fed to the unpacker too, which may go on from there).
                    while not at_end and len(pending) - cut < MAX_MESSAGE_BYTES:
                        chunk = next(chunks, b"")
                        at_end = not chunk
                        pending += chunk
                        unpacker.feed(chunk)
                if damaged and held is not None:
                    # (A view, not a copy: this runs for every damaged stretch, and `pending` holds
                    # up to the largest message after it.)
                    inner = _record_start_inside(held, memoryview(pending)[cut:])
                    if inner is not None:  # the held record ran on into the next: read from there again
                        yield held[:inner]
                        pending, cut, fed_from, held = held[inner:] + pending[cut:], 0, 0, None
                        unpacker = _unpacker()
                        unpacker.feed(pending)
                        continue
                if held is not None:
                    yield held
                    held = None
                if damaged:
                    resume, look_from = _look_for_record(pending, cut + 1)
                    # (The next record may lie beyond what is read. Not fed to the unpacker: it is made
                    # anew below, from where the record is found.)
                    searched_on = False
                    while resume is None and not at_end:
                        chunk = _read_on(chunks, len(pending))
                        at_end = not chunk
                        pending += chunk
                        searched_on = True
                        resume, look_from = _look_for_record(pending, look_from)
                    resume = len(pending) if resume is None else resume
                    yield pending[cut:resume]
                    if not unreadable and not searched_on and unpacker.tell() + fed_from == resume:
                        # The damage was one whole value, no map, that the unpacker has read past (a
                        # newline written after each record): it goes on from there, as it is. Made
                        # anew from what is left, for each such value, reading took ten times as long.
                        cut = resume
                        if cut > _LOG_CHUNK_BYTES:  # (what is read is let go of now and then, as below)
                            pending, fed_from, cut = pending[cut:], fed_from - cut, 0
                        continue
                    pending, cut, fed_from = pending[resume:], 0, 0
                    unpacker = _unpacker()
                    unpacker.feed(pending)
                    continue
                end = unpacker.tell() + fed_from
                held = pending[cut:end]
                cut = end
            pending = pending[cut:]
            fed_from -= cut
            if at_end:
                break
            chunk = _read_on(chunks, len(pending))
            at_end = not chunk
            unpacker.feed(chunk)
            pending += chunk
        if not pending:
            if held is not None:
                yield held
            return
        # A value cut short by the end of the file: the held record, or this one, may have run on into
        # it. Where a whole record starts inside, reading starts again there (in this loop: a file of
        # many values each claiming more bytes than are left would nest as deep as they are many).
        if held is not None:
            inner = _record_start_inside(held, pending)
            if inner is not None:
                yield held[:inner]
                chunks = iter([held[inner:] + pending])
                continue
            yield held
        inner = _record_start_inside(pending, b"")
        if inner is None:
            yield pending
            return
        yield pending[:inner]
        chunks = iter([pending[inner:]])


def _record_start_inside(held: bytes, after: bytes | memoryview) -> int | None:
    """Where, inside the record `held` (not at its start), a whole event or batch begins, reading on
    into `after`; None when there is none, or when `held` decodes as a message of its own (a valid
    record followed by damage may well hold a nested map that reads like an event)."""
    if not decode_message(held, max_bytes=len(held)).rejected:  # (its size aside: that is not damage)
        return None
    return _next_record_start(held + after, 1, len(held))


_MAP_HEADERS = frozenset(range(0x80, 0x90)) | {0xDE, 0xDF}
_STR_HEADERS = frozenset(range(0xA0, 0xC0)) | {0xD9, 0xDA, 0xDB}


def _next_record_start(data: bytes, begin: int, end: int | None = None) -> int | None:
    """The first place at or after `begin` (and before `end`) where `data` holds a whole event or
    batch (a map with the contract version `v`), or None."""
    return _look_for_record(data, begin, end)[0]


def _look_for_record(data: bytes, begin: int, end: int | None = None) -> tuple[int | None, int]:
    """`_next_record_start`, and the first place where more data could still show a record: every
    place before it has been looked at for good, so a search going on after more is read starts there
    (from the damage again each time, 101 MiB of zero padding took minutes).

    Only damaged logs come here, so it may try every map header: they are found by a regular
    expression (a map header followed by a string header, as an event's first key), and each try
    reads a small window first and a larger one only while the value runs past it."""
    import msgpack

    limit = min(len(data) - 1, len(data) if end is None else end)
    undecided = max(begin, limit)  # (from here on, nothing has been looked at)
    view = memoryview(data)
    for candidate in _RECORD_CANDIDATE.finditer(data, begin, limit + 1):
        start = candidate.start()
        if start >= limit:
            break
        window = _RESYNC_WINDOW_BYTES
        while True:
            unpacker = _unpacker()
            unpacker.feed(view[start:start + window])
            try:
                value = unpacker.unpack()
            except msgpack.OutOfData:
                if start + window >= len(data):
                    undecided = min(undecided, start)
                    break  # runs past the end of what has been read: no whole record here, yet
                window *= 4
                continue
            except Exception:  # noqa: BLE001 - anything that does not decode is not where a record starts
                break
            if isinstance(value, dict) and "v" in value and ("type" in value or "events" in value):
                return start, start
            break
    return None, undecided


# A map header (`_MAP_HEADERS`) followed by a string header (`_STR_HEADERS`): where an event or a batch
# may start (its keys are strings).
_RECORD_CANDIDATE = re.compile(rb"[\x80-\x8f\xde\xdf](?=[\xa0-\xbf\xd9\xda\xdb])")
_RESYNC_WINDOW_BYTES = 256  # (an event is a few hundred bytes; damage mostly fails within a few)


def is_cut_short(record: bytes) -> bool:
    """Whether a `.msgpack` log's record is a value missing its end (the last one `read_log` yields
    when the file was cut short): whatever is written after it would be read as its missing bytes."""
    import msgpack

    unpacker = _unpacker()
    unpacker.feed(record)
    try:
        unpacker.skip()
    except msgpack.OutOfData:
        return True
    except (msgpack.FormatError, msgpack.StackError):
        return False
    return False
