"""Fold one event into a call's state: the core facts first, then every scorer that handles it."""

from __future__ import annotations

from models.call_state import DEFAULT_INACTIVITY_TIMEOUT_S, CallState, TurnRecord
from models.events import (
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
    call.seen_event_ids.add(event.event_id)
    call.events_applied += 1


def _apply_core(call: CallState, event: Event) -> None:
    ts = event.ts_ms
    if call.first_ts_ms is None or ts < call.first_ts_ms:
        call.first_ts_ms = ts
    if call.last_ts_ms is None or ts > call.last_ts_ms:
        call.last_ts_ms = ts
    tag = event.__struct_config__.tag
    if tag not in RESCORE_TYPES and (call.last_activity_ts_ms is None or ts > call.last_activity_ts_ms):
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
