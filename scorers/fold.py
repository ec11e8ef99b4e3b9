"""Fold one event into a call's state: the core facts first, then every scorer that handles it."""

from __future__ import annotations

from models.call_state import DEFAULT_INACTIVITY_TIMEOUT_S, CallState, TurnRecord
from models.events import (
    EVENT_TYPES,
    RESCORE_TYPES,
    CallEnded,
    CallStarted,
    Event,
    JudgeResult,
    Turn,
)
from scorers.registry import ScorerRegistry


def new_call(call_id: str, registry: ScorerRegistry) -> CallState:
    call = CallState(call_id=call_id)
    for scorer in registry.scorers:
        call.accumulators[scorer.name] = scorer.start()
    return call


def apply_event(call: CallState, event: Event, registry: ScorerRegistry) -> None:
    """Fold `event` into `call`. The caller has already decided the event is new and acceptable."""
    _apply_core(call, event)
    accumulators = call.accumulators
    for name, update in registry.updates_for(event):
        update(accumulators[name], event, call)
    call.events_applied += 1  # (its event_id is recorded by the engine, which decided it was new)


_RESCORE_CLASSES = frozenset(EVENT_TYPES[tag] for tag in RESCORE_TYPES)


def _apply_core(call: CallState, event: Event) -> None:
    ts = event.ts_ms
    first = call.first_ts_ms
    if first is None or ts < first:
        call.first_ts_ms = ts
    last = call.last_ts_ms
    if last is None or ts > last:
        call.last_ts_ms = ts
    if type(event) not in _RESCORE_CLASSES:
        activity = call.last_activity_ts_ms
        if activity is None or ts > activity:
            call.last_activity_ts_ms = ts

    if isinstance(event, Turn):
        d = event.data
        call.turns.append(TurnRecord(ts, d.role, d.text, d.start_ms, d.end_ms))
    elif isinstance(event, CallStarted):
        d = event.data
        call.agent_id = d.agent_id
        call.cohort_ids = list(d.cohort_ids)
        call.run_id = d.run_id
        call.scenario = d.scenario
        call.agent_config = d.agent_config
        call.variables = dict(d.variables)
        call.inactivity_timeout_s = (
            float(d.inactivity_timeout_s) if d.inactivity_timeout_s is not None else DEFAULT_INACTIVITY_TIMEOUT_S
        )
        call.started_ts_ms = ts
    elif isinstance(event, CallEnded):
        call.ended = event.data
        call.ended_ts_ms = ts
    elif isinstance(event, JudgeResult):
        call.judge = event.data
