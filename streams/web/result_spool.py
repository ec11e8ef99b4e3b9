"""Every result document a worker has read from the results topic, byte for byte, in local files: the
call index (streams/web/call_index.py) keeps where each call's latest document lies and reads it on
demand, so that a call's lookup costs one read of a local file instead of a scan of the topic.

A record is its header (the position of the call's previous version, -1 for none; the document's
length) and the document as published. The previous positions chain a call's versions, newest
first, without the index keeping a list per call.

The records go into segment files of SEGMENT_BYTES. The index holds each record of the calls it keeps
(`hold`) and lets go of them with the call (`release`); a segment none of whose records is held any
more is deleted, so that a worker up for months keeps on disk the calls of its window, not of its life.
The files are unlinked from the start (temporary files): they go with the worker, which rebuilds them
from the topic when it starts again.
"""

from __future__ import annotations

import os
import struct
import tempfile

HEADER = struct.Struct("<qI")  # previous version's position, document length
NO_PREVIOUS = -1
SEGMENT_BYTES = 64 * 1024 * 1024
OFFSET_BITS = 40  # a position is segment << OFFSET_BITS | offset in the segment


class ResultSpool:
    def __init__(self, directory: str | None = None, segment_bytes: int = SEGMENT_BYTES) -> None:
        if directory:
            os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self.segment_bytes = segment_bytes
        self._files: dict[int, object] = {}  # segment -> its open temporary file
        self._fds: dict[int, int] = {}
        self._held: dict[int, int] = {}  # segment -> records held
        self._segment = -1
        self._end = 0  # the write offset in the current segment
        self.size = 0  # bytes in the segments kept
        self._open_segment()

    def _open_segment(self) -> None:
        self._segment += 1
        handle = tempfile.TemporaryFile(prefix="callqa-results-", dir=self.directory)
        self._files[self._segment] = handle
        self._fds[self._segment] = handle.fileno()
        self._held[self._segment] = 0
        self._end = 0

    def append(self, document: bytes, previous: int = NO_PREVIOUS) -> int:
        """Store a document (held: `release` it when it is no longer needed); returns its position."""
        record = HEADER.pack(previous, len(document)) + document
        if self._end and self._end + len(record) > self.segment_bytes:
            self._open_segment()
        position = self._segment << OFFSET_BITS | self._end
        os.pwrite(self._fds[self._segment], record, self._end)
        self._end += len(record)
        self.size += len(record)
        self._held[self._segment] += 1
        return position

    def release(self, position: int) -> None:
        """The record at `position` is no longer needed; its segment goes once none of its records is."""
        segment = position >> OFFSET_BITS
        if segment not in self._held:
            return
        self._held[segment] -= 1
        if self._held[segment] <= 0 and segment != self._segment:
            del self._held[segment], self._fds[segment]
            handle = self._files.pop(segment)
            self.size -= os.fstat(handle.fileno()).st_size  # type: ignore[attr-defined]
            handle.close()  # type: ignore[attr-defined]

    def read(self, position: int) -> tuple[int, bytes] | None:
        """(the previous version's position, the document) of the record at `position` (None: let go)."""
        fd = self._fds.get(position >> OFFSET_BITS)
        if fd is None:
            return None
        offset = position & ((1 << OFFSET_BITS) - 1)
        previous, length = HEADER.unpack(os.pread(fd, HEADER.size, offset))
        return previous, os.pread(fd, length, offset + HEADER.size)

    def previous(self, position: int) -> int:
        """The position of the call's version before the one at `position` (-1: none, or let go)."""
        fd = self._fds.get(position >> OFFSET_BITS)
        if fd is None:
            return NO_PREVIOUS
        return HEADER.unpack(os.pread(fd, HEADER.size, position & ((1 << OFFSET_BITS) - 1)))[0]

    def chain(self, position: int) -> list[bytes]:
        """The documents of a call from the one at `position` back to its first version, oldest first."""
        documents = []
        while position != NO_PREVIOUS:
            record = self.read(position)
            if record is None:
                break
            position, document = record
            documents.append(document)
        return documents[::-1]

    def positions(self, position: int) -> list[int]:
        """The positions of a call's records, from `position` back to its first version."""
        found = []
        while position != NO_PREVIOUS and (position >> OFFSET_BITS) in self._fds:
            found.append(position)
            position = self.previous(position)
        return found

    def segments(self) -> int:
        return len(self._files)

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()  # type: ignore[attr-defined]
        self._files.clear()
        self._fds.clear()
