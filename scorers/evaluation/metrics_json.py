"""The evaluation harness's per-scenario `metrics.json` document for one call.

Always-present keys come first, in the metrics dictionary's table order, then the conditional keys,
each only when its condition holds, in that table's order; the judge's judge_result.json document
rides last under `judge_result` (the export writes it as its own file). Every figure comes from
accumulators kept while the call ran; nothing re-reads events. A call without a scenario (a
production call) gets the full document too: no reference answer ("N/A"), the tool-only policy,
every signal whitelisted, no agent-turn floor.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from models.call_state import CallState
from scorers.evaluation.actions import PredictedActionsAcc, action_match_value
from scorers.evaluation.conversation_end import ConversationEndAcc, conversation_end_fields
from scorers.evaluation.db_state import DbStateAcc, db_state_fields
from scorers.evaluation.judge_fields import JudgeAnswerAcc, judge_fields
from scorers.evaluation.success import success_fields
from scorers.handoff_latency import HandoffLatencyAcc
from scorers.stats import latency_stats
from scorers.token_usage import TokenUsageAcc

ALWAYS_PRESENT_KEYS = (
    "scenario_name",
    "scenario_directory",
    "total_turns",
    "turns",
    "duration_seconds",
    "scenario_duration",
    "latency_stats",
    "latencies",
    "stop_reason",
    "inactivity_timeout_seconds",
    "clean_exit",
    "end_conversation_tool_called",
    "simulator_end_reported",
    "last_speaker",
    "conversation_end_policy",
    "conversation_end_reason",
    "is_action_match",
    "token_usage",
    "success_breakdown",
    "is_successful",
    "is_task_successful",  # written whenever is_successful is a bool
    "auto_retry_count",
)
CONDITIONAL_KEYS = (
    "db_state_expected_hash",
    "db_state_actual_hash",
    "db_state_match",
    "db_state_assertion_verdicts",
    "db_state_assertion_pass_rate",
    "nl_assertion_pass_rate",
    "judge_score",
    "judge_passed",
    "insufficient_agent_turns",
    "min_agent_turns",  # (callqa's: the floor it fell short of, as scenarios carry their own)
    "auto_retry_reasons",
    "trace_metrics",
)
JUDGE_RESULT_KEY = "judge_result"
DB_STATE_DIFF_KEY = "db_state_diff"  # (callqa's: exported as db_state_diff.json, not in metrics.json)
KEY_ORDER = (*ALWAYS_PRESENT_KEYS, *CONDITIONAL_KEYS, JUDGE_RESULT_KEY, DB_STATE_DIFF_KEY)


# Every result lists every turn with its timestamp, so formatting is hot. Within this range (1970 to
# 2096) the float `ts_ms / 1000` is within half a microsecond of the exact instant, so datetime's
# reading is the exact millisecond and the text can be built from integer arithmetic: the same
# "YYYY-MM-DDTHH:MM:" prefix serves a whole minute of timestamps.
_FAST_ISO_BELOW_MS = 4_000_000_000_000


@lru_cache(maxsize=4096)
def _minute_prefix(minute: int) -> str:
    return datetime.fromtimestamp(minute * 60, tz=UTC).strftime("%Y-%m-%dT%H:%M:")


def iso_timestamp(ts_ms: int) -> str:
    if not 0 <= ts_ms < _FAST_ISO_BELOW_MS or type(ts_ms) is not int:
        return datetime.fromtimestamp(ts_ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
    minute, millis = divmod(ts_ms, 60_000)
    seconds, millis = divmod(millis, 1000)
    return f"{_minute_prefix(minute)}{seconds:02d}.{millis:03d}+00:00"


def duration_seconds(call: CallState) -> float:
    """Start to end of the call's accepted attempt in event time: `call.started` (or the first event;
    the last `attempt.discarded` when later) → `call.ended`."""
    start = call.attempt_start_ms(call.started_ts_ms if call.started_ts_ms is not None else call.first_ts_ms)
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


def in_key_order(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` in KEY_ORDER; a key the order does not know keeps its place after the known ones."""
    ordered = {key: fields[key] for key in KEY_ORDER if key in fields}
    ordered.update((key, value) for key, value in fields.items() if key not in ordered)
    return ordered


def agent_llm_calls(tokens: TokenUsageAcc, call: CallState) -> int:
    """The agent's LLM calls for the stall floor: its token metrics' call count, else (a pipeline that
    reports no token usage, as Pipecat by default) its turns, one LLM response each, as the harness
    falls back to the messages of the agent's LLM context."""
    if tokens.agent.n_calls > 0:
        return tokens.agent.n_calls
    return sum(1 for turn in call.turns if turn.role == "agent")


def build_metrics_json(call: CallState) -> dict[str, Any]:
    document = always_present(call)
    accumulators = call.accumulators
    document.update(conversation_end_fields(accumulators.get("conversation_end") or ConversationEndAcc(), call))
    document["is_action_match"] = action_match_value(
        accumulators.get("predicted_actions") or PredictedActionsAcc(), call.scenario
    )
    document.update(db_state_fields(accumulators.get("db_state") or DbStateAcc(), call.scenario))
    document.update(judge_fields(accumulators.get("evaluation_judge") or JudgeAnswerAcc(), call.scenario))
    retries = accumulators.get("retries")
    if retries is not None and retries.reasons:
        document["auto_retry_reasons"] = list(retries.reasons)
    if call.ended is not None and call.ended.trace_metrics is not None:
        document["trace_metrics"] = call.ended.trace_metrics
    tokens: TokenUsageAcc = accumulators["token_usage"]
    document.update(success_fields(document, call.scenario, agent_llm_calls(tokens, call)))
    if call.scorer_errors:
        document["scorer_errors"] = dict(sorted(call.scorer_errors.items()))
    return in_key_order(document)
