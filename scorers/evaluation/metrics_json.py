"""The evaluation harness's per-scenario `metrics.json` document for one call.

Always-present keys come first, conditional keys only when their condition holds (see the metrics
dictionary). Every figure comes from accumulators kept while the call ran; nothing re-reads events.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from models.call_state import CallState
from scorers.handoff_latency import HandoffLatencyAcc
from scorers.stats import latency_stats
from scorers.token_usage import TokenUsageAcc


def iso_timestamp(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")


def duration_seconds(call: CallState) -> float:
    """Start to end of the call in event time: `call.started` (or the first event) → `call.ended`."""
    start = call.started_ts_ms if call.started_ts_ms is not None else call.first_ts_ms
    end = call.ended_ts_ms if call.ended_ts_ms is not None else call.last_ts_ms
    if start is None or end is None:
        return 0.0
    return max(0, end - start) / 1000.0


def scenario_duration(call: CallState) -> float:
    """First event of the call (whatever came before `call.started`) → its end; ≥ duration_seconds."""
    end = call.ended_ts_ms if call.ended_ts_ms is not None else call.last_ts_ms
    if call.first_ts_ms is None or end is None:
        return 0.0
    return max(0, end - call.first_ts_ms) / 1000.0


def last_speaker(call: CallState) -> str | None:
    return call.turns[-1].role if call.turns else None


def always_present(call: CallState) -> dict[str, Any]:
    """The always-present keys that need no judge and no scenario signals."""
    latency: HandoffLatencyAcc = call.accumulators["handoff_latency"]
    tokens: TokenUsageAcc = call.accumulators["token_usage"]
    samples = latency.samples()
    retry_reasons = call.accumulators.get("retries")
    return {
        "scenario_name": call.scenario_name,
        "scenario_directory": call.scenario_name,
        "total_turns": len(call.turns),
        "turns": [{"timestamp": iso_timestamp(t.ts_ms), "role": t.role, "text": t.text} for t in call.turns],
        "duration_seconds": duration_seconds(call),
        "scenario_duration": scenario_duration(call),
        "latency_stats": latency_stats([s.latency_ms for s in samples]),
        "latencies": [s.as_dict() for s in samples],
        "stop_reason": call.ended.stop_reason if call.ended is not None else None,
        "inactivity_timeout_seconds": float(call.inactivity_timeout_s),
        "last_speaker": last_speaker(call),
        "token_usage": tokens.as_dict(),
        "auto_retry_count": len(retry_reasons.reasons) if retry_reasons is not None else 0,
    }


def build_metrics_json(call: CallState) -> dict[str, Any]:
    document = always_present(call)
    retries = call.accumulators.get("retries")
    if retries is not None and retries.reasons:
        document["auto_retry_reasons"] = list(retries.reasons)
    if call.ended is not None and call.ended.trace_metrics is not None:
        document["trace_metrics"] = call.ended.trace_metrics
    return document
