"""Word error rate (not implemented yet: always not applicable)."""

from __future__ import annotations

from models.call_state import CallState
from models.events import Event
from models.results import MetricResult
from scorers.qa.base import QaMetric


class WordErrorRate(QaMetric):
    name = "wer"
    label = "Word error rate"
    value_meaning = "WER (0 to 1 or more)"
    default_threshold = 80
    judge_kind = "computed"
    handles = frozenset()

    def start(self) -> None:
        return None

    def update(self, acc: None, event: Event, call: CallState) -> None:
        pass

    def finalize(self, acc: None, call: CallState) -> MetricResult:
        return self.not_applicable("not implemented yet")
