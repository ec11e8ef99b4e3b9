"""The interface every scorer shares: fold events into an accumulator.

A scorer is configuration only (no state of its own); the per-call accumulator it creates in `start()`
lives in the call's state. `update()` runs once per event of a type listed in `handles`, so that a
call's result never needs its history re-read. A signal scorer's accumulator is read as it is by the
evaluation document and the QA metrics; a QA metric (scorers/qa/base.py) also finalizes its own into
a metric result, which may run several times on the same accumulator (a rescore publishes a new
version), so finalizing must not change it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from models.call_state import CallState


class Scorer(ABC):
    name: ClassVar[str]
    handles: ClassVar[frozenset[str]]
    # For a scorer that handles "rtvi": the RTVI message types its update() reads, so the fold skips
    # it for every other message (most RTVI traffic is metrics and speaking events). None: all of them.
    rtvi_messages: ClassVar[frozenset[str] | None] = None
    # Whether the accumulator outlives a discarded attempt (`attempt.discarded` starts the call's
    # scoring over): only what is about all attempts, such as the count of retries, does.
    spans_attempts: ClassVar[bool] = False

    @abstractmethod
    def start(self) -> Any:
        """A fresh accumulator for a new call."""

    @abstractmethod
    def update(self, acc: Any, event: Any, call: CallState) -> None:  # each scorer takes the events it handles
        """Fold one event (of a type in `handles`) into `acc`. `call` already reflects the event."""
