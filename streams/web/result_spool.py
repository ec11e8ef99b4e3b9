"""Every result document a worker has read from the results topic, byte for byte, in one local file:
the call index (streams/web/call_index.py) keeps where each call's latest document lies and reads it
on demand, so that a call's lookup costs one read of a local file instead of a scan of the topic.

A record is its header (the position of the call's previous version, -1 for none; the document's
length) and the document as published. The previous positions chain a call's versions, newest
first, without the index keeping a list per call. The file is unlinked from the start (a temporary
file): it goes with the worker, which rebuilds it from the topic when it starts again.
"""

from __future__ import annotations

import os
import struct
import tempfile

HEADER = struct.Struct("<qI")  # previous version's position, document length
NO_PREVIOUS = -1


class ResultSpool:
    def __init__(self, directory: str | None = None) -> None:
        if directory:
            os.makedirs(directory, exist_ok=True)
        self._file = tempfile.TemporaryFile(prefix="callqa-results-", dir=directory)
        self._fd = self._file.fileno()
        self.size = 0

    def append(self, document: bytes, previous: int = NO_PREVIOUS) -> int:
        """Store a document; returns its position."""
        position = self.size
        os.pwrite(self._fd, HEADER.pack(previous, len(document)) + document, position)
        self.size += HEADER.size + len(document)
        return position

    def read(self, position: int) -> tuple[int, bytes]:
        """(the previous version's position, the document) of the record at `position`."""
        previous, length = HEADER.unpack(os.pread(self._fd, HEADER.size, position))
        return previous, os.pread(self._fd, length, position + HEADER.size)

    def previous(self, position: int) -> int:
        return HEADER.unpack(os.pread(self._fd, HEADER.size, position))[0]

    def chain(self, position: int) -> list[bytes]:
        """The documents of a call from the one at `position` back to its first version, oldest first."""
        documents = []
        while position != NO_PREVIOUS:
            position, document = self.read(position)
            documents.append(document)
        return documents[::-1]

    def close(self) -> None:
        self._file.close()
