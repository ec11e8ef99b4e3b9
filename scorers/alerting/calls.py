"""What a published call result contributes to the alert windows, and when.

Only a small part of a result matters to alerting: the call's scopes (all, its agent, its cohorts),
each QA metric's verdict (`passed` and `score`, when the metric applied), each cohort's verdict
(weighted score and pass), and each cohort's verdicts of the metrics it counts. A metric rule on a
cohort's scope reads the cohort's verdict of the metric — at the cohort's own threshold, as the
cohort's overview does — and the result's (at the metric's default threshold) only for a metric the
cohort does not count: a cohort that passes latency at 80 would otherwise be alerted on at 60.
`ScoredCall` keeps just that; its document form is what the live worker re-keys onto the single-partition
alert input topic, so that topic stays small.

Event time: a call is placed in the windows by the time it ended (`ended_ts_ms`), not by the time the
result was published (`event_ts_ms`). The quality of a call belongs to when the call happened, and a
rescore (a late sentiment annotation, a transcript correction, a judge result) publishes a later
version with a later `event_ts_ms` but the same end: keyed by the end, the rescore replaces the call's
contribution in the window it was already in instead of moving the call to a later window (which
would both double-count time and let a batch of late annotations look like a burst of fresh calls).
A result without an end time (a call swept before it ended) falls back to `event_ts_ms`.

Scores are kept in tenths (they are rounded to one decimal), so sums taken back on a rescore or
when a call leaves a window leave no rounding residue.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import msgspec
from msgspec import Struct

from models.alert_rules import CONVERSATION, SCOPE_ALL, WEIGHTED_SCORE


class _MetricView(Struct):
    metric: str = ""  # (a cohort's details name the metric by their key)
    score: float | None = None
    passed: bool | None = None


class _CohortDetailsView(Struct):
    metrics: dict[str, _MetricView] = {}


class _CohortView(Struct):
    cohort_id: str
    weighted_score: float | None = None
    passed: bool | None = None
    details: _CohortDetailsView | None = None


class _ResultView(Struct):
    """The fields of a `CallResult` (or of a `ScoredCall` document) the alert engine reads."""

    call_id: str
    version: int
    no_conversation: bool = False
    agent_id: str | None = None
    cohort_ids: list[str] = []
    ended_ts_ms: int | None = None
    event_ts_ms: int | None = None
    metrics: list[_MetricView] = []
    cohorts: list[_CohortView] = []


@dataclass(slots=True, frozen=True)
class Outcome:
    passed: bool
    score_tenths: int


@dataclass(slots=True, frozen=True)
class ScoredCall:
    call_id: str
    version: int
    ts_ms: int  # the event time that places the call in the windows (see the module docstring)
    agent_id: str | None
    cohort_ids: tuple[str, ...]  # the cohorts the call belongs to, listed or by verdict
    metrics: dict[str, Outcome]  # QA metrics that applied, and `conversation` (the agent spoke)
    cohort_verdicts: dict[str, Outcome]  # cohorts with a weighted score
    # By cohort, its verdicts of the metrics it counts that applied (at the cohort's thresholds).
    cohort_metrics: dict[str, dict[str, Outcome | None]] = field(default_factory=dict)
    # When the result was published, in event time (a rescore's is its annotation's, later than the
    # call's end): the order results are counted in (scorers/alerting/ordering.py).
    event_ts_ms: int = 0
    # Known to have been read before (relayed again after a crash): counted as `repeated`, never as
    # `stale`, should it come behind every window. Not part of the call's document.
    redelivered: bool = field(default=False, compare=False)
    # The scope instances the call belongs to, per scope kind: {"all": ("all",), "agent": ("agent:a1",), …}
    scopes_by_kind: dict[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        scopes = {
            SCOPE_ALL: (SCOPE_ALL,),
            "agent": (f"agent:{self.agent_id}",) if self.agent_id else (),
            "cohort": tuple(f"cohort:{c}" for c in self.cohort_ids),
        }
        object.__setattr__(self, "scopes_by_kind", scopes)

    @property
    def scopes(self) -> tuple[str, ...]:
        return tuple(scope for scopes in self.scopes_by_kind.values() for scope in scopes)

    def contributions(self, wanted: Collection[tuple[str, str]] | None = None) -> list[tuple[str, str, Outcome]]:
        """(scope, metric, outcome) for every window aggregate the call counts in, or only for the
        (scope kind, metric) pairs `wanted`."""
        if wanted is None:
            wanted = [(kind, metric) for kind in self.scopes_by_kind for metric in [*self.metrics, WEIGHTED_SCORE]]
        out: list[tuple[str, str, Outcome]] = []
        for kind, metric in wanted:
            if metric == WEIGHTED_SCORE:
                if kind == "cohort":
                    out.extend((f"cohort:{c}", metric, outcome) for c, outcome in self.cohort_verdicts.items())
                continue
            if kind == "cohort":
                for cohort_id in self.cohort_ids:
                    outcome = self._cohort_metric(cohort_id, metric)
                    if outcome is not None:
                        out.append((f"cohort:{cohort_id}", metric, outcome))
                continue
            outcome = self.metrics.get(metric)
            if outcome is not None:
                out.extend((scope, metric, outcome) for scope in self.scopes_by_kind.get(kind, ()))
        return out

    def outcome(self, scope: str, metric: str) -> Outcome | None:
        kind, _, cohort_id = scope.partition(":")
        if metric == WEIGHTED_SCORE:
            return self.cohort_verdicts.get(cohort_id) if kind == "cohort" else None
        if scope not in self.scopes:
            return None
        return self._cohort_metric(cohort_id, metric) if kind == "cohort" else self.metrics.get(metric)

    def _cohort_metric(self, cohort_id: str, metric: str) -> Outcome | None:
        """The cohort's verdict of `metric` when it counts the metric (None when it did not apply);
        the result's otherwise."""
        counted = self.cohort_metrics.get(cohort_id)
        if counted is not None and metric in counted:
            return counted[metric]
        return self.metrics.get(metric)

    def to_document(self) -> dict[str, Any]:
        """A compact result document (the shape of `CallResult`, with only what alerting reads)."""
        return {
            "call_id": self.call_id,
            "version": self.version,
            "agent_id": self.agent_id,
            "cohort_ids": list(self.cohort_ids),
            "ended_ts_ms": self.ts_ms,
            "event_ts_ms": self.event_ts_ms,
            "metrics": [
                {"metric": m, "score": o.score_tenths / 10, "passed": o.passed}
                for m, o in self.metrics.items()
                if m != CONVERSATION
            ],
            "no_conversation": not self.metrics[CONVERSATION].passed,
            "cohorts": [self._cohort_document(c) for c in dict.fromkeys([*self.cohort_verdicts, *self.cohort_metrics])],
        }

    def _cohort_document(self, cohort_id: str) -> dict[str, Any]:
        verdict = self.cohort_verdicts.get(cohort_id)
        metrics = self.cohort_metrics.get(cohort_id, {})
        return {
            "cohort_id": cohort_id,
            "weighted_score": None if verdict is None else verdict.score_tenths / 10,
            "passed": None if verdict is None else verdict.passed,
            "details": {
                "metrics": {
                    m: {
                        "score": o.score_tenths / 10 if o is not None else None,
                        "passed": None if o is None else o.passed,
                    }
                    for m, o in metrics.items()
                }
            },
        }


def scored_call(result: Any) -> ScoredCall | None:
    """The alerting view of a result (a `CallResult`, its dict, its JSON bytes, or a compact
    document); None when the result carries no event time at all."""
    if isinstance(result, (bytes, bytearray, memoryview, str)):
        view = msgspec.json.decode(result, type=_ResultView)
    else:
        view = msgspec.convert(result, _ResultView, from_attributes=True)
    ts_ms = view.ended_ts_ms if view.ended_ts_ms is not None else view.event_ts_ms
    if ts_ms is None:
        return None
    verdicts = {
        c.cohort_id: Outcome(c.passed, _tenths(c.weighted_score))
        for c in view.cohorts
        if c.passed is not None and c.weighted_score is not None
    }
    cohorts = dict.fromkeys([*view.cohort_ids, *(c.cohort_id for c in view.cohorts)])
    metrics = {m.metric: Outcome(m.passed, _tenths(m.score)) for m in view.metrics if m.passed is not None}
    # (A metric of every call: its pass rate is the share of calls whose agent spoke.)
    metrics[CONVERSATION] = Outcome(not view.no_conversation, 0 if view.no_conversation else 1000)
    return ScoredCall(
        call_id=view.call_id,
        version=view.version,
        ts_ms=ts_ms,
        agent_id=view.agent_id,
        cohort_ids=tuple(cohorts),
        # `passed` null means the metric did not apply: it is not scored, so it does not count.
        metrics=metrics,
        cohort_verdicts=verdicts,
        # A metric the cohort counts that did not apply is kept as None: the cohort has no verdict of
        # it, and the result's (which has none either) must not be read instead.
        cohort_metrics={
            c.cohort_id: {
                m: Outcome(v.passed, _tenths(v.score)) if v.passed is not None else None
                for m, v in c.details.metrics.items()
            }
            for c in view.cohorts
            if c.details is not None and c.details.metrics
        },
        event_ts_ms=view.event_ts_ms if view.event_ts_ms is not None else ts_ms,
    )


def _tenths(score: float | None) -> int:
    return round((score or 0.0) * 10)
