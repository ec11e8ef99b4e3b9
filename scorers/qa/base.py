"""What the eleven QA metric judges share: the result shape, rounding and the not-applicable form.

Each metric is one module with one `QaMetric` subclass: it folds events into its accumulator (see
`scorers.base.Scorer`) and `finalize()` turns the accumulator into the seed's shape
`{metric, value, score, passed, details}` with the metric's default threshold. Cohorts re-judge
`passed` against their own thresholds from the same `score`.
"""

from __future__ import annotations

from abc import abstractmethod
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, ClassVar, Literal

from models.call_state import CallState
from models.results import MetricResult
from scorers.base import Scorer

JudgeKind = Literal["llm", "computed"]
# What `details.judge` says when no LLM answered, computed metrics included: a result's judge is
# "llm" or "heuristic" (the metric's kind, LLM or computed, is in the catalog).
HEURISTIC = "heuristic"


def round_score(score: float) -> float:
    """Scores are rounded to one decimal (half away from zero, so 92.25 → 92.3 as people expect)."""
    score = float(score)
    if score.is_integer():  # most scores (100, 70, 0): nothing to round, skip the decimal arithmetic
        return score
    return float(Decimal(repr(score)).quantize(_ONE_DECIMAL, rounding=ROUND_HALF_UP))


_ONE_DECIMAL = Decimal("0.1")


def clamp(value: float, low: float = 0.0, high: float = 100.0) -> float:
    if value != value:  # NaN: no figure to score, not a perfect one (max/min would let it through as `high`)
        return low
    return max(low, min(high, value))


def linear_falloff(x: float, full_until: float, zero_at: float) -> float:
    """100 up to `full_until`, falling linearly to 0 at `zero_at` and beyond."""
    if x <= full_until:
        return 100.0
    if x >= zero_at:
        return 0.0
    return 100.0 * (zero_at - x) / (zero_at - full_until)


class QaMetric(Scorer):
    name: ClassVar[str]
    label: ClassVar[str]  # the dashboard label
    value_meaning: ClassVar[str]
    default_threshold: ClassVar[float]
    judge_kind: ClassVar[JudgeKind]

    @abstractmethod
    def finalize(self, acc: Any, call: CallState) -> MetricResult:
        """The metric's heuristic (or computed) result for the call."""

    # -- helpers for subclasses -------------------------------------------------------------------

    def scored(self, value: float | int, score: float, **details: Any) -> MetricResult:
        score = round_score(clamp(score))
        return MetricResult(
            metric=self.name,
            value=value,
            score=score,
            passed=score >= self.default_threshold,
            details={"threshold": self.default_threshold, "judge": HEURISTIC, **details},
        )

    def not_applicable(self, reason: str, **details: Any) -> MetricResult:
        return MetricResult(
            metric=self.name,
            value=None,
            score=None,
            passed=None,
            details={"threshold": self.default_threshold, "judge": HEURISTIC, "reason": reason, **details},
        )
