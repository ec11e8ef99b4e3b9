"""Files a command writes: complete or not at all, and never over what it reads.

An `AtomicOutput` is written under a temporary name beside its destination and moved into place only
when the command succeeds; a failure removes it and leaves the destination as it was (an earlier
complete file, or nothing). The file gets the mode a plain `open()` would give it (an existing file's
own mode), and a symbolic link is written through, not replaced. A destination that is not a regular
file (a pipe, `/dev/stdout`) is written directly: it cannot be replaced; `-` is standard output.
`refuse_clashes` stops a command before it starts when an output names one of its inputs, or two
outputs the same file.
"""

from __future__ import annotations

import os
import secrets
import signal
import stat
import sys
from typing import BinaryIO

STANDARD_OUTPUT = STANDARD_INPUT = "-"  # as an output, standard output; as an input, standard input


# What stops a command as Ctrl-C does: Ctrl-C itself, `kill`, and a closed terminal or SSH session.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, `timeout`, a supervisor) or SIGHUP (a closed terminal), raised where the command
    is, so that it ends as it does on Ctrl-C: its half-written outputs and temporary files removed."""


class AtomicOutput:
    def __init__(self, path: str) -> None:
        self.path = path
        self._temporary: str | None = None
        if path == STANDARD_OUTPUT:
            self.file: BinaryIO = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
            return
        # Asked of the path itself, not of the file realpath names: /dev/stdout on a pipe resolves to
        # "pipe:[…]", a name that exists nowhere, while opening /dev/stdout reaches the pipe.
        existing = _stat(path)
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            self.file = open(path, "wb")  # closed by commit() or discard()
            return
        target = os.path.realpath(path)  # through a symbolic link to the file it names
        self._target = target
        self._temporary = os.path.join(
            os.path.dirname(target), f".{os.path.basename(target)}.{secrets.token_hex(6)}.partial"
        )
        # Fails at once (a missing directory, no permission), before any work is done. Created with
        # mode 0o666 as open() creates files, so the umask applies; an existing file keeps its mode.
        try:
            handle = os.open(self._temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as exc:
            raise OSError(exc.errno, f"cannot write {path}: {exc.strerror}") from None
        if existing is not None:
            os.fchmod(handle, stat.S_IMODE(existing.st_mode))
        self.file = os.fdopen(handle, "wb")

    def __enter__(self) -> AtomicOutput:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        """Put the file in place when the block succeeded, else leave the destination as it was."""
        self.commit() if kind is None else self.discard()

    def commit(self) -> None:
        try:
            self.file.close()  # (writes out the last buffered bytes, which a full disk refuses here)
        except BaseException:
            self.discard()
            raise
        if self._temporary is not None:
            os.replace(self._temporary, self._target)

    def flush(self) -> None:
        """Write out what is buffered: a full disk fails here, before anything is put in place."""
        self.file.flush()

    def discard(self) -> None:
        try:
            self.file.close()
        except OSError:
            pass  # (flushing what is thrown away can fail as the write did, on a full disk)
        if self._temporary is not None:
            try:
                os.unlink(self._temporary)
            except FileNotFoundError:
                pass


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def refuse_clashes(inputs: dict[str, str | None], outputs: dict[str, str | None]) -> None:
    """ValueError when an output is one of the inputs, or the same file as another output.
    Keys are how the user named each path (`LOG`, `--out`, …)."""
    seen: dict[str, str] = {}
    for name, path in inputs.items():
        if path is not None and path != STANDARD_INPUT and os.path.exists(path):
            seen[os.path.realpath(path)] = name
    for name, path in outputs.items():
        if path is None:
            continue
        key = STANDARD_OUTPUT if path == STANDARD_OUTPUT else os.path.realpath(path)
        if key in seen:
            other = seen[key]
            kind = "the file read as" if other in inputs else "the same file as"
            raise ValueError(f"{name} {path} is {kind} {other}: choose another file")
        seen[key] = name
