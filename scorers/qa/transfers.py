"""What the two transfer metrics share: whether a transfer was attempted, whether it connected, and
when it started and bridged.

Attempted: a `transfer` event with phase `started`, or an agent tool call (`tool.call` event or RTVI
function-call message) whose name contains "transfer" in any case; also a `bridged` one (a transfer
that connected was attempted, though its start was not sent). Connected: a `transfer` event with
phase `bridged`, or the call ended with `reason` "call_transfer".

For the wait, the attempt that connected is timed, in event time whatever order the events came in:
the first `bridged` that has a `started` at or before it with no `failed` between them, from the
earliest such `started` (a failed transfer ends its attempt; a retry is a new one). A call whose
first transfer failed and whose retry bridged 5 s after its own start waited 5 s, not the minute
since the first attempt. A call keeps the times of its first `MAX_TRANSFER_EVENTS` transfer events
of each phase.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.call_state import CallState
from models.events import Event, Transfer
from scorers.qa.base import QaMetric
from scorers.qa.tool_calls import RTVI_FUNCTION_CALL_TYPES, called_function_name

NO_TRANSFER_ATTEMPTED = "No transfer attempted"
TRANSFER_TOOL_MARK = "transfer"
TRANSFER_END_REASON = "call_transfer"
TRANSFER_EVENT_TYPES = frozenset({"transfer", "tool.call", "rtvi"})
MAX_TRANSFER_EVENTS = 100


@dataclass(slots=True)
class TransferLog:
    attempted: bool = False
    # Event times of the `transfer` events, by phase (the first MAX_TRANSFER_EVENTS of each). Made at
    # the first one: most calls have none, and every call holds a log for each transfer metric.
    times: dict[str, list[int]] | None = None

    @property
    def started(self) -> list[int]:
        return self._phase("started")

    @property
    def bridged(self) -> bool:
        return bool(self._phase("bridged"))

    def _phase(self, phase: str) -> list[int]:
        return self.times.get(phase, []) if self.times is not None else []

    def observe(self, event: Event) -> None:
        if isinstance(event, Transfer):
            phase = event.data.phase
            if phase != "failed":
                self.attempted = True  # (a bridge too: a transfer that connected was attempted)
            if self.times is None:
                self.times = {}
            times = self.times.setdefault(phase, [])
            if len(times) < MAX_TRANSFER_EVENTS:
                times.append(event.ts_ms)
            return
        name = called_function_name(event)
        if name is not None and TRANSFER_TOOL_MARK in name.lower():
            self.attempted = True

    def connected(self, call: CallState) -> bool:
        return self.bridged or (call.ended is not None and call.ended.reason == TRANSFER_END_REASON)

    def timed_attempt(self) -> tuple[int, int] | None:
        """(start, bridge) of the attempt that connected, in event time; None when no bridge has a
        start before it."""
        failed, started = self._phase("failed"), self.started
        for bridge in sorted(self._phase("bridged")):
            last_failure = max((f for f in failed if f <= bridge), default=None)
            starts = [s for s in started if s <= bridge and (last_failure is None or s > last_failure)]
            if starts:
                return min(starts), bridge
        return None


class TransferMetric(QaMetric):
    """What the two transfer metrics share: one TransferLog per call, fed by the transfer event types."""

    handles = TRANSFER_EVENT_TYPES
    rtvi_messages = RTVI_FUNCTION_CALL_TYPES

    def start(self) -> TransferLog:
        return TransferLog()

    def update(self, acc: TransferLog, event: Event, call: CallState) -> None:
        acc.observe(event)
