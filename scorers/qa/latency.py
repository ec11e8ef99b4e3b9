"""Latency (not implemented yet: always not applicable)."""

from __future__ import annotations

from models.call_state import CallState
from models.events import Event
from models.results import MetricResult
from scorers.qa.base import QaMetric


class LatencyMetric(QaMetric):
    name = "latency"
    label = "Latency"
    value_meaning = "Median end-to-end latency in ms"
    default_threshold = 60
    judge_kind = "computed"
    handles = frozenset()

    def start(self) -> None:
        return None

    def update(self, acc: None, event: Event, call: CallState) -> None:
        pass

    def finalize(self, acc: None, call: CallState) -> MetricResult:
        return self.not_applicable("not implemented yet")
