"""The field tables of docs/reference/events.md, rendered from the JSON Schemas in `schemas/`.

The reference is prose written by hand around one table per event type; each table sits between
`<!-- fields: TYPE -->` and `<!-- /fields -->` and is rendered here from `schemas/event.TYPE.json`
(field, type, required, allowed values), with the meaning and unit of each field from `FIELD_NOTES`.
A test renders the tables again and compares, so a field added to `models/events.py` without a line
in the reference fails it. `python -m models.contract_reference docs/reference/events.md` rewrites them.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"

# What each field means and in which unit; by `TYPE.field` (nested: `TYPE.data.scenario.name`), or by
# `*.field` for the envelope every event shares. Times: see the reference's "Times" section.
FIELD_NOTES: dict[str, str] = {
    "*.v": "Contract version: always 1.",
    "*.event_id": "Unique within the call; the same event sent again (same id, type and ts_ms) is skipped.",
    "*.call_id": "The call; also the Kafka key. One call across all producers.",
    "*.ts_ms": "Event time: Unix epoch ms (UTC), from a synchronised clock.",
    "*.type": "The event type, which fixes the shape of `data`.",
    "*.data": "The event's fields (below).",
    "call.started.data.agent_id": "The agent (bot, prompt version) answering the call.",
    "call.started.data.cohort_ids": "Cohorts the call belongs to, besides those its agent_id matches.",
    "call.started.data.run_id": "The evaluation run this (simulated) call belongs to.",
    "call.started.data.scenario": "The evaluation scenario a simulated call runs.",
    "call.started.data.scenario.name": "Scenario name (its domain prefix, e.g. `airline_`, groups run summaries).",
    "call.started.data.scenario.domain": "Scenario domain.",
    "call.started.data.scenario.description": "What the scenario tests.",
    "call.started.data.scenario.success_signals": "Signals that decide is_successful (else the harness's default set).",
    "call.started.data.scenario.reference_answer": "Expected tool calls (action list) to match.",
    "call.started.data.scenario.ignore_capitalization": "Action match ignores case.",
    "call.started.data.scenario.ignore_punctuation": "Action match ignores punctuation.",
    "call.started.data.scenario.clean_text": "Action match normalises text.",
    "call.started.data.scenario.disallow_extra_items": "Action match fails on extra tool calls.",
    "call.started.data.scenario.optimal_action_pairing": (
        "Pair reference and predicted actions so that a valid pairing is always found (the harness pairs first-fit)."
    ),
    "call.started.data.scenario.expected_db_hash": "Expected hash of the agent's end DB state.",
    "call.started.data.scenario.expected_db": (
        "The expected end DB state itself (optional): a failed `db_state` match then carries a diff of what differs."
    ),
    "call.started.data.scenario.db_state_assertions": "Assertions on the agent's end DB state.",
    "call.started.data.scenario.nl_assertions": "Natural-language assertions for the LLM judge.",
    "call.started.data.scenario.conversation_end_policy": "What counts as a clean exit.",
    "call.started.data.scenario.min_agent_turns": "Fewer agent turns than this: the scenario stalled (fails).",
    "call.started.data.scenario.judge": "Ask the evaluation judge.",
    "call.started.data.scenario.judge_threshold": "Judge score (0 to 1) at which the judge passes.",
    "call.started.data.scenario.judge_include_conversation": "Give the judge the transcript.",
    "call.started.data.agent_config": "What the agent was given (grounds hallucination).",
    "call.started.data.agent_config.prompt": "The agent's system prompt.",
    "call.started.data.agent_config.flow": "The agent's conversation flow (Pipecat Flows config or text).",
    "call.started.data.variables": "The call's variables (customer name, order id…); ground hallucination.",
    "call.started.data.inactivity_timeout_s": "Seconds of silence after which the call is swept (default 120).",
    "turn.data.role": "Who spoke.",
    "turn.data.text": "What was said (the final transcript for the user, the spoken text for the agent).",
    "turn.data.start_ms": "When the turn started: ms from the start of the call.",
    "turn.data.end_ms": "When the turn ended: ms from the start of the call.",
    "turn.data.words": "Word timings `[word, start_ms, end_ms]`, ms from the start of the call.",
    "rtvi.data.message": "A raw RTVI server message, as Pipecat sends it to its client.",
    "rtvi.data.message.type": "The RTVI message type (`metrics`, `bot-started-speaking`, …).",
    "rtvi.data.message.label": "The RTVI label.",
    "rtvi.data.message.data": "The message's payload, as RTVI defines it.",
    "rtvi.data.side": "Whose pipeline sent it: the agent's, or a simulated user's.",
    "latency.data.latency_ms": "One handoff: the user's end of speech to the agent's start, in ms.",
    "latency.data.user_transcript": "The user's turn before the handoff.",
    "latency.data.agent_transcript": "The agent's answer after it.",
    "tool.call.data.name": "The tool (function) name.",
    "tool.call.data.arguments": 'Arguments: JSON text or the decoded object; "" or {} for none.',
    "tool.call.data.tool_call_id": "Pairs events of the same call (several events may describe one call).",
    "tool.call.data.result": "What the tool returned: any JSON value; null/absent: no result.",
    "tool.call.data.side": "Whose tool: the agent's, or a simulated user's.",
    "kb.retrieval.data.passages": "The passages the knowledge base returned.",
    "kb.retrieval.data.query": "What was looked up.",
    "node.transition.data.to": "The flow node entered.",
    "node.transition.data.from": "The node left.",
    "transfer.data.phase": "Transfer progress.",
    "transfer.data.target": "Where the call is transferred to.",
    "db.state.data.side": "Whose database.",
    "db.state.data.hash": "Hash of the database state.",
    "db.state.data.db": "The database state itself.",
    "call.ended.data.stop_reason": 'Why the call ended: see "Stop reasons".',
    "call.ended.data.reason": "Free text detail (e.g. `call_transfer`, `customer_hangup`).",
    "call.ended.data.end_conversation_tool_called": "The agent called its end-of-conversation tool.",
    "call.ended.data.simulator_end_reported": "The simulated user ended the conversation.",
    "call.ended.data.trace_metrics": "The harness's trace metrics, kept in the result.",
    "call.annotated.data.user_sentiment": "Post-call sentiment of the user.",
    "transcript.corrected.data.turn_index": "0-based over all of the call's turns, in arrival order; a user turn.",
    "transcript.corrected.data.text": "The corrected text.",
    "transcript.corrected.data.original": "The text it replaces, as sent (refused if it differs).",
    "judge.result.data.model": "The judge's model.",
    "judge.result.data.qa": "The QA-metric judge's parsed answer.",
    "judge.result.data.evaluation": "The evaluation judge's answer (judge_result.json).",
    "judge.result.data.criteria": "Verdicts of a cohort's LLM criteria.",
    "judge.result.data.error": "Why the judge could not answer.",
    "judge.result.data.input": "What the judge was asked.",
    "attempt.discarded.data.reason": "Why the harness discarded the attempt.",
    "watermark.data.end_of_input": "Nothing at all follows: sweep the open calls (of `calls` when given).",
    "watermark.data.partition": "The partition it was sent to.",
    "watermark.data.calls": "The producer's calls on that partition (an end of input sweeps only these).",
    "watermark.data.reset": (
        "An operator's reset (`callqa watermark reset`): the partition's time is set to `ts_ms`, even back."
    ),
}

_FIELDS_BLOCK = re.compile(r"(<!-- fields: (?P<type>[a-z.]+) -->\n)(?P<table>.*?)(<!-- /fields -->)", re.DOTALL)


def event_types() -> list[str]:
    return sorted(p.name[len("event.") : -len(".json")] for p in SCHEMAS.glob("event.*.json"))


def fields(event_type: str) -> Iterator[tuple[str, dict[str, Any], bool]]:
    """(dotted name, schema, required) of every field of an event type, envelope first, nested
    objects flattened."""
    schema = json.loads((SCHEMAS / f"event.{event_type}.json").read_text())
    defs = schema["$defs"]
    yield from _walk(defs, _deref(defs, schema), "")


def _deref(defs: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    return defs[schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema


def _walk(defs: dict[str, Any], obj: dict[str, Any], prefix: str) -> Iterator[tuple[str, dict[str, Any], bool]]:
    required = set(obj.get("required", ()))
    for name, schema in obj.get("properties", {}).items():
        yield prefix + name, schema, name in required
        nested = _object_of(defs, schema)
        if nested is not None:
            yield from _walk(defs, nested, f"{prefix}{name}.")


def _object_of(defs: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any] | None:
    for option in [schema, *schema.get("anyOf", ())]:
        if "$ref" in option:
            return _deref(defs, option)
    return None


def type_of(schema: dict[str, Any]) -> str:
    """A field's type in words, with its allowed values and bounds; "or null" where null is allowed."""
    if "anyOf" in schema:
        options = [type_of(option) for option in schema["anyOf"] if option.get("type") != "null"]
        text = " or ".join(options)
        return text + " or null" if any(o.get("type") == "null" for o in schema["anyOf"]) else text
    if "$ref" in schema:
        return "object"
    if "enum" in schema:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "prefixItems" in schema:
        return "[" + ", ".join(type_of(item) for item in schema["prefixItems"]) + "]"
    kind = schema.get("type")
    if kind == "array":
        return f"array of ({type_of(schema['items'])})" if "items" in schema else "array"
    if kind is None:
        return "any JSON value"
    bounds = []
    if "minLength" in schema:
        bounds.append("non-empty" if schema["minLength"] == 1 else f"≥ {schema['minLength']} chars")
    for key, sign in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤")):
        if key in schema:
            bounds.append(f"{sign} {_number(schema[key])}")
    return str(kind) + (f" ({', '.join(bounds)})" if bounds else "")


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else str(value)


def note_for(event_type: str, name: str) -> str:
    """The field's line in FIELD_NOTES (a KeyError names a field the reference does not explain)."""
    return FIELD_NOTES[f"*.{name}"] if "." not in name else FIELD_NOTES[f"{event_type}.{name}"]


def table(event_type: str) -> str:
    rows = ["| field | type and allowed values | required | default | meaning |", "|---|---|---|---|---|"]
    for name, schema, required in fields(event_type):
        default = "" if required or "default" not in schema else f"`{json.dumps(schema['default'])}`"
        rows.append(
            f"| `{name}` | {type_of(schema).replace('|', '&#124;')} | {'yes' if required else 'no'} "
            f"| {default} | {note_for(event_type, name)} |"
        )
    return "\n".join(rows) + "\n"


def render(document: str) -> str:
    """`document` with every fields block rendered again from the schemas."""
    return _FIELDS_BLOCK.sub(lambda m: m.group(1) + table(m.group("type")) + m.group(4), document)


def documented_types(document: str) -> list[str]:
    return sorted(m.group("type") for m in _FIELDS_BLOCK.finditer(document))


def main(argv: list[str]) -> None:
    path = Path(argv[0])
    path.write_text(render(path.read_text()))


if __name__ == "__main__":
    main(sys.argv[1:])
