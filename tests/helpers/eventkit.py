"""Build typed events for tests without hand-writing envelopes."""

from __future__ import annotations

import itertools
from typing import Any

import msgspec

from models.events import AnyEvent
from scorers.engine import CallEngine

_ids = itertools.count()
T0 = 1_760_000_000_000  # an arbitrary event-time origin, Unix ms


def event(
    type_: str,
    data: dict[str, Any] | None = None,
    *,
    call_id: str = "c1",
    ts_ms: int | None = None,
    event_id: str | None = None,
) -> AnyEvent:
    n = next(_ids)
    doc = {
        "v": 1,
        "type": type_,
        "event_id": event_id or f"e{n}",
        "call_id": call_id,
        "ts_ms": T0 + n if ts_ms is None else ts_ms,
        "data": data or {},
    }
    return msgspec.convert(doc, AnyEvent)


def run_call(events: list[AnyEvent], engine: CallEngine | None = None):
    """Feed events through a fresh engine; return (engine, list of published results)."""
    engine = engine or CallEngine()
    results = [p.result for e in events if (p := engine.process(e)).result is not None]
    return engine, results
