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

from models.cohorts import CohortDefinition
from models.deadletter import DeadLetterDocument
from models.events import EVENT_TYPES, AnyEvent, Batch, Event
from models.results import CallResult

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _document(name: str, title: str, description: str, schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
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


def event_schema(tag: str, cls: type[Event]) -> dict[str, Any]:
    schema, components = _single(cls)
    doc = (cls.__doc__ or "").strip()
    return _document(f"event.{tag}.json", f"callqa event `{tag}`", doc or f"The `{tag}` event (contract v1).",
                     schema, components)


def batch_schema() -> dict[str, Any]:
    (batch, any_event), components = msgspec.json.schema_components([Batch, AnyEvent], ref_template="#/$defs/{name}")
    batch_def = dict(components["Batch"])
    batch_def["properties"] = dict(batch_def["properties"])
    batch_def["properties"]["events"] = {"type": "array", "items": any_event}
    components["Batch"] = batch_def
    return _document("batch.json", "callqa batch envelope",
                     "Several events in one Kafka message: of one call (call_id set) or of several calls of one "
                     "partition (no call_id, key \"batch\").", batch, components)


def result_schema() -> dict[str, Any]:
    from scorers.evaluation.metrics_json import ALWAYS_PRESENT_KEYS

    schema, components = _single(CallResult)
    result = dict(components["CallResult"])
    result["properties"] = dict(result["properties"])
    result["properties"]["evaluation"] = {
        "type": "object",
        "description": "The evaluation harness's metrics.json for this call (always-present keys required; "
                       "conditional keys only when they apply), plus `judge_result` when a judge ran.",
        "required": list(ALWAYS_PRESENT_KEYS),
    }
    components["CallResult"] = result
    return _document("result.json", "callqa call result", "One scored result per call and version on callqa.results.",
                     schema, components)


def all_schemas() -> dict[str, dict[str, Any]]:
    schemas = {f"event.{tag}.json": _rewrite_refs(event_schema(tag, cls)) for tag, cls in EVENT_TYPES.items()}
    schemas["batch.json"] = batch_schema()
    schemas["result.json"] = result_schema()
    schemas["deadletter.json"] = _document("deadletter.json", "callqa dead letter",
                                           "A record of callqa.deadletter.", *_single(DeadLetterDocument))
    schemas["cohort.json"] = _document("cohort.json", "callqa cohort definition",
                                       "A cohort document (callqa.cohorts topic, HTTP API).", *_single(CohortDefinition))
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
