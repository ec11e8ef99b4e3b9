"""The JSON Schemas of the judge's answers: the one sent with the request (`response_format`) and
the one the answer is checked against.

The two differ in one place only. A verdict of an LLM criterion or a natural-language assertion is
sent as `{index, passed: boolean, reason}`, but a verdict that breaks that shape must not sink the
whole answer: it is normalised to `passed: false` with a reason (scorers/judge/answers.py), so the
checking schema accepts any verdict item. Everything else is strict: no extra keys, exact types,
issue types and severities from their lists. Numbers are not range-checked here: they are clamped.
"""

from __future__ import annotations

import copy
from typing import Any

from jsonschema import Draft202012Validator

QA_SCHEMA_NAME = "callqa_qa_judge"
EVALUATION_SCHEMA_NAME = "callqa_evaluation_judge"

ISSUE_TYPES = ("fabrication", "contradiction", "confusion")
ISSUE_SEVERITIES = ("major", "minor")
RATED_METRICS = ("kb_recall", "naturalness", "tool_call_accuracy", "transition_accuracy")
# More issues than this is not an answer about one call; the cap also bounds the recorded event.
MAX_ISSUES = 100

ISSUE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["type", "severity", "text"],
    "properties": {
        "type": {"type": "string", "enum": list(ISSUE_TYPES)},
        "severity": {"type": "string", "enum": list(ISSUE_SEVERITIES)},
        "text": {"type": "string"},
    },
}
HALLUCINATION_ANSWER = {
    "type": "object",
    "additionalProperties": False,
    "required": ["issues"],
    "properties": {"issues": {"type": "array", "items": ISSUE, "maxItems": MAX_ISSUES}},
}
# A 0–100 rating; null when the metric does not apply to the call.
RATING_ANSWER = {
    "type": "object",
    "additionalProperties": False,
    "required": ["score", "reason"],
    "properties": {"score": {"type": ["number", "null"]}, "reason": {"type": "string"}},
}
VERDICT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["index", "passed", "reason"],
    "properties": {"index": {"type": "integer"}, "passed": {"type": "boolean"}, "reason": {"type": "string"}},
}
ANY_VERDICT: dict[str, Any] = {}


def qa_answer_schema(verdict: dict[str, Any] = VERDICT) -> dict[str, Any]:
    properties: dict[str, Any] = {"hallucination": HALLUCINATION_ANSWER}
    properties.update((name, RATING_ANSWER) for name in RATED_METRICS)
    properties["criteria"] = {"type": "array", "items": verdict}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(properties),
        "properties": copy.deepcopy(properties),
    }


def evaluation_answer_schema(with_assertions: bool, verdict: dict[str, Any] = VERDICT) -> dict[str, Any]:
    properties: dict[str, Any] = {"score": {"type": "number"}, "reason": {"type": "string"}}
    if with_assertions:
        properties["nl_assertion_verdicts"] = {"type": "array", "items": verdict}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(properties),
        "properties": copy.deepcopy(properties),
    }


QA_ANSWER_CHECK = Draft202012Validator(qa_answer_schema(ANY_VERDICT))
EVALUATION_ANSWER_CHECK = {
    with_assertions: Draft202012Validator(evaluation_answer_schema(with_assertions, ANY_VERDICT))
    for with_assertions in (False, True)
}
HALLUCINATION_CHECK = Draft202012Validator(HALLUCINATION_ANSWER)
RATING_CHECK = Draft202012Validator(RATING_ANSWER)
