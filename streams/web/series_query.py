"""`GET /timeseries` and the windows of `GET /cohorts/{id}/overview`: ranges of event time, read from
the query, checked, and answered from the call index.

A range is `from` (inclusive) to `to` (exclusive), in event time. Without them: the 24 hours up to the
newest call the index holds, so that history replayed or recorded last year charts as well as today's.
The series adds whole minutes: `from` is taken down and `to` up to a whole minute (the answer says
which range it covers).
"""

from __future__ import annotations

from typing import Any

from scorers.cohort_overview import CohortOverview
from scorers.timeseries import MINUTE_MS, SCOPE_ALL, default_step_s
from streams.web.call_index import CallIndex
from streams.web.query_params import QueryError

DEFAULT_SPAN_MS = 24 * 3_600_000
MAX_BUCKETS = 2_000


def time_range(index: CallIndex, params: dict[str, Any]) -> tuple[int, int]:
    """(from_ms, to_ms) of the query: given, or the 24 h up to the newest call."""
    newest = index.newest_ms if index.newest_ms is not None else 0
    to_ms = params.get("to", newest + 1)
    from_ms = params.get("from", to_ms - DEFAULT_SPAN_MS)
    if from_ms >= to_ms:
        raise QueryError("query parameter 'from' must be before 'to'")
    return from_ms, to_ms


def timeseries(index: CallIndex, params: dict[str, Any]) -> dict[str, Any]:
    scope = params.get("scope", SCOPE_ALL)
    kind, colon, target = scope.partition(":")
    if scope != SCOPE_ALL and (not colon or kind not in ("agent", "cohort") or not target):
        raise QueryError(f"query parameter 'scope': {scope!r} is not one of all, agent:<id>, cohort:<id>")
    metric = params.get("metric")
    if metric is not None and metric not in index.metric_order:
        raise QueryError(
            f"query parameter 'metric': unknown metric {metric!r} (known: {', '.join(index.metric_names)})"
        )
    from_ms, to_ms = time_range(index, params)
    step_s = params.get("step", default_step_s(to_ms - from_ms))
    from_ms, to_ms = from_ms // MINUTE_MS * MINUTE_MS, -(-to_ms // MINUTE_MS) * MINUTE_MS
    if step_s % 60:
        raise QueryError(f"query parameter 'step': {step_s} is not a whole number of minutes (a multiple of 60)")
    step_ms = step_s * 1000
    if -(-(to_ms - from_ms) // step_ms) > MAX_BUCKETS:
        raise QueryError(f"query parameter 'step': {step_s} s makes more than {MAX_BUCKETS} buckets of this range")
    names = [metric] if metric is not None else index.metric_names
    table = index.series.table(scope, from_ms, to_ms, step_ms)
    series = [
        {"metric": name, "buckets": [bucket.to_dict() for bucket in table[index.metric_order[name]]]} for name in names
    ]
    return {
        "scope": scope,
        "from_ms": from_ms,
        "to_ms": to_ms,
        "step_s": step_s,
        "series": series,
        "totals": {"calls": index.series.calls(scope, from_ms, to_ms)},
    }


def windowed_overview(index: CallIndex, cohort_id: str, params: dict[str, Any]) -> dict[str, Any]:
    """A cohort's overview over the calls of a range of event time (`from`/`to`, or `window_s` up to the
    newest call), recomputed from their latest results (read from the spool: a cost per call)."""
    if "window_s" in params:
        if "from" in params or "to" in params:
            raise QueryError("query parameter 'window_s' goes without 'from' and 'to'")
        to_ms = (index.newest_ms or 0) + 1
        from_ms = to_ms - round(params["window_s"] * 1000)
    else:
        from_ms, to_ms = params.get("from", 0), params.get("to", (index.newest_ms or 0) + 1)
    if from_ms >= to_ms:
        raise QueryError("query parameter 'from' must be before 'to'")
    members = [
        call_id
        for call_id, entry in index.calls.items()
        if cohort_id in entry.cohorts and from_ms <= entry.time_ms < to_ms
    ]
    overview = CohortOverview.recompute(index.results(members), index.metric_names).overview(cohort_id)
    return {**overview, "from_ms": from_ms, "to_ms": to_ms}
