"""Naturalness (not implemented yet: always not applicable)."""

from __future__ import annotations

from models.call_state import CallState
from models.events import Event
from models.results import MetricResult
from scorers.qa.base import QaMetric


class Naturalness(QaMetric):
    name = "naturalness"
    label = "Naturalness"
    value_meaning = "Average words per agent turn"
    default_threshold = 60
    judge_kind = "llm"
    handles = frozenset()

    def start(self) -> None:
        return None

    def update(self, acc: None, event: Event, call: CallState) -> None:
        pass

    def finalize(self, acc: None, call: CallState) -> MetricResult:
        return self.not_applicable("not implemented yet")
