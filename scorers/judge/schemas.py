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
from functools import cache
from typing import TYPE_CHECKING, Any

# The `judge.result` event's `qa` when the QA request failed: `{"error": "…"}` (scorers/judge/answers.py).
QA_ERROR_KEY = "error"

if TYPE_CHECKING:
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


# The validators are built on first use: importing jsonschema cost every process 0.1 s at start,
# and only a worker or command that meets a judge's answer needs one.
def _validator(schema: dict[str, Any]) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema)


@cache
def qa_answer_check() -> Draft202012Validator:
    return _validator(qa_answer_schema(ANY_VERDICT))


@cache
def hallucination_check() -> Draft202012Validator:
    return _validator(HALLUCINATION_ANSWER)


@cache
def rating_check() -> Draft202012Validator:
    return _validator(RATING_ANSWER)
