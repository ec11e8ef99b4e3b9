"""Files a command writes: complete or not at all, and never over what it reads.

An `AtomicOutput` is written under a temporary name beside its destination and moved into place only
when the command succeeds; a failure removes it and leaves the destination as it was (an earlier
complete file, or nothing). `refuse_clashes` stops a command before it starts when an output names
one of its inputs, or two outputs the same file.
"""

from __future__ import annotations

import os
import tempfile
from typing import BinaryIO


class AtomicOutput:
    def __init__(self, path: str) -> None:
        self.path = path
        directory = os.path.dirname(os.path.abspath(path))
        # Fails at once (a missing directory, no permission), before any work is done.
        try:
            handle, self._temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".partial", dir=directory)
        except OSError as exc:
            raise OSError(exc.errno, f"cannot write {path}: {exc.strerror}") from None
        self.file: BinaryIO = os.fdopen(handle, "wb")

    def commit(self) -> None:
        self.file.close()
        os.replace(self._temporary, self.path)

    def discard(self) -> None:
        self.file.close()
        try:
            os.unlink(self._temporary)
        except FileNotFoundError:
            pass


def refuse_clashes(inputs: dict[str, str | None], outputs: dict[str, str | None]) -> None:
    """ValueError when an output is one of the inputs, or the same file as another output.
    Keys are how the user named each path (`LOG`, `--out`, …)."""
    seen: dict[str, str] = {}
    for name, path in inputs.items():
        if path is not None and os.path.exists(path):
            seen[os.path.realpath(path)] = name
    for name, path in outputs.items():
        if path is None:
            continue
        key = os.path.realpath(path)
        if key in seen:
            other = seen[key]
            kind = "the file read as" if other in inputs else "the same file as"
            raise ValueError(f"{name} {path} is {kind} {other}: choose another file")
        seen[key] = name
