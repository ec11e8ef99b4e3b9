"""`GET /calls`: the calls of the index that match a filter, newest first, a page at a time.

The order is the call's time (its end) and then its id, both descending; the cursor is the last row's
place in that order, base64 of `[time_ms, call_id]`, so that a page follows on from the previous one
even while new calls arrive (they come before it).
"""

from __future__ import annotations

import base64
import heapq
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from scorers.call_verdicts import FAIL, NA, NOT_LISTED, PASS, verdict_words
from scorers.runs.signals import domain_of
from streams.web.call_index import CallIndex, IndexedCall
from streams.web.query_params import QueryError

VERDICT_CODES = {"pass": PASS, "fail": FAIL, "na": NA}
DEFAULT_LIMIT = 50
MAX_LIMIT = 500


@dataclass(frozen=True)
class CallFilter:
    agent_id: str | None = None
    cohort_id: str | None = None
    run_id: str | None = None
    metric: str | None = None
    verdict: str | None = None  # pass | fail | na
    from_ms: int | None = None
    to_ms: int | None = None


def encode_cursor(time_ms: int, call_id: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([time_ms, call_id]).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[int, str]:
    try:
        time_ms, call_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if isinstance(time_ms, int) and isinstance(call_id, str):
            return time_ms, call_id
    except (ValueError, TypeError):
        pass
    raise QueryError(f"query parameter 'cursor': {cursor!r} is not a cursor this API gave")


def list_calls(
    index: CallIndex, where: CallFilter, limit: int = DEFAULT_LIMIT, cursor: str | None = None
) -> dict[str, Any]:
    after = decode_cursor(cursor) if cursor else None
    place = None
    if where.metric is not None:
        place = index.metric_order.get(where.metric)
        if place is None:
            raise QueryError(
                f"query parameter 'metric': unknown metric {where.metric!r} (known: {', '.join(index.metric_names)})"
            )
    rows = heapq.nlargest(limit + 1, _matching(index, where, place, after), key=lambda item: (item[1].time_ms, item[0]))
    page = rows[:limit]
    next_cursor = encode_cursor(page[-1][1].time_ms, page[-1][0]) if len(rows) > limit else None
    return {
        "calls": [summary(call_id, entry, index.metric_names) for call_id, entry in page],
        "next_cursor": next_cursor,
    }


def summary(call_id: str, entry: IndexedCall, metric_names: list[str]) -> dict[str, Any]:
    """A call as a row of a list: who, when, and its metrics by verdict."""
    return {
        "call_id": call_id,
        "version": entry.version,
        "agent_id": entry.agent_id,
        "run_id": entry.run_id,
        "cohort_ids": list(entry.cohorts),
        "time_ms": entry.time_ms,
        "ended_ts_ms": entry.ended_ts_ms,
        "event_ts_ms": entry.event_ts_ms,
        "scenario": entry.scenario,
        "domain": None if entry.scenario is None else domain_of(entry.scenario),
        "is_successful": entry.successful,
        **verdict_words(entry.verdicts, metric_names),
    }


def _matching(
    index: CallIndex, where: CallFilter, place: int | None, after: tuple[int, str] | None
) -> Iterator[tuple[str, IndexedCall]]:
    code = VERDICT_CODES.get(where.verdict) if where.verdict else None
    for call_id, entry in index.calls.items():
        if after is not None and (entry.time_ms, call_id) >= after:
            continue
        if where.agent_id is not None and entry.agent_id != where.agent_id:
            continue
        if where.run_id is not None and entry.run_id != where.run_id:
            continue
        if where.cohort_id is not None and where.cohort_id not in entry.cohorts:
            continue
        if where.from_ms is not None and entry.time_ms < where.from_ms:
            continue
        if where.to_ms is not None and entry.time_ms >= where.to_ms:
            continue
        if place is not None:
            verdict = entry.verdicts[place]
            if verdict == NOT_LISTED or (code is not None and verdict != code):
                continue
        elif code is not None and not _overall(entry.verdicts, code):
            continue
        yield call_id, entry


def _overall(verdicts: bytes, code: int) -> bool:
    """Without a metric: `fail`, some metric failed; `pass`, one passed and none failed; `na`, none applied."""
    if code == FAIL:
        return FAIL in verdicts
    if code == PASS:
        return FAIL not in verdicts and PASS in verdicts
    return FAIL not in verdicts and PASS not in verdicts
