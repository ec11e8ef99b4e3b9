"""Transfer wait time: milliseconds (event time) from the transfer's start to its bridge.

The attempt that connected is timed, in event time, from its first `started` event to its `bridged` one (see
`scorers.qa.transfers`). Score: 100 up to 10 s, falling linearly to 0 at 70 s. Not applicable when no
transfer was attempted, when it did not connect, when there is no bridge timestamp (it connected only
by the call ending with "call_transfer"), or when the bridged attempt's start was not sent.
"""

from __future__ import annotations

from models.call_state import CallState
from models.results import MetricResult
from scorers.qa.base import linear_falloff
from scorers.qa.transfers import NO_TRANSFER_ATTEMPTED, TransferLog, TransferMetric

TRANSFER_DID_NOT_CONNECT = "Transfer did not connect"
NO_BRIDGE_TIMESTAMP = "No bridge timestamp"
NO_START_TIMESTAMP = "No transfer start timestamp"
FULL_SCORE_UNTIL_MS = 10_000
ZERO_SCORE_AT_MS = 70_000


class TransferWaitTime(TransferMetric):
    name = "transfer_wait_time"
    label = "Transfer wait time"
    value_meaning = "Milliseconds"
    default_threshold = 50
    judge_kind = "computed"

    def finalize(self, acc: TransferLog, call: CallState) -> MetricResult:
        if not acc.attempted:
            return self.not_applicable(NO_TRANSFER_ATTEMPTED)
        if not acc.connected(call):
            return self.not_applicable(TRANSFER_DID_NOT_CONNECT)
        if not acc.started:
            return self.not_applicable(NO_START_TIMESTAMP if acc.bridged else NO_BRIDGE_TIMESTAMP)
        timed = acc.timed_attempt()
        if timed is None:  # (no bridge, or none after a start: nothing to time)
            return self.not_applicable(NO_BRIDGE_TIMESTAMP)
        started_ts_ms, bridged_ts_ms = timed
        wait_ms = bridged_ts_ms - started_ts_ms
        return self.scored(
            wait_ms,
            linear_falloff(wait_ms, FULL_SCORE_UNTIL_MS, ZERO_SCORE_AT_MS),
            started_ts_ms=started_ts_ms,
            bridged_ts_ms=bridged_ts_ms,
        )
