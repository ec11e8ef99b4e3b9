"""What the two transfer metrics share: whether a transfer was attempted, whether it connected, and
when it started and bridged.

Attempted: a `transfer` event with phase `started`, or an agent tool call (`tool.call` event or RTVI
function-call message) whose name contains "transfer" in any case. Connected: a `transfer` event with
phase `bridged`, or the call ended with `reason` "call_transfer". For the wait, the first `started`
event and the first `bridged` event that arrives after it at or after its event time are paired.
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
    started_ts_ms: int | None = None
    bridged_ts_ms: int | None = None

    def observe(self, event: Event) -> None:
        if isinstance(event, Transfer):
            if event.data.phase == "started":
                self.attempted = True
                if self.started_ts_ms is None:
                    self.started_ts_ms = event.ts_ms
            elif event.data.phase == "bridged":
                self.bridged = True
                if self.started_ts_ms is not None and self.bridged_ts_ms is None and event.ts_ms >= self.started_ts_ms:
                    self.bridged_ts_ms = event.ts_ms
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
