"""Event logs on disk: each record of a JSON Lines or MessagePack log as the bytes a message carries.

`read_log` yields a log's records; `log_format` tells which of the two formats a log is written in, and
`refuse_unreadable` stops a log that is compressed or UTF-16 text before any of it is read as records.
A MessagePack log's records are cut out of the file as written, never decoded here, and a damaged or
cut-short stretch comes back as a record of its own so that it is dead-lettered, not lost.
"""

from __future__ import annotations

import enum
import itertools
import re
from collections.abc import Generator, Iterator
from typing import Any

import msgpack

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
                line = line[len(UTF8_BOM) :].strip()
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
        how = (
            "on its way in (`iconv -f UTF-16 -t UTF-8 LOG | callqa … -`)"
            if piped
            else f"first (`iconv -f UTF-16 -t UTF-8 {name} > log.jsonl`)"
        )
        raise ValueError(f"{name} is UTF-16 text: convert it to UTF-8 {how}")


_LOG_CHUNK_BYTES = 1 << 20
# The most an unpacker may hold while it looks for a value's end. msgpack's default, 100 MiB, made a
# larger record (a turn of 300 MB) end the whole replay with BufferFull instead of being refused as
# oversized like any other; 2 GiB is as much as it can take.
_UNPACKER_BUFFER_BYTES = 2**31 - 1


def _unpacker() -> Any:
    """A MessagePack unpacker that holds up to `_UNPACKER_BUFFER_BYTES`."""
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
    with open(path, "rb") as handle:
        first = handle.read(_LOG_CHUNK_BYTES)
        if first.lstrip(b" \t\r\n").startswith((b"{", UTF8_BOM)):
            raise ValueError(
                f"{path}: this is JSON, not MessagePack (it starts with '{{'): "
                "name a JSON Lines log anything but *.msgpack"
            )
        chunks = itertools.chain([first], iter(lambda: handle.read(_LOG_CHUNK_BYTES), b""))
        try:
            yield from MsgpackRecordReader(chunks).records()
        except msgpack.BufferFull:
            raise ValueError(
                f"{path}: a record (or a damaged stretch) runs on past {_UNPACKER_BUFFER_BYTES} bytes, "
                f"read up to byte {handle.tell()}: a MessagePack log's records are read whole, and "
                "none this large can be; cut it out of the log"
            ) from None


class _Value(enum.Enum):
    """What the unpacker found next in a MessagePack log."""

    MAP = "a whole map: an event or a batch, or so it seems"
    NO_MAP = "a whole value that is no map: damage, which the unpacker has read past"
    UNREADABLE = "bytes that start no value: damage, which the unpacker cannot read past"
    UNFINISHED = "a value whose end is not read yet"


class MsgpackRecordReader:
    """Cuts a MessagePack log's records out of the chunks it is read in, each as the bytes written.

    The unpacker only finds where each value ends (skip + tell); the bytes are cut from the chunks
    read, which is several times cheaper than unpacking and packing every record again. A value cut
    short at the end of the file is yielded as it is: it does not decode, so it is dead-lettered and
    counted like any other bad record instead of vanishing. So are bytes that start no value, or a
    value that is no map and so neither an event nor a batch (a damaged stretch of the file: zero
    padding, pasted text, each of whose bytes MessagePack reads as a small number): they are yielded
    as one record up to the next place where a whole event or batch starts, and reading goes on.

    A record cut short inside the log (a writer that died mid-record, and another that appended)
    reads on into the records after it: the value ends somewhere in a later record, and what is
    left of that one reads as damage, or the file ends first. So each record is held until the next
    one reads well: when damage or the end follows it, and it is no message that decodes, a whole
    event or batch starting inside it is where the next record really began. It is cut there, and
    the good records are read again instead of being dead-lettered with the broken one.
    """

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._pending = b""  # read, not yet yielded
        self._cut = 0  # the end of the last record read, in `_pending`
        self._fed_from = 0  # where in `_pending` the unpacker's first byte is
        self._at_end = False  # every chunk is read
        self._held: bytes | None = None  # the last record read, not yet yielded
        self._unpacker: Any = None

    def records(self) -> Iterator[bytes]:
        """Each record of the log, in order, as the bytes it was written as."""
        while True:  # once, and again from a record found inside a value the end of the file cut short
            first = next(self._chunks, b"")
            self._at_end = not first
            self._held = None
            self._unpack_afresh(first)
            yield from self._read_to_end_of_file()
            read_again = yield from self._at_end_of_file()
            if read_again is None:
                return
            # (In this loop: a file of many values each claiming more bytes than are left would
            # nest as deep as they are many.)
            self._chunks = iter([read_again])

    def _read_to_end_of_file(self) -> Iterator[bytes]:
        """Every whole value of the log, reading on until the file ends (a value it cut short is left)."""
        while True:
            yield from self._read_whole_values()
            self._let_go_of_cut()
            if self._at_end:
                return
            self._take(_read_on(self._chunks, len(self._pending)), fed=True)

    def _read_whole_values(self) -> Iterator[bytes]:
        """The records of the values whose end is read, each yielded once the next one reads well."""
        while True:
            value = self._next_value()
            if value is _Value.UNFINISHED:
                return
            if value is not _Value.MAP:
                yield from self._read_damage(unreadable=value is _Value.UNREADABLE)
                continue
            if self._held is not None:
                yield self._held
            self._hold_value()

    def _next_value(self) -> _Value:
        """What the unpacker reads next, read past when it is a whole value."""
        try:
            self._unpacker.skip()
        except msgpack.OutOfData:
            return _Value.UNFINISHED
        except (msgpack.FormatError, msgpack.StackError):
            return _Value.UNREADABLE
        return _Value.MAP if self._pending[self._cut] in _MAP_HEADERS else _Value.NO_MAP

    def _hold_value(self) -> None:
        """Hold the value just read as the next record, until the value after it reads well."""
        end = self._unpacker.tell() + self._fed_from
        self._held = self._pending[self._cut : end]
        self._cut = end

    def _read_damage(self, unreadable: bool) -> Iterator[bytes]:
        """The held record (cut where a record starts inside it, if it ran on into the damage), then the
        damage as one record."""
        self._read_past_damage()
        held = self._held
        if held is not None:
            # (A view, not a copy: this runs for every damaged stretch, and `_pending` holds up to the
            # largest message after it.)
            inner = _record_start_inside(held, memoryview(self._pending)[self._cut :])
            if inner is not None:
                yield held[:inner]
                self._resync_inside_held(held, inner)
                return
            yield held
            self._held = None
        yield from self._skip_damage(unreadable)

    def _read_past_damage(self) -> None:
        """Read what follows the damage up to the largest message, fed to the unpacker too."""
        # A whole record must be read to be found (the unpacker may go on from there).
        while not self._at_end and len(self._pending) - self._cut < MAX_MESSAGE_BYTES:
            self._take(next(self._chunks, b""), fed=True)

    def _resync_inside_held(self, held: bytes, inner: int) -> None:
        """The held record ran on into the next, which starts at `inner` in it: read from there again."""
        self._unpack_afresh(held[inner:] + self._pending[self._cut :])
        self._held = None

    def _skip_damage(self, unreadable: bool) -> Iterator[bytes]:
        """Yield the damage as one record, up to where the next event or batch starts, and go on there."""
        resume, searched_on = self._find_next_record()
        yield self._pending[self._cut : resume]
        if not unreadable and not searched_on and self._unpacker.tell() + self._fed_from == resume:
            # The damage was one whole value, no map, that the unpacker has read past (a newline
            # written after each record): it goes on from there, as it is. Made anew from what is
            # left, for each such value, reading took ten times as long.
            self._cut = resume
            if self._cut > _LOG_CHUNK_BYTES:  # (what is read is let go of now and then)
                self._let_go_of_cut()
            return
        self._unpack_afresh(self._pending[resume:])

    def _find_next_record(self) -> tuple[int, bool]:
        """Where the next event or batch after the damage starts (else the end of what is read), and
        whether more of the log had to be read to find it."""
        resume, look_from = _look_for_record(self._pending, self._cut + 1)
        # (The next record may lie beyond what is read. Not fed to the unpacker: it is made anew
        # from where the record is found.)
        searched_on = False
        while resume is None and not self._at_end:
            self._take(_read_on(self._chunks, len(self._pending)), fed=False)
            searched_on = True
            resume, look_from = _look_for_record(self._pending, look_from)
        return (len(self._pending) if resume is None else resume), searched_on

    def _at_end_of_file(self) -> Generator[bytes, None, bytes | None]:
        """Yield the held record and a value the end of the file cut short; return what is to be read
        again when a whole record starts inside either (None: the log is read)."""
        # A value cut short by the end of the file: the held record, or this one, may have run on
        # into it. Where a whole record starts inside, reading starts again there.
        pending, held = self._pending, self._held
        if not pending:
            if held is not None:
                yield held
            return None
        if held is not None:
            inner = _record_start_inside(held, pending)
            if inner is not None:
                yield held[:inner]
                return held[inner:] + pending
            yield held
        inner = _record_start_inside(pending, b"")
        if inner is None:
            yield pending
            return None
        yield pending[:inner]
        return pending[inner:]

    def _take(self, chunk: bytes, fed: bool) -> None:
        """Add a chunk read from the log (b"": the end) to what is pending, and to the unpacker when `fed`."""
        self._at_end = not chunk
        if fed:
            self._unpacker.feed(chunk)
        self._pending += chunk

    def _let_go_of_cut(self) -> None:
        """Let go of what is read up to the last record's end (yielded or held already)."""
        self._pending, self._fed_from, self._cut = self._pending[self._cut :], self._fed_from - self._cut, 0

    def _unpack_afresh(self, pending: bytes) -> None:
        """Read `pending` from its start with an unpacker made anew."""
        self._pending, self._cut, self._fed_from = pending, 0, 0
        self._unpacker = _unpacker()
        self._unpacker.feed(pending)


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
            unpacker.feed(view[start : start + window])
            try:
                value = unpacker.unpack()
            except msgpack.OutOfData:
                if start + window >= len(data):
                    undecided = min(undecided, start)
                    break  # runs past the end of what has been read: no whole record here, yet
                window *= 4
                continue
            except Exception:  # anything that does not decode is not where a record starts
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
    unpacker = _unpacker()
    unpacker.feed(record)
    try:
        unpacker.skip()
    except msgpack.OutOfData:
        return True
    except (msgpack.FormatError, msgpack.StackError):
        return False
    return False
