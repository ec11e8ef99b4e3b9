"""Transfer success: whether an attempted transfer connected (see `scorers.qa.transfers` for what
counts as attempted and as connected). Value 1 or 0; score 100 or 0."""

from __future__ import annotations

from models.call_state import CallState
from models.results import MetricResult
from scorers.qa.transfers import NO_TRANSFER_ATTEMPTED, TransferLog, TransferMetric


class TransferSuccess(TransferMetric):
    name = "transfer_success"
    label = "Transfer success"
    value_meaning = "1 or 0"
    default_threshold = 100
    judge_kind = "computed"

    def finalize(self, acc: TransferLog, call: CallState) -> MetricResult:
        if not acc.attempted:
            return self.not_applicable(NO_TRANSFER_ATTEMPTED)
        connected = acc.connected(call)
        return self.scored(
            1 if connected else 0,
            100.0 if connected else 0.0,
            bridged=acc.bridged,
            end_reason=call.ended.reason if call.ended is not None else None,
        )
