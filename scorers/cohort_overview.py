"""The cohort overview: per cohort and per metric, how the cohort's calls scored.

Kept up to date from published results, one result at a time. A call counts once, with its newest
version: a rescore (version + 1) takes back the call's earlier contribution and adds the new one, so
each call's contribution is kept until it is replaced. Sums are exact fractions, so that adding and
taking back leaves no rounding residue and the overview equals `CohortOverview.recompute()` over the
same calls' newest results.

Per cohort: calls, the average weighted score and the verdict pass rate (over calls with a weighted
score), and the calls with no conversation (the agent never spoke: `no_conversation` in the result),
with their share of all the cohort's calls. Per metric of the cohort: the number of calls where it
applied, the average score, the average value and the pass rate, all over those calls, with `passed`
judged at the cohort's threshold as the result's cohort verdict recorded it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import msgspec

from models.cohorts import is_number
from models.results import CallResult, CohortVerdict
from scorers.qa.base import round_score
from scorers.registry import qa_metric_names


@dataclass(slots=True, frozen=True)
class MetricContribution:
    score: float | None  # None: the metric did not apply to the call
    value: float | int | None
    passed: bool | None


@dataclass(slots=True, frozen=True)
class CohortContribution:
    weighted_score: float | None
    passed: bool | None
    metrics: dict[str, MetricContribution]
    no_conversation: bool = False


@dataclass(slots=True)
class _CallEntry:
    version: int
    cohorts: dict[str, CohortContribution]


@dataclass(slots=True)
class MetricTotals:
    listed: int = 0  # calls whose verdict lists the metric, applied or not
    applied: int = 0
    score_sum: Fraction = Fraction(0)
    valued: int = 0  # applied calls with a numeric value
    value_sum: Fraction = Fraction(0)
    passed: int = 0

    def add(self, c: MetricContribution, sign: int) -> None:
        self.listed += sign
        if c.score is None:
            return
        self.applied += sign
        self.score_sum += sign * Fraction(c.score)
        if is_number(c.value):
            self.valued += sign
            self.value_sum += sign * Fraction(c.value)
        if c.passed:
            self.passed += sign


@dataclass(slots=True)
class CohortTotals:
    calls: int = 0
    scored: int = 0  # calls with a weighted score (and so a verdict)
    weighted_sum: Fraction = Fraction(0)
    passed: int = 0
    no_conversation: int = 0  # calls whose agent never spoke (scorers/conversation.py)
    metrics: dict[str, MetricTotals] = field(default_factory=dict)

    def add(self, c: CohortContribution, sign: int) -> None:
        self.calls += sign
        if c.no_conversation:
            self.no_conversation += sign
        if c.weighted_score is not None:
            self.scored += sign
            self.weighted_sum += sign * Fraction(c.weighted_score)
            if c.passed:
                self.passed += sign
        for name, metric in c.metrics.items():
            totals = self.metrics.setdefault(name, MetricTotals())
            totals.add(metric, sign)
            if totals.listed == 0:
                del self.metrics[name]


def contribution(verdict: CohortVerdict, result: CallResult) -> CohortContribution:
    values = {m.metric: m.value for m in result.metrics}
    metrics = {
        name: MetricContribution(detail.get("score"), values.get(name), detail.get("passed"))
        for name, detail in verdict.details.get("metrics", {}).items()
    }
    return CohortContribution(verdict.weighted_score, verdict.passed, metrics, result.no_conversation)


class CohortOverview:
    def __init__(self, metric_order: Sequence[str] | None = None) -> None:
        # Metrics are listed in the registry's order (the order of a result's `metrics`).
        order = metric_order if metric_order is not None else qa_metric_names()
        self._order = {name: i for i, name in enumerate(order)}
        self._calls: dict[str, _CallEntry] = {}
        self._totals: dict[str, CohortTotals] = {}

    @classmethod
    def recompute(
        cls, results: Iterable[CallResult | dict[str, Any]], metric_order: Sequence[str] | None = None
    ) -> CohortOverview:
        """A fresh overview from stored results: each call's newest version (the last of equal ones),
        counted once."""
        newest: dict[str, CallResult] = {}
        for result in map(_as_result, results):
            kept = newest.get(result.call_id)
            if kept is None or result.version >= kept.version:
                newest[result.call_id] = result
        overview = cls(metric_order)
        for result in newest.values():
            overview.add(result)
        return overview

    def add(self, result: CallResult | dict[str, Any]) -> bool:
        """Count a published result; a newer version of a call replaces its earlier contribution, and so
        does the same version published again (the same result, or, published again after a crash
        with a cohort changed since, the verdicts of the cohorts in force: the later copy stands, as
        in the run summary and the export). Returns False (and changes nothing) for an older version."""
        result = _as_result(result)
        entry = self._calls.get(result.call_id)
        if entry is not None:
            if result.version < entry.version:
                return False
            self._apply(entry.cohorts, -1)
        cohorts = {v.cohort_id: contribution(v, result) for v in result.cohorts}
        self._calls[result.call_id] = _CallEntry(result.version, cohorts)
        self._apply(cohorts, +1)
        return True

    def remove(self, call_id: str) -> None:
        """Stop counting a call (it left the window of the results counted)."""
        entry = self._calls.pop(call_id, None)
        if entry is not None:
            self._apply(entry.cohorts, -1)

    def version_of(self, call_id: str) -> int | None:
        entry = self._calls.get(call_id)
        return entry.version if entry is not None else None

    def cohort_ids(self) -> list[str]:
        return sorted(self._totals)

    def overview(self, cohort_id: str) -> dict[str, Any]:
        totals = self._totals.get(cohort_id, CohortTotals())
        names = sorted(totals.metrics, key=lambda name: (self._order.get(name, len(self._order)), name))
        return {
            "cohort_id": cohort_id,
            "calls": totals.calls,
            "scored_calls": totals.scored,
            "average_weighted_score": _average_score(totals.weighted_sum, totals.scored),
            "passed_calls": totals.passed,
            "pass_rate": _rate(totals.passed, totals.scored),
            # Dead calls, apart: most of them have no weighted score, so the pass rate leaves them out.
            "no_conversation_calls": totals.no_conversation,
            "no_conversation_rate": _rate(totals.no_conversation, totals.calls),
            "metrics": [_metric_overview(name, totals.metrics[name]) for name in names],
        }

    def overviews(self) -> list[dict[str, Any]]:
        return [self.overview(cohort_id) for cohort_id in self.cohort_ids()]

    def _apply(self, cohorts: dict[str, CohortContribution], sign: int) -> None:
        for cohort_id, c in cohorts.items():
            totals = self._totals.setdefault(cohort_id, CohortTotals())
            totals.add(c, sign)
            if totals.calls == 0:
                del self._totals[cohort_id]


def _metric_overview(name: str, t: MetricTotals) -> dict[str, Any]:
    return {
        "metric": name,
        "calls": t.applied,
        "average_score": _average_score(t.score_sum, t.applied),
        "average_value": float(t.value_sum / t.valued) if t.valued else None,
        "passed_calls": t.passed,
        "pass_rate": _rate(t.passed, t.applied),
    }


def _average_score(total: Fraction, n: int) -> float | None:
    return round_score(float(total / n)) if n else None


def _rate(passed: int, n: int) -> float | None:
    return passed / n if n else None


def _as_result(result: CallResult | dict[str, Any]) -> CallResult:
    return result if isinstance(result, CallResult) else msgspec.convert(result, CallResult)
