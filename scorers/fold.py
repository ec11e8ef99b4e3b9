"""Fold one event into a call's state: the core facts first, then every scorer that handles it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from models.call_state import DEFAULT_INACTIVITY_TIMEOUT_S, CallState, TurnRecord
from models.events import (
    RESCORE_CLASSES,
    AttemptDiscarded,
    CallEnded,
    CallStarted,
    Event,
    JudgeResult,
    Rtvi,
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
    # Runs for every event: the routing of `registry.updates_for` and the core facts inline.
    cls = type(event)
    ts = event.ts_ms
    first = call.first_ts_ms
    if first is None or ts < first:
        call.first_ts_ms = ts
    if cls not in RESCORE_CLASSES:
        last = call.last_ts_ms
        if last is None or ts > last:
            call.last_ts_ms = ts
        activity = call.last_activity_ts_ms
        # Streamed audio levels say nothing of whether anyone speaks: they never hold a call open
        # (but a call's first event starts its clock, whatever it is, so that every call is swept).
        if activity is None or (
            ts > activity and (cls is not Rtvi or cast(Rtvi, event).data.message.type not in STREAMED_LEVELS)
        ):
            call.last_activity_ts_ms = ts
    core = _CORE_FACTS.get(cls)
    if core is not None:
        core(call, event)
    elif cls is AttemptDiscarded:
        restart_attempt(call, registry, ts)
    if cls is Rtvi:
        updates = registry.rtvi_routes.get(cast(Rtvi, event).data.message.type, registry.rtvi_unlisted)
    else:
        updates = registry.routes.get(cls, ())
    accumulators = call.accumulators
    for name, update in updates:
        try:
            update(accumulators[name], event, call)
        except Exception as exc:  # one scorer's bug must not stop the call or the worker
            record_scorer_error(call, name, event, exc)
    call.events_applied += 1  # (its event_id is recorded by the engine, which decided it was new)


def restart_attempt(call: CallState, registry: ScorerRegistry, ts_ms: int) -> None:
    """An attempt of the call was discarded (the evaluation harness re-runs a stale scenario): what it
    gathered — turns, tokens, latencies, tool calls — is dropped, so that the result describes the
    accepted attempt alone, as the harness's metrics.json does, its duration included (the next
    attempt starts at `ts_ms`, the discard). The call's own facts (`call.started`, its clocks, the
    events seen) and the accumulators that span attempts (the retry count) stay."""
    call.attempt_started_ts_ms = ts_ms
    call.turns.clear()
    for scorer in registry.scorers:
        if not scorer.spans_attempts:
            call.accumulators[scorer.name] = scorer.start()
            if call.scorer_errors is not None:
                call.scorer_errors.pop(scorer.name, None)
    if not call.scorer_errors:
        call.scorer_errors = None


MAX_SCORER_ERROR_CHARS = 300


def record_scorer_error(call: CallState, name: str, event: Event, exc: Exception) -> None:
    """Keep the scorer's first failure on this call (the same on every replay: scoring is pure)."""
    errors = call.scorer_errors
    if errors is None:
        errors = call.scorer_errors = {}
    if name not in errors:
        errors[name] = f"{type(exc).__name__} on event {event.event_id!r}: {exc}"[:MAX_SCORER_ERROR_CHARS]


# RTVI messages a pipeline streams continuously, speech or silence (Pipecat's audio-level messages):
# not activity for the inactivity timer, which resets on meaningful activity only.
STREAMED_LEVELS = frozenset({"user-audio-level", "bot-audio-level"})


def _turn(call: CallState, event: Turn) -> None:
    d = event.data
    call.turns.append(TurnRecord(event.ts_ms, d.role, d.text, d.start_ms, d.end_ms))


def _started(call: CallState, event: CallStarted) -> None:
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
    call.started_ts_ms = event.ts_ms


def _ended(call: CallState, event: CallEnded) -> None:
    call.ended = event.data
    call.ended_ts_ms = event.ts_ms


def _judged(call: CallState, event: JudgeResult) -> None:
    call.judge = event.data


# The facts the call itself keeps, by event class (every event also moves the call's clocks).
_CORE_FACTS: dict[type, Callable[[CallState, Any], None]] = {
    Turn: _turn,
    CallStarted: _started,
    CallEnded: _ended,
    JudgeResult: _judged,
}
