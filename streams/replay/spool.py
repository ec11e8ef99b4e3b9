"""A replay job's outputs on disk: each line it would write, encoded, behind the key that places it
in the sequential order (`streams.replay.log_replay.OutputKey`), so that the jobs' spools merge into that order.

Format: per output a fixed header (record index, phase, position, kind, line length), then the line.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import BinaryIO

from models.results import CallResult
from models.wire import Rejected
from streams.replay.log_replay import OutputKey
from streams.replay.outputs import dead_letter_line

RESULT, DEAD_LETTER = 0, 1
_HEADER = struct.Struct("<QBIBI")
_BUFFER_BYTES = 1 << 20

SpooledLine = tuple[OutputKey, int, bytes]  # (key, RESULT or DEAD_LETTER, the encoded line)


class SpoolWriter:
    def __init__(self, path: str) -> None:
        self._out: BinaryIO = open(path, "wb", buffering=_BUFFER_BYTES)  # closed by close()

    def result(self, key: OutputKey, result: CallResult, line: bytes) -> None:
        self._write(key, RESULT, line)

    def dead_letter(self, key: OutputKey, rejected: Rejected, index: int) -> None:
        self._write(key, DEAD_LETTER, dead_letter_line(rejected, index))

    def _write(self, key: OutputKey, kind: int, line: bytes) -> None:
        index, phase, position = key
        self._out.write(_HEADER.pack(index, phase, position, kind, len(line)))
        self._out.write(line)

    def close(self) -> None:
        self._out.close()

    def __enter__(self) -> SpoolWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_spool(path: str) -> Iterator[SpooledLine]:
    with open(path, "rb", buffering=_BUFFER_BYTES) as handle:
        read = handle.read
        while header := read(_HEADER.size):
            index, phase, position, kind, length = _HEADER.unpack(header)
            yield (index, phase, position), kind, read(length)
