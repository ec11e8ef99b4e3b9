"""Where `callqa replay` writes: results and dead letters as JSON Lines, and the alerts the results raise.

A replay in one process writes each output the moment the engine produces it; a replay in several
writes the lines its jobs encoded, merged back into that same order (streams/replay/parallel.py). Both
encode and write through here, so both write the same bytes.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import BinaryIO

import msgspec

from models.wire import Rejected
from streams.files.output_files import AtomicOutput
from streams.replay.alerts import AlertsFile

_json = msgspec.json.Encoder()


def dead_letter_line(rejected: Rejected, index: int) -> bytes:
    """A dead letter names the record (its position in the log) it came from."""
    return _json.encode(
        {"reason": rejected.reason, "record": index, "event_id": rejected.event_id, "call_id": rejected.call_id}
    )


@dataclass
class ReplayFiles:
    """The replay's outputs, each complete or not written at all: `close()` puts them in place,
    `discard()` (after a failure) leaves whatever was there before; as a context manager, the one
    or the other as the block ends."""

    out_file: AtomicOutput
    dead_file: AtomicOutput | None = None
    alerts: AlertsFile | None = None

    @classmethod
    def open(cls, out_path: str, dead_path: str | None = None, alerts: AlertsFile | None = None) -> ReplayFiles:
        """The files of a replay; they own `alerts`, which is discarded too when a file cannot be opened."""
        with ExitStack() as undo:  # what is open so far goes again if a later file cannot be opened
            if alerts is not None:
                undo.callback(alerts.discard)
            out = AtomicOutput(out_path)
            undo.callback(out.discard)
            dead = AtomicOutput(dead_path) if dead_path else None
            undo.pop_all()
        return cls(out, dead, alerts)

    def __enter__(self) -> ReplayFiles:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self._finish(keep=kind is None)

    @property
    def out(self) -> BinaryIO:
        return self.out_file.file

    @property
    def dead(self) -> BinaryIO | None:
        return self.dead_file.file if self.dead_file is not None else None

    @property
    def wants_dead_letters(self) -> bool:
        return self.dead is not None

    def dead_letter(self, rejected: Rejected, index: int) -> None:
        if self.dead is not None:
            self.write_dead_letter(dead_letter_line(rejected, index))

    def write_result(self, line: bytes) -> None:
        self.out.write(line)
        self.out.write(b"\n")
        if self.alerts is not None:
            # The alert engine reads a result's JSON as the live worker reads it off the results
            # topic: both replay paths hand it the very line they write.
            self.alerts.observe(line)

    def write_dead_letter(self, line: bytes) -> None:
        if self.dead is not None:
            self.dead.write(line)
            self.dead.write(b"\n")

    def close(self) -> None:
        self._finish(keep=True)

    def discard(self) -> None:
        self._finish(keep=False)

    def _finish(self, keep: bool) -> None:
        outputs = [output for output in (self.out_file, self.dead_file) if output is not None]
        if self.alerts is not None:
            outputs.append(self.alerts.output)
        if not keep:
            for output in outputs:
                output.discard()
            return
        try:  # all written out before any is put in place: the files go together or not at all
            if self.alerts is not None:
                self.alerts.end_of_input()
            for output in outputs:
                output.flush()
        except BaseException:
            for output in outputs:
                output.discard()
            raise
        for output in outputs:
            output.commit()
