"""Latency: the median (p50) of the call's end-to-end handoff latency samples.

The samples are the ones `scorers.handoff_latency` keeps (one source per call, one sample per
handoff); this metric has no accumulator of its own. Percentiles are nearest-rank without
interpolation (`scorers.stats`). Score: 100 at 1000 ms or less, falling linearly to 0 at 4000 ms.
`details.e2e` holds the samples' statistics and, when the agent reported any, `details.ttfb` the same
statistics of each service's time to first byte (`scorers.ttfb`), which make up part of each handoff.
"""

from __future__ import annotations

from models.call_state import CallState
from models.events import Event
from models.results import MetricResult
from scorers.handoff_latency import HandoffLatencyAcc
from scorers.qa.base import QaMetric, linear_falloff
from scorers.stats import nearest_rank
from scorers.ttfb import TtfbAcc

NO_LATENCY_SAMPLES = "No latency samples"
FULL_SCORE_UNTIL_MS = 1000
ZERO_SCORE_AT_MS = 4000
PERCENTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}


def e2e_stats(samples_ms: list[float]) -> dict[str, float | int]:
    ordered = sorted(samples_ms)
    stats: dict[str, float | int] = {"count": len(ordered), "mean": sum(ordered) / len(ordered)}
    stats.update({label: nearest_rank(ordered, fraction) for label, fraction in PERCENTILES.items()})
    stats.update({"min": ordered[0], "max": ordered[-1]})
    return stats


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
        handoffs: HandoffLatencyAcc = call.accumulators["handoff_latency"]
        samples = [s.latency_ms for s in handoffs.samples()]
        if not samples:
            return self.not_applicable(NO_LATENCY_SAMPLES)
        e2e = e2e_stats(samples)
        score = linear_falloff(e2e["p50"], FULL_SCORE_UNTIL_MS, ZERO_SCORE_AT_MS)
        ttfb: TtfbAcc = call.accumulators["ttfb"]
        if not ttfb.ms_by_processor:
            return self.scored(e2e["p50"], score, e2e=e2e)
        by_processor = {name: e2e_stats(ttfb.ms_by_processor[name]) for name in sorted(ttfb.ms_by_processor)}
        return self.scored(e2e["p50"], score, e2e=e2e, ttfb=by_processor)
