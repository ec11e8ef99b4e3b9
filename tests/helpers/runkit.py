"""Build per-call result documents for the run-summary tests by hand, with the seed's metrics.json keys."""

from __future__ import annotations

from typing import Any

from models.results import CallResult

RUN = "run-1"


def metrics_doc(
    name: str,
    *,
    is_successful: bool | str = True,
    is_task_successful: bool | None = None,
    clean_exit: bool = True,
    is_action_match: bool | str = "N/A",
    latencies_ms: tuple[float, ...] = (),
    agent_tokens: tuple[int, int, int] = (0, 0, 0),
    user_tokens: tuple[int, int, int] = (0, 0, 0),
    **conditional: Any,
) -> dict[str, Any]:
    """A metrics.json document: the always-present keys in the seed's order, then `conditional` ones.

    `is_task_successful` defaults to `is_successful` and is left out when that is "N/A", as the runner does.
    """
    document: dict[str, Any] = {
        "scenario_name": name,
        "scenario_directory": name,
        "total_turns": 0,
        "turns": [],
        "duration_seconds": 1.0,
        "scenario_duration": 1.0,
        "latency_stats": {},
        "latencies": [{"user_transcript": "u", "agent_transcript": "a", "latency_ms": ms} for ms in latencies_ms],
        "stop_reason": "[EXIT]" if clean_exit else "[TIMEOUT]",
        "inactivity_timeout_seconds": 120.0,
        "clean_exit": clean_exit,
        "end_conversation_tool_called": clean_exit,
        "simulator_end_reported": False,
        "last_speaker": "agent",
        "conversation_end_policy": "tool-only",
        "conversation_end_reason": (
            "agent_end_conversation_tool" if clean_exit else "agent_end_conversation_tool_missing"
        ),
        "is_action_match": is_action_match,
        "token_usage": {
            "agent": dict(zip(("n_calls", "prompt", "completion"), agent_tokens, strict=True)),
            "user": dict(zip(("n_calls", "prompt", "completion"), user_tokens, strict=True)),
        },
        "success_breakdown": {"passed": [], "failed": [], "not_applicable": [], "excluded": []},
        "is_successful": is_successful,
    }
    if isinstance(is_successful, bool):
        task = document["is_task_successful"] = is_successful if is_task_successful is None else is_task_successful
        # The breakdown agrees with the verdicts, as the runner writes them (task success is read from it).
        failed = [] if is_successful else ["clean_exit"] if task else ["is_action_match"]
        document["success_breakdown"]["failed"] = failed
    document["auto_retry_count"] = 0
    document.update(conditional)
    return document


def judge_doc(score: float = 1.0, nl_verdicts: list[bool] | None = None) -> dict[str, Any]:
    """A judge_result.json document; with `nl_verdicts`, one verdict per assertion and the counts."""
    document: dict[str, Any] = {
        "score": score,
        "reason": "looks right",
        "judge_input": {"system_prompt": "s", "user_content": "c"},
    }
    if nl_verdicts is not None:
        passed = sum(nl_verdicts)
        document["nl_assertion_verdicts"] = [
            {"index": i + 1, "assertion": f"claim {i + 1}", "passed": verdict, "reason": "r"}
            for i, verdict in enumerate(nl_verdicts)
        ]
        document["nl_assertion_pass_count"] = passed
        document["nl_assertion_total"] = len(nl_verdicts)
        document["nl_assertion_pass_rate"] = passed / len(nl_verdicts)
    return document


def db_verdicts(*passed: bool) -> list[dict[str, Any]]:
    return [
        {
            "func_name": f"check_{i}",
            "side": "agent",
            "passed": ok,
            "expected": True,
            "actual": ok,
            "message": None,
            "error": None,
        }
        for i, ok in enumerate(passed)
    ]


def call_result(
    call_id: str,
    evaluation: dict[str, Any],
    *,
    version: int = 1,
    run_id: str | None = RUN,
    judge: dict[str, Any] | None = None,
) -> CallResult:
    """A published result whose evaluation is `evaluation` (plus `judge_result` when `judge` is given)."""
    if judge is not None:
        evaluation = {**evaluation, "judge_result": judge}
    return CallResult(
        call_id=call_id,
        version=version,
        final=True,
        agent_id="agent-1",
        cohort_ids=[],
        run_id=run_id,
        ended_ts_ms=None,
        event_ts_ms=None,
        metrics=[],
        cohorts=[],
        evaluation=evaluation,
    )
