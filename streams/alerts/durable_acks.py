"""Acknowledge an alert-input message only once what it changed is in the changelog.

The alert engine keeps its windows in a Faust table. A table write only queues its changelog record,
and a commit flushes that queue for at most 0.1 s before it commits anyway: a worker killed then had
committed messages whose changes to the windows never reached the changelog, and its successor
restored windows without them (an episode could be lost, or raised again). So, as the call journal
does (streams/worker/message_flow.py), each message is acknowledged once every changelog record it queued
and every alert it published are delivered — in the order the messages came, because Faust commits
the first unbroken run of acknowledged offsets. A write that fails stops the acknowledgements: the
messages come again after a restart.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("callqa.alerts")


class DurableAcks:
    """Messages waiting for their writes, oldest first; `ack` acknowledges one message."""

    def __init__(self, ack: Callable[[Any], None]) -> None:
        self._ack = ack
        self._waiting: deque[tuple[list[Any], Any]] = deque()
        self.failed = False

    def add(self, message: Any, writes: list[Any]) -> None:
        """Acknowledge `message` once all `writes` (futures) are done, after the messages before it."""
        self._waiting.append((list(writes), message))
        for write in writes:
            if not write.done():
                write.add_done_callback(lambda _: self._drain())
        self._drain()

    def _drain(self) -> None:
        while self._waiting and not self.failed:
            writes, message = self._waiting[0]
            if not all(write.done() for write in writes):
                return
            broken = next((write for write in writes if write.cancelled() or write.exception() is not None), None)
            if broken is not None:
                self.failed = True
                logger.error(
                    "alerts: a write of the alert engine's state failed (%s): its messages are not "
                    "acknowledged, and come again after a restart",
                    "cancelled" if broken.cancelled() else broken.exception(),
                )
                return
            self._waiting.popleft()
            self._ack(message)

    def pending(self) -> int:
        return len(self._waiting)
