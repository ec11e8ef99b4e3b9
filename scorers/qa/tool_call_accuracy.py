"""Tool call accuracy (heuristic): whether the agent's tools were called correctly.

A tool call is good when its arguments are valid JSON (blank arguments are a tool called without
parameters, as OpenAI-compatible servers send them), it has a result, and the result does not look
like a failure. A failure is, on the result as a JSON value (a string that holds JSON is parsed first):
- an `error` or `errors` key at the top level of an object, unless its value is empty (null, false,
  "", [] or {} — APIs commonly send `"error": null` or `"errors": []` on success);
- `"success": false` or `"ok": false` (the boolean, or the string "false" in any case);
- a status of 400 or more under `status`, `status_code` or `statusCode` (a number or a numeric string;
  a status in words is the tool's data — an order's or a payment's "failed" — not the call's outcome);
- text that, stripped and in any case, starts with "error", "failed" or "failure";
- the stand-in text Pipecat returns to the model for a handler that raised ("The function `book`
  failed and returned no result.") or a function that is not registered ("The function `book` is not
  currently available."), wherever it stands in the text.
The specification names the boolean `success`, numeric statuses and the text; `ok: false` and a
"false" spelled as text are the same failure as other APIs write it.
A missing or blank result is "no result".

Sources (see `scorers.qa.tool_calls`): `tool.call` events, where a later event with the same
`tool_call_id` carries the result of the earlier one and updates it (its non-empty arguments and name
replace the earlier ones; a `tool.call` without an id is always a call of its own). RTVI function-call
messages describe the same calls from the pipeline, so they count only for a call that has no
`tool.call` events at all — never both. In RTVI, `arguments` is optional and usually already an
object; when it is absent there is nothing to find invalid. A stopped message with `cancelled: true`
is a bad call ("cancelled"). A stopped message with `cancelled: false` says the call completed: its
`result` is judged when it is there, and when it is not (`scorers.qa.tool_calls.result_not_reported`:
Pipecat below its `FULL` report level) the call is good; `details.results_not_reported` counts them.

Value: good ÷ all calls, rounded to 4 decimals; score: the unrounded share × 100. `details.bad_calls` keeps
the first 20 bad calls, each with why. An LLM judge's answer, when there is one, replaces this result (a later layer).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from models.call_state import CallState
from models.events import Event, Rtvi, ToolCall, has_arguments
from models.results import MetricResult
from scorers.numbers import finite_number
from scorers.qa.base import QaMetric
from scorers.qa.tool_calls import (
    FUNCTION_CALL_STOPPED,
    RTVI_FUNCTION_CALL_TYPES,
    blank_result,
    result_not_reported,
    rtvi_function_call,
)

NO_TOOL_CALLS = "No tool calls"
VALUE_DECIMALS = 4
MAX_BAD_CALLS_LISTED = 20

INVALID_ARGUMENTS = "arguments are not valid JSON"
NO_RESULT = "no result"
CANCELLED = "cancelled"
FAILURE_KEYS = ("error", "errors")
STATUS_KEYS = ("status", "status_code", "statusCode")
FAILED_STATUS_FROM = 400
FAILURE_PREFIXES = ("error", "failed", "failure")
SUCCESS_FLAGS = ("success", "ok")
# What Pipecat's LLM services hand the model in place of a result (`LLMService.
# FUNCTION_CALL_ERROR_MESSAGE_TEMPLATE` and `MISSING_FUNCTION_CALL_MESSAGE_TEMPLATE`): the call failed.
PIPECAT_STAND_IN_FAILURE = re.compile(
    r"the function `[^`]*` (?:failed and returned no result|is not currently available)", re.IGNORECASE
)


def _parse_json(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):  # nested deeper than the parser goes: not JSON we can read
        return False, None


def arguments_problem(arguments: Any) -> str | None:
    """Why the arguments are not valid JSON, or None. Already-decoded values (RTVI) are valid."""
    if isinstance(arguments, str):
        return None if not arguments.strip() or _parse_json(arguments)[0] else INVALID_ARGUMENTS
    return None


def _status(value: Any) -> float | None:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    return finite_number(value)


def result_problem(result: Any) -> str | None:
    """Why the result is missing or looks like a failure, or None for a good result."""
    if blank_result(result):
        return NO_RESULT
    value = result
    if isinstance(result, str):
        parsed, decoded = _parse_json(result)
        value = decoded if parsed else result
    if isinstance(value, str):
        text = value.strip().lower()
        for prefix in FAILURE_PREFIXES:
            if text.startswith(prefix):
                return f"result starts with {prefix!r}"
        stand_in = PIPECAT_STAND_IN_FAILURE.search(value)
        if stand_in is not None:
            return f"result says {stand_in.group(0)!r}"
        return None
    if isinstance(value, dict):
        for key in FAILURE_KEYS:
            if value.get(key) not in (None, False, "", [], {}):
                return f"result has an {key!r} key"
        for key in SUCCESS_FLAGS:
            flag = value.get(key)
            if flag is False or (isinstance(flag, str) and flag.strip().lower() == "false"):
                return f"result says {key}: false"
        for key in STATUS_KEYS:
            status = _status(value.get(key))
            if status is not None and status >= FAILED_STATUS_FROM:
                return f"result {key} {value[key]}"
    return None


@dataclass(slots=True)
class ToolCallRecord:
    tool_call_id: str | None
    name: str | None
    arguments_problem: str | None = None
    result_problem: str | None = NO_RESULT
    result_reported: bool = True

    @property
    def why(self) -> str | None:
        problems = [p for p in (self.arguments_problem, self.result_problem) if p is not None]
        return "; ".join(problems) or None


@dataclass(slots=True)
class ToolCallAcc:
    # Keyed by tool_call_id (a `tool.call` without one gets a key of its own).
    from_events: dict[str, ToolCallRecord] = field(default_factory=dict)
    from_rtvi: dict[str, ToolCallRecord] = field(default_factory=dict)
    calls_without_id: int = 0

    def calls(self) -> dict[str, ToolCallRecord]:
        return self.from_events or self.from_rtvi


class ToolCallAccuracy(QaMetric):
    name = "tool_call_accuracy"
    label = "Tool call accuracy"
    value_meaning = "Share of good tool calls (0 to 1)"
    default_threshold = 80
    judge_kind = "llm"
    handles = frozenset({"tool.call", "rtvi"})
    rtvi_messages = RTVI_FUNCTION_CALL_TYPES

    def start(self) -> ToolCallAcc:
        return ToolCallAcc()

    def update(self, acc: ToolCallAcc, event: Event, call: CallState) -> None:
        if isinstance(event, ToolCall):
            self._tool_call(acc, event)
        elif isinstance(event, Rtvi):
            self._rtvi(acc, event)

    @staticmethod
    def _tool_call(acc: ToolCallAcc, event: ToolCall) -> None:
        d = event.data
        if d.side != "agent":
            return
        key = d.tool_call_id
        if key is None:
            key = f"#{acc.calls_without_id}"
            acc.calls_without_id += 1
        record = acc.from_events.get(key)
        if record is None:
            record = acc.from_events[key] = ToolCallRecord(d.tool_call_id, d.name, arguments_problem(d.arguments))
        else:
            if d.name:
                record.name = d.name
            if has_arguments(d.arguments):
                record.arguments_problem = arguments_problem(d.arguments)
        if d.result is not None:
            record.result_problem = result_problem(d.result)

    @staticmethod
    def _rtvi(acc: ToolCallAcc, event: Rtvi) -> None:
        data = rtvi_function_call(event)
        key = data.get("tool_call_id") if data is not None else None
        if data is None or not isinstance(key, str):
            return  # without an id a message cannot be paired with its call
        record = acc.from_rtvi.get(key)
        if record is None:
            record = acc.from_rtvi[key] = ToolCallRecord(key, None)
        name = data.get("function_name")
        if isinstance(name, str) and name:
            record.name = name
        if "arguments" in data:
            record.arguments_problem = arguments_problem(data["arguments"])
        if event.data.message.type == FUNCTION_CALL_STOPPED:
            record.result_reported = not result_not_reported(data)
            if data.get("cancelled") is True:
                record.result_problem = CANCELLED
            else:
                record.result_problem = result_problem(data.get("result")) if record.result_reported else None

    def finalize(self, acc: ToolCallAcc, call: CallState) -> MetricResult:
        calls = acc.calls()
        if not calls:
            return self.not_applicable(NO_TOOL_CALLS)
        bad = [record for record in calls.values() if record.why is not None]
        good = len(calls) - len(bad)
        share = good / len(calls)
        return self.scored(
            round(share, VALUE_DECIMALS),
            share * 100,
            total=len(calls),
            good=good,
            results_not_reported=sum(1 for record in calls.values() if not record.result_reported),
            bad_calls=[
                {"tool_call_id": r.tool_call_id, "name": r.name, "why": r.why} for r in bad[:MAX_BAD_CALLS_LISTED]
            ],
        )
