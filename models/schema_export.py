"""JSON Schemas of every wire document, generated from the typed models (the single definition).

`python -m models.schema_export schemas/` rewrites the files; tests/test_schemas.py fails when the
committed files and the models disagree.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from models.alert_rules import AlertRule
from models.alerts import Alert
from models.cohorts import CohortDefinition
from models.deadletter import DeadLetterDocument
from models.events import EVENT_TYPES, AnyEvent, Batch, Event
from models.results import CallResult

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _document(
    name: str, title: str, description: str, schema: dict[str, Any], components: dict[str, Any]
) -> dict[str, Any]:
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": f"callqa/{name}",
        "title": title,
        "description": description,
        **schema,
        "$defs": components,
    }


def _rewrite_refs(node: Any) -> Any:
    """msgspec points at `#/$defs/X`; keep that form (draft 2020-12)."""
    if isinstance(node, dict):
        return {k: _rewrite_refs(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_rewrite_refs(v) for v in node]
    return node


def _single(type_: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    (schema,), components = msgspec.json.schema_components([type_], ref_template="#/$defs/{name}")
    return schema, components


def _ids_not_empty(components: dict[str, Any]) -> dict[str, Any]:
    """Every event's `event_id` and `call_id` as the decoder reads them: strings of at least one
    character (an empty one identifies nothing and is dead-lettered)."""
    for name, component in components.items():
        properties = component.get("properties", {})
        if "event_id" in properties and "call_id" in properties:
            properties = {**properties, **{key: {**properties[key], "minLength": 1} for key in ("event_id", "call_id")}}
            components[name] = {**component, "properties": properties}
    return components


# What the decoder refuses that a JSON Schema cannot: draft 2020-12 counts 1.0 as an integer.
WHOLE_NUMBERS_COMMENT = (
    "Integer fields (v, ts_ms, turn_index, partition, ...) must be written as integers: "
    "1.0 or 1e3 is refused by the decoder, though JSON Schema counts them as integers. "
    "Text must be valid Unicode: a lone surrogate escape (\\ud800) is refused."
)


def event_schema(tag: str, cls: type[Event]) -> dict[str, Any]:
    schema, components = _single(cls)
    _ids_not_empty(components)
    doc = (cls.__doc__ or "").strip()
    # A message with an `events` key is read as a batch: an event cannot also carry one.
    schema = {**schema, "not": {"required": ["events"]}, "$comment": WHOLE_NUMBERS_COMMENT}
    return _document(
        f"event.{tag}.json", f"callqa event `{tag}`", doc or f"The `{tag}` event (contract v1).", schema, components
    )


def batch_schema() -> dict[str, Any]:
    (batch, any_event), components = msgspec.json.schema_components([Batch, AnyEvent], ref_template="#/$defs/{name}")
    _ids_not_empty(components)
    batch_def = dict(components["Batch"])
    batch_def["properties"] = dict(batch_def["properties"])
    batch_def["properties"]["events"] = {"type": "array", "items": any_event, "minItems": 1}
    batch_def["properties"]["call_id"] = {
        **batch_def["properties"]["call_id"],
        "anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}],
    }
    components["Batch"] = batch_def
    return _document(
        "batch.json",
        "callqa batch envelope",
        "Several events in one Kafka message: of one call (call_id set, and every event's call_id "
        'the same) or of several calls of one partition (no call_id, key "batch"). The worker '
        "dead-letters a bad event alone and keeps the rest; this schema, for a producer checking "
        "what it sends, accepts a batch only when every event is valid.",
        {**batch, "$comment": WHOLE_NUMBERS_COMMENT},
        components,
    )


def result_schema() -> dict[str, Any]:
    from scorers.evaluation.metrics_json import ALWAYS_PRESENT_KEYS

    schema, components = _single(CallResult)
    result = dict(components["CallResult"])
    result["properties"] = dict(result["properties"])
    # `is_task_successful` is written whenever `is_successful` is a verdict (a bool), not with "N/A".
    task = "is_task_successful"
    result["properties"]["evaluation"] = {
        "type": "object",
        "description": "The evaluation harness's metrics.json for this call (always-present keys required; "
        "conditional keys only when they apply), plus `judge_result` when a judge ran.",
        "required": [key for key in ALWAYS_PRESENT_KEYS if key != task],
        "if": {"properties": {"is_successful": {"type": "boolean"}}},
        "then": {"required": [task]},
    }
    components["CallResult"] = result
    return _document(
        "result.json",
        "callqa call result",
        "One scored result per call and version on callqa.results.",
        schema,
        components,
    )


def cohort_schema() -> dict[str, Any]:
    """The cohort document as the decoder reads it: a criterion without `kind` is a rule, a cohort
    that is not a delete needs a name, metrics are the registry's, `in`/`not_in` compare with a list,
    the size limits, a rule's field a path into a call's result. (Unique names within a cohort and a
    rule value's depth and size are checked by the worker only.)"""
    from models import cohorts as limits
    from scorers.registry import qa_metric_names

    schema, components = _single(CohortDefinition)
    definition = dict(components["CohortDefinition"])
    properties = dict(definition["properties"])
    properties["cohort_id"] = {"type": "string", "pattern": NOT_BLANK}
    properties["criteria"] = {
        **properties["criteria"],
        "items": {"anyOf": properties["criteria"]["items"]["anyOf"]},
    }  # `kind` may be absent
    definition["properties"] = properties
    definition["if"] = {"properties": {"deleted": {"const": True}}, "required": ["deleted"]}
    # (A delete needs only its id: the limits hold for a cohort that is kept.)
    definition["else"] = {
        "required": ["name"],
        "properties": {
            "cohort_id": {"maxLength": limits.MAX_NAME_CHARS, "pattern": NO_CONTROL_CHARACTERS},
            "name": _not_blank(limits.MAX_NAME_CHARS),
            "agents": {
                "maxItems": limits.MAX_AGENT_PATTERNS,
                "items": {"minLength": 1, "maxLength": limits.MAX_NAME_CHARS},
            },
            "metrics": {"maxItems": limits.MAX_METRICS},
            "criteria": {"maxItems": limits.MAX_CRITERIA},
        },
    }
    rule = dict(components["RuleCriterion"])
    rule["properties"] = {
        **rule["properties"],
        "kind": {"enum": ["rule"], "default": "rule"},
        "name": _not_blank(limits.MAX_NAME_CHARS),
        "field": {
            "type": "string",
            "maxLength": limits.MAX_NAME_CHARS,
            "pattern": _result_path_pattern(limits.RESULT_FIELDS, qa_metric_names()),
        },
    }
    rule["required"] = [key for key in rule["required"] if key != "kind"]
    rule["allOf"] = [
        {
            "if": {"properties": {"op": {"enum": sorted(ops)}}, "required": ["op"]},
            "then": {"properties": {"value": value}, **({"required": ["value"]} if required else {})},
        }
        for ops, value, required in (
            (limits.LIST_OPS, {"type": "array"}, True),
            (limits.ORDERING_OPS, {"type": ["number", "string"]}, True),
            ({"contains"}, {"type": ["number", "string", "boolean"]}, True),
            ({"exists"}, {"type": ["boolean", "null"]}, False),
        )
    ]
    llm = dict(components["LlmCriterion"])
    llm["properties"] = {
        **llm["properties"],
        "name": _not_blank(limits.MAX_NAME_CHARS),
        "question": _not_blank(limits.MAX_QUESTION_CHARS),
    }
    metric = dict(components["CohortMetric"])
    metric["properties"] = {**metric["properties"], "metric": {"enum": qa_metric_names()}}
    components.update(CohortDefinition=definition, RuleCriterion=rule, LlmCriterion=llm, CohortMetric=metric)
    return _document(
        "cohort.json",
        "callqa cohort definition",
        "A cohort document (callqa.cohorts topic, HTTP API).",
        schema,
        components,
    )


NOT_BLANK = "\\S"
NO_CONTROL_CHARACTERS = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"


def _not_blank(max_chars: int) -> dict[str, Any]:
    """Text with something in it, up to `max_chars` (a name, a question)."""
    return {"type": "string", "pattern": NOT_BLANK, "maxLength": max_chars}


def _result_path_pattern(result_fields: tuple[str, ...], metric_names: list[str]) -> str:
    """A dotted path from a call result's top level; under `metrics`, a known metric first."""
    others = "|".join(field for field in result_fields if field != "metrics")
    return f"^(?:(?:{others})(?:\\.[^.]+)*|metrics(?:\\.(?:{'|'.join(metric_names)})(?:\\.[^.]+)*)?)$"


def alert_rule_schema() -> dict[str, Any]:
    """The rule as the worker checks it, but for what a schema cannot compare: clear_above against
    fire_below, the long window against the window."""
    from models import alert_rules as rules
    from scorers.registry import qa_metric_names

    schema, components = _single(AlertRule)
    rule = dict(components["AlertRule"])
    rule["properties"] = {**rule["properties"], "name": {"type": "string", "pattern": NOT_BLANK}}
    kinds = "|".join(rules.SCOPE_KINDS)
    rule["if"] = {"properties": {"deleted": {"const": True}}, "required": ["deleted"]}
    rule["else"] = {
        "required": ["metric", "window_s", "fire_below"],
        "properties": {
            "scope": {"pattern": f"^(?:{rules.SCOPE_ALL}|(?:{kinds}):(?:\\*|[^*]+))$"},
            "metric": {"enum": [*qa_metric_names(), rules.WEIGHTED_SCORE, rules.CONVERSATION]},
            "fire_below": {"type": "number", "exclusiveMinimum": 0},
            # (Seconds are counted in whole milliseconds: 0.0005 s rounds to none.)
            "window_s": {"type": "number", "exclusiveMinimum": 0.0005},
        },
        "if": {"properties": {"metric": {"const": rules.WEIGHTED_SCORE}}, "required": ["metric"]},
        "then": {"required": ["scope"], "properties": {"scope": {"pattern": "^cohort:"}}},
    }
    components["AlertRule"] = rule
    return _document(
        "alert-rule.json",
        "callqa alert rule",
        "A rule of a rules file and a record of callqa.alert-rules (key = name). The worker also "
        "checks what a schema cannot say: clear_above >= fire_below, the long window longer than "
        "the window by a millisecond.",
        schema,
        components,
    )


def all_schemas() -> dict[str, dict[str, Any]]:
    schemas = {f"event.{tag}.json": _rewrite_refs(event_schema(tag, cls)) for tag, cls in EVENT_TYPES.items()}
    schemas["batch.json"] = batch_schema()
    schemas["result.json"] = result_schema()
    schemas["deadletter.json"] = _document(
        "deadletter.json", "callqa dead letter", "A record of callqa.deadletter.", *_single(DeadLetterDocument)
    )
    schemas["cohort.json"] = cohort_schema()
    schemas["alert.json"] = _document(
        "alert.json",
        "callqa alert event",
        "A record of callqa.alerts: one state transition of one rule on one scope (key = dedupe_key).",
        *_single(Alert),
    )
    schemas["alert-rule.json"] = alert_rule_schema()
    return schemas


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write(directory: str) -> list[str]:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in sorted(all_schemas().items()):
        (out / name).write_text(render(schema))
        written.append(name)
    return written


if __name__ == "__main__":
    print("\n".join(write(sys.argv[1] if len(sys.argv) > 1 else "schemas")))
