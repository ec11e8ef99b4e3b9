"""What the LLM judge needs that the call's state does not already hold.

The call state keeps the agent's configuration, the variables and the turns; the predicted actions
live in the `predicted_actions` accumulator. This scorer keeps the rest, capped so that a long call
costs a bounded amount of state and of prompt:
- knowledge base retrievals: the first `MAX_RETRIEVALS` (as knowledge base recall considers), each
  passage cut to `MAX_PASSAGE_CHARS`;
- tool calls with their arguments and results (cut to `MAX_TOOL_TEXT_CHARS`), the first
  `MAX_TOOL_CALLS` of each side. As for tool call accuracy, `tool.call` events are the source when a
  call has any; RTVI function-call messages stand in only when it has none, never both. A later
  `tool.call` with the same `tool_call_id` completes the earlier one;
- node transitions: the first `MAX_TRANSITIONS`, as (from, to), a missing `from` being the previous
  transition's `to`.
Whatever is left out is counted, so the prompt can say so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from models.call_state import CallState
from models.events import Event, KbRetrieval, NodeTransition, Rtvi, ToolCall, has_arguments
from scorers.base import Scorer
from scorers.qa.kb_recall import MAX_RETRIEVALS
from scorers.qa.tool_calls import FUNCTION_CALL_STOPPED, RTVI_FUNCTION_CALL_TYPES, blank_result, result_not_reported

MAX_PASSAGE_CHARS = 1_000
MAX_TOOL_CALLS = 50
MAX_TOOL_TEXT_CHARS = 1_000
MAX_TRANSITIONS = 100


def cut(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


UNPRINTABLE = "[a value nested too deeply to show]"


def compact_json(value: Any) -> str:
    """A tool's arguments or result as one line of text (a string is kept as it is)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except TypeError:  # a MessagePack map with keys of mixed types cannot be sorted
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):  # nested deeper than the encoder goes
        return UNPRINTABLE


@dataclass(slots=True)
class RetrievalRecord:
    query: str | None
    passages: list[str]


@dataclass(slots=True)
class ToolRecord:
    name: str | None
    arguments: str | None = None
    result: str | None = None
    cancelled: bool = False
    # Completed, but the pipeline did not say with what (Pipecat below its FULL report level).
    result_not_reported: bool = False


@dataclass(slots=True)
class ToolLog:
    """One source of one side's tool calls, keyed by tool_call_id (or `#n` for a call without one)."""

    calls: dict[str, ToolRecord] = field(default_factory=dict)
    without_id: int = 0
    left_out: int = 0

    def record(self, tool_call_id: str | None) -> ToolRecord | None:
        """The call's record, created when there is room; None when it is beyond the cap."""
        key = tool_call_id
        if key is None:
            key = f"#{self.without_id}"
            self.without_id += 1
        record = self.calls.get(key)
        if record is None:
            if len(self.calls) >= MAX_TOOL_CALLS:
                self.left_out += 1
                return None
            record = self.calls[key] = ToolRecord(None)
        return record


@dataclass(slots=True)
class JudgeContextAcc:
    retrievals: list[RetrievalRecord] = field(default_factory=list)
    retrievals_left_out: int = 0
    # (side, source) → calls; source "event" (tool.call) or "rtvi".
    tools: dict[tuple[str, str], ToolLog] = field(default_factory=dict)
    transitions: list[tuple[str | None, str]] = field(default_factory=list)
    transitions_left_out: int = 0
    last_node: str | None = None

    def tool_calls(self, side: str) -> ToolLog:
        """The side's tool calls: from `tool.call` events when there are any, else from RTVI."""
        events = self.tools.get((side, "event"))
        if events is not None and events.calls:
            return events
        return self.tools.get((side, "rtvi")) or ToolLog()


class JudgeContext(Scorer):
    name = "judge_context"
    handles = frozenset({"kb.retrieval", "tool.call", "rtvi", "node.transition"})
    # Only function-call messages carry tool calls; the fold may skip the rest of RTVI traffic.
    rtvi_messages = RTVI_FUNCTION_CALL_TYPES

    def start(self) -> JudgeContextAcc:
        return JudgeContextAcc()

    def update(self, acc: JudgeContextAcc, event: Event, call: CallState) -> None:
        if isinstance(event, KbRetrieval):
            if len(acc.retrievals) >= MAX_RETRIEVALS:
                acc.retrievals_left_out += 1
            else:
                passages = [cut(p, MAX_PASSAGE_CHARS) for p in event.data.passages]
                acc.retrievals.append(RetrievalRecord(event.data.query, passages))
        elif isinstance(event, ToolCall):
            self._tool_call(acc, event)
        elif isinstance(event, Rtvi):
            self._rtvi(acc, event)
        elif isinstance(event, NodeTransition):
            to = event.data.to
            from_ = event.data.from_ if event.data.from_ is not None else acc.last_node
            acc.last_node = to
            if len(acc.transitions) >= MAX_TRANSITIONS:
                acc.transitions_left_out += 1
            else:
                acc.transitions.append((from_, to))

    @staticmethod
    def _tool_call(acc: JudgeContextAcc, event: ToolCall) -> None:
        d = event.data
        log = acc.tools.setdefault((d.side, "event"), ToolLog())
        record = log.record(d.tool_call_id)
        if record is None:
            return
        if d.name:
            record.name = d.name
        if has_arguments(d.arguments):
            record.arguments = cut(compact_json(d.arguments), MAX_TOOL_TEXT_CHARS)
        if d.result is not None:
            record.result = cut(compact_json(d.result), MAX_TOOL_TEXT_CHARS)

    @staticmethod
    def _rtvi(acc: JudgeContextAcc, event: Rtvi) -> None:
        message = event.data.message
        if message.type not in RTVI_FUNCTION_CALL_TYPES or not isinstance(message.data, dict):
            return
        data = message.data
        tool_call_id = data.get("tool_call_id")
        if not isinstance(tool_call_id, str):
            return  # without an id a message cannot be paired with its call
        record = acc.tools.setdefault((event.data.side, "rtvi"), ToolLog()).record(tool_call_id)
        if record is None:
            return
        name = data.get("function_name")
        if isinstance(name, str) and name:
            record.name = name
        if data.get("arguments") is not None:
            record.arguments = cut(compact_json(data["arguments"]), MAX_TOOL_TEXT_CHARS)
        if message.type == FUNCTION_CALL_STOPPED:
            record.cancelled = data.get("cancelled") is True
            record.result_not_reported = result_not_reported(data)
            if not blank_result(data.get("result")):
                record.result = cut(compact_json(data["result"]), MAX_TOOL_TEXT_CHARS)
