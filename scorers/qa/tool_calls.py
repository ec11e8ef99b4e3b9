"""Where a call's tool calls come from, for the metrics that read them.

Two sources describe the agent's tool calls: `tool.call` events, and the pipeline's RTVI messages
`llm-function-call-in-progress` `{tool_call_id, function_name?, arguments?}` and
`llm-function-call-stopped` `{tool_call_id, cancelled, function_name?, result?}`. Only the agent's
side counts: a simulated user's tools are not the agent's calls.
"""

from __future__ import annotations

from typing import Any

from models.events import Event, Rtvi, ToolCall

FUNCTION_CALL_IN_PROGRESS = "llm-function-call-in-progress"
FUNCTION_CALL_STOPPED = "llm-function-call-stopped"
RTVI_FUNCTION_CALL_TYPES = frozenset({FUNCTION_CALL_IN_PROGRESS, FUNCTION_CALL_STOPPED})


def rtvi_function_call(event: Rtvi) -> dict[str, Any] | None:
    """The data of an agent-side RTVI function-call message, else None."""
    message = event.data.message
    if event.data.side != "agent" or message.type not in RTVI_FUNCTION_CALL_TYPES or not isinstance(message.data, dict):
        return None
    return message.data


def blank_result(result: Any) -> bool:
    """No result at all: absent, null, or text with nothing in it."""
    return result is None or (isinstance(result, str) and not result.strip())


def result_not_reported(stopped: dict[str, Any]) -> bool:
    """An `llm-function-call-stopped` message's data says the call completed but carries no result.
    Pipecat sends the result only at its `FULL` function-call report level (its default, `NONE`,
    sends none) and leaves a falsy one (`{}`, `""`) out even then: the call did return something."""
    return stopped.get("cancelled") is False and blank_result(stopped.get("result"))


def called_function_name(event: Event) -> str | None:
    """The function an agent-side `tool.call` event or RTVI function-call message names, if any."""
    if isinstance(event, ToolCall):
        return event.data.name if event.data.side == "agent" else None
    if isinstance(event, Rtvi):
        data = rtvi_function_call(event)
        name = data.get("function_name") if data is not None else None
        return name if isinstance(name, str) else None
    return None
