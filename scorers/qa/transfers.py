"""What the two transfer metrics share: whether a transfer was attempted, whether it connected, and
when it started and bridged.

Attempted: a `transfer` event with phase `started`, or an agent tool call (`tool.call` event or RTVI
function-call message) whose name contains "transfer" in any case; also a `bridged` one (a transfer
that connected was attempted, though its start was not sent). Connected: a `transfer` event with
phase `bridged`, or the call ended with `reason` "call_transfer".

For the wait, the attempt that connected is timed: from the first `started` after the last `failed`
(a failed transfer ends its attempt; a retry is a new one) to the first `bridged` at or after it in
event time. A call whose first transfer failed and whose retry bridged 5 s after its own start waited
5 s, not the minute since the first attempt.
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


@dataclass(slots=True)
class TransferLog:
    attempted: bool = False
    bridged: bool = False
    # The start of the attempt under way: set by its first `started`, cleared by a `failed`.
    attempt_started_ts_ms: int | None = None
    # The attempt that connected: its start and its bridge (the wait is the one between them).
    started_ts_ms: int | None = None
    bridged_ts_ms: int | None = None

    def observe(self, event: Event) -> None:
        if isinstance(event, Transfer):
            phase, ts_ms = event.data.phase, event.ts_ms
            if phase == "started":
                self.attempted = True
                if self.attempt_started_ts_ms is None:
                    self.attempt_started_ts_ms = ts_ms
            elif phase == "failed":
                self.attempt_started_ts_ms = None
            elif phase == "bridged":
                self.attempted = self.bridged = True
                start = self.attempt_started_ts_ms
                if self.bridged_ts_ms is None and start is not None and ts_ms >= start:
                    self.started_ts_ms, self.bridged_ts_ms = start, ts_ms
            return
        name = called_function_name(event)
        if name is not None and TRANSFER_TOOL_MARK in name.lower():
            self.attempted = True

    def connected(self, call: CallState) -> bool:
        return self.bridged or (call.ended is not None and call.ended.reason == TRANSFER_END_REASON)


class TransferMetric(QaMetric):
    """What the two transfer metrics share: one TransferLog per call, fed by the transfer event types."""

    handles = TRANSFER_EVENT_TYPES
    rtvi_messages = RTVI_FUNCTION_CALL_TYPES

    def start(self) -> TransferLog:
        return TransferLog()

    def update(self, acc: TransferLog, event: Event, call: CallState) -> None:
        acc.observe(event)
