"""Overlapping speech (not implemented yet: always not applicable)."""

from __future__ import annotations

from models.call_state import CallState
from models.events import Event
from models.results import MetricResult
from scorers.qa.base import QaMetric


class OverlappingSpeech(QaMetric):
    name = "overlapping_speech"
    label = "Overlapping speech"
    value_meaning = "Number of overlaps"
    default_threshold = 70
    judge_kind = "computed"
    handles = frozenset()

    def start(self) -> None:
        return None

    def update(self, acc: None, event: Event, call: CallState) -> None:
        pass

    def finalize(self, acc: None, call: CallState) -> MetricResult:
        return self.not_applicable("not implemented yet")
