"""Run one call through the engine and pick a QA metric's entry out of the published result."""

from __future__ import annotations

from typing import Any

from models.results import CallResult, MetricResult
from tests.helpers.eventkit import T0, event, run_call

START_TS = T0 - 100_000  # a call's start, earlier than any default event time
END_TS = T0 + 10_000_000  # a call's end, later than any default event time


def metric(result: CallResult, name: str) -> MetricResult:
    (entry,) = [m for m in result.metrics if m.metric == name]
    return entry


def call_events(
    *middle: Any, started_ts: int | None = START_TS, ended_ts: int = END_TS, ended: dict[str, Any] | None = None
) -> list:
    """`call.started` (unless `started_ts` is None), the given events, then `call.ended`."""
    head = [] if started_ts is None else [event("call.started", {"agent_id": "a1"}, ts_ms=started_ts)]
    tail = [event("call.ended", {"stop_reason": "hangup", **(ended or {})}, ts_ms=ended_ts)]
    return head + list(middle) + tail


def scored(name: str, *middle: Any, **kwargs: Any) -> MetricResult:
    """The metric's entry in the result published when the call ends."""
    _, results = run_call(call_events(*middle, **kwargs))
    (result,) = results
    return metric(result, name)
