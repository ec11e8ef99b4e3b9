"""Cohort verdicts for a call (placeholder until cohorts land: no cohort, no verdict)."""

from __future__ import annotations

from typing import Any

from models.call_state import CallState
from models.results import CohortVerdict, MetricResult


class CohortBook:
    def verdicts(self, call: CallState, metrics: list[MetricResult], evaluation: dict[str, Any]) -> list[CohortVerdict]:
        return []
