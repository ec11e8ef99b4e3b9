"""aiokafka's complaints about a broker that does not answer, once every so often instead of ten times
a second.

With its broker gone, aiokafka logs "Unable connect to node …", "Unable to update metadata …" and
"Got error produce response …" at every retry, 100 ms apart: `callqa send` wrote some 1,400 lines
in the 35 s before its own error, and a worker writes as many every half minute of an outage.
`RepeatsCollapsed` lets a message through the first time, then once every `every_s` while it keeps
coming, saying how many times it came in between; a message that changes (another node, another
error) is a new message.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

REPEAT_EVERY_S = 30.0
# Messages remembered at most; past that, those not seen for `every_s` are forgotten.
REMEMBERED = 1000


@dataclass
class _Seen:
    shown_at: float
    held_back: int = 0


@dataclass(eq=False)  # (a filter is itself: logging looks filters up by equality)
class RepeatsCollapsed(logging.Filter):
    # aiokafka logs from its own threads too (the consumer's, the producer's buffer): everything that
    # reads or changes `_seen` holds the lock. Without it, forgetting while another thread added a
    # message raised "dictionary changed size during iteration" inside aiokafka, which crashed its
    # producer buffer, at the debug level.
    every_s: float = REPEAT_EVERY_S
    clock: Callable[[], float] = time.monotonic
    _seen: dict[tuple[str, int, str], _Seen] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        super().__init__()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()  # (outside the lock: it formats the record's arguments)
        with self._lock:
            return self._let_through(record, message)

    def _let_through(self, record: logging.LogRecord, message: str) -> bool:
        key = (record.name, record.levelno, message)
        now = self.clock()
        seen = self._seen.get(key)
        if seen is not None and now - seen.shown_at < self.every_s:
            seen.held_back += 1
            return False
        if seen is not None and seen.held_back:
            record.msg, record.args = (
                (f"{message} (and {seen.held_back} times more in the last {now - seen.shown_at:.0f} s)"),
                (),
            )
        if seen is None and len(self._seen) >= REMEMBERED:
            self._forget_older_than(now - self.every_s)
        self._seen[key] = _Seen(now)
        return True

    def _forget_older_than(self, when: float) -> None:
        self._seen = {key: seen for key, seen in self._seen.items() if seen.shown_at >= when}


def collapse_aiokafka_repeats(every_s: float = REPEAT_EVERY_S) -> None:
    """Installs one `RepeatsCollapsed` on every aiokafka logger (a logger's filters see only its own
    records, not its children's, so each gets it)."""
    for module in ("aiokafka", "aiokafka.admin"):  # (their modules' loggers exist once they are imported)
        importlib.import_module(module)

    repeats = RepeatsCollapsed(every_s)
    for name in list(logging.Logger.manager.loggerDict):
        if name == "aiokafka" or name.startswith("aiokafka."):
            logger = logging.getLogger(name)
            if not any(isinstance(existing, RepeatsCollapsed) for existing in logger.filters):
                logger.addFilter(repeats)
