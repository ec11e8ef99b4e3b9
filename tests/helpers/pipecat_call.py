"""The scripted Pipecat call of tests/helpers/pipecat_bot.py, written as events by hand, as a producer
that knows the contract would write it: what the observer's events must score the same as."""

from __future__ import annotations

from typing import Any

from tests.helpers.pipecat_bot import TOOL_ARGUMENTS, TOOL_RESULT


def hand_written_call(call_id: str, zero_ms: int, agent_id: str = "support-bot") -> list[dict[str, Any]]:
    """`zero_ms`: the call's start in Unix ms; every other time is ms from it, as in the script."""
    events: list[dict[str, Any]] = []

    def add(at_ms: int, kind: str, data: dict[str, Any]) -> None:
        events.append(
            {
                "v": 1,
                "event_id": f"{call_id}:{len(events)}",
                "call_id": call_id,
                "ts_ms": zero_ms + at_ms,
                "type": kind,
                "data": data,
            }
        )

    def rtvi(at_ms: int, kind: str, data: Any = None) -> None:
        message = {"label": "rtvi-ai", "type": kind, **({"data": data} if data is not None else {})}
        add(at_ms, "rtvi", {"side": "agent", "message": message})

    add(0, "call.started", {"agent_id": agent_id})
    rtvi(1_000, "user-started-speaking")
    add(2_500, "turn", {"role": "user", "text": "Where is my order 4521?", "start_ms": 1_000, "end_ms": 2_500})
    rtvi(2_500, "user-stopped-speaking")
    rtvi(
        2_700,
        "llm-function-call-in-progress",
        {"tool_call_id": "call-1", "function_name": "lookup_order", "arguments": TOOL_ARGUMENTS},
    )
    rtvi(
        2_900,
        "llm-function-call-stopped",
        {"tool_call_id": "call-1", "function_name": "lookup_order", "cancelled": False, "result": TOOL_RESULT},
    )
    rtvi(3_000, "metrics", {"ttfb": [{"processor": "OpenAILLMService#0", "model": "gpt-4o", "value": 0.45}]})
    rtvi(3_100, "metrics", {"tokens": [{"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129}]})
    rtvi(3_200, "metrics", {"ttfb": [{"processor": "CartesiaTTSService#0", "value": 0.2}]})
    rtvi(3_300, "bot-started-speaking")
    add(
        4_900,
        "turn",
        {
            "role": "agent",
            "text": "It shipped and arrives Friday.",
            "start_ms": 3_300,
            "end_ms": 4_900,
            "words": [
                ["It", 3_300, 3_800],
                ["shipped", 3_300, 3_800],
                ["and", 3_800, 4_900],
                ["arrives", 3_800, 4_900],
                ["Friday.", 3_800, 4_900],
            ],
        },
    )
    rtvi(4_900, "bot-stopped-speaking")
    rtvi(6_000, "user-started-speaking")
    add(7_100, "turn", {"role": "user", "text": "Can I change the address?", "start_ms": 6_000, "end_ms": 7_100})
    rtvi(7_100, "user-stopped-speaking")
    rtvi(7_900, "bot-started-speaking")
    rtvi(8_400, "user-started-speaking")
    # The agent's answer, cut where the user interrupted it.
    add(
        8_400,
        "turn",
        {
            "role": "agent",
            "text": "Sure, what is",
            "start_ms": 7_900,
            "end_ms": 8_400,
            "words": [["Sure,", 7_900, 8_400], ["what", 7_900, 8_400], ["is", 7_900, 8_400]],
        },
    )
    rtvi(8_450, "bot-stopped-speaking")
    add(9_100, "turn", {"role": "user", "text": "Never mind, thanks.", "start_ms": 8_400, "end_ms": 9_100})
    rtvi(9_100, "user-stopped-speaking")
    rtvi(9_500, "bot-started-speaking")
    add(
        10_000,
        "turn",
        {
            "role": "agent",
            "text": "Goodbye!",
            "start_ms": 9_500,
            "end_ms": 10_000,
            "words": [["Goodbye!", 9_500, 10_000]],
        },
    )
    rtvi(10_000, "bot-stopped-speaking")
    add(10_500, "call.ended", {"stop_reason": "[EXIT]", "end_conversation_tool_called": False})
    return events
