"""What the commands share: settings from the command line, a log named on it read as a file, and the
argument types and options several commands take."""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from models.wire import MSGPACK_LOG
from streams.config import Settings, load_settings
from streams.files.event_log import log_format, refuse_unreadable
from streams.files.output_files import STANDARD_INPUT

LOG_HELP = (
    "a JSON Lines or MessagePack log (MessagePack when named *.msgpack or when it starts with a MessagePack "
    "map); - reads standard input"
)


def settings_from(args: argparse.Namespace) -> Settings:
    settings = load_settings()
    return settings.with_overrides(
        broker=getattr(args, "broker", None),
        partitions=getattr(args, "partitions", None),
        topic_prefix=getattr(args, "topic_prefix", None),
        web_port=getattr(args, "web_port", None),
    )


def count_records(path: str) -> int | None:
    if log_format(path) == MSGPACK_LOG:
        return None
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


@contextmanager
def log_as_file(path: str) -> Iterator[str]:
    """The log LOG names, as a regular file. A stream (`-` for standard input, a pipe, a process
    substitution such as `<(zcat log.jsonl.gz)`) can be read only once, while a replay reads its log
    several times (to count its records, to tell its format, once in each job): it is copied to a
    temporary file first, removed at the end."""
    if path != STANDARD_INPUT and not is_stream(path):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="callqa-log-") as directory:
        copy = os.path.join(directory, "log")  # no suffix: its format is told by its first byte
        with open(copy, "wb") as out:
            if path == STANDARD_INPUT:
                shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
            else:
                with open(path, "rb") as source:
                    shutil.copyfileobj(source, out, 1 << 20)
        with open(copy, "rb") as handle:
            first = handle.read(2)
        # (Said here: the copy's name would mean nothing.)
        refuse_unreadable(first, "standard input" if path == STANDARD_INPUT else path, piped=True)
        yield copy


def is_stream(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # (reading it fails with the usual message)
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:  # (argparse would name this function in its message)
        raise argparse.ArgumentTypeError(f"must be a whole number, 0 or more, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def port_number(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 1 <= port <= 65_535:
        raise argparse.ArgumentTypeError(f"a port is 1 to 65535, got {port}")
    return port


def kafka_options(p: argparse.ArgumentParser, broker: bool = True, partitions: bool = True) -> None:
    """The options of every command that talks to Kafka."""
    if broker:  # (`up` runs its own)
        p.add_argument("--broker", help="broker URL (kafka://host:9092, or tansu://host:port for the embedded one)")
    if partitions:  # (`record` reads the topic's own)
        p.add_argument("--partitions", type=int, help="partitions of the events topic (default 4)")
    p.add_argument("--topic-prefix", help="topic name prefix (default callqa)")
