"""The documents callqa publishes: one scored result per call (and per rescore) on `callqa.results`."""

from __future__ import annotations

from typing import Any

from msgspec import Struct


class MetricResult(Struct, kw_only=True):
    """One QA metric on one call, exactly the shape `{metric, value, score, passed, details}`.

    `score` and `passed` are None (null) when the metric does not apply; `details.reason` then says why.
    """

    metric: str
    value: float | int | None
    score: float | None
    passed: bool | None
    details: dict[str, Any]


class CohortVerdict(Struct, kw_only=True):
    cohort_id: str
    weighted_score: float | None
    passed: bool | None
    metrics_counted: list[str]
    details: dict[str, Any] = {}


class CallResult(Struct, kw_only=True):
    call_id: str
    version: int
    final: bool
    # The agent never spoke (scorers/conversation.py): a dead call, counted apart by overviews, run
    # summaries and alert rules instead of passing on metrics that found nothing wrong.
    no_conversation: bool = False
    agent_id: str | None
    cohort_ids: list[str]
    run_id: str | None
    # Event time of the call's end, and of the event that produced this version (end or rescore).
    ended_ts_ms: int | None
    event_ts_ms: int | None
    metrics: list[MetricResult]
    cohorts: list[CohortVerdict]
    evaluation: dict[str, Any]
