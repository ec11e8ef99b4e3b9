"""A QA cohort: which calls it scores, the metric judges it counts, and its resolution criteria.

One definition is the document on the compacted topic `callqa.cohorts` (key = `cohort_id`) and the body
of the HTTP API (`POST`/`PUT /qa/cohorts`, `GET` returns the same shape). An example:

    {
      "cohort_id": "billing",
      "name": "Billing line",
      "agents": ["billing-*"],
      "pass_threshold": 70,
      "metrics": [
        {"metric": "hallucination", "weight": 2, "threshold": 80},
        {"metric": "wer", "weight": 1},
        {"metric": "latency"}
      ],
      "criteria": [
        {"name": "ended normally", "field": "evaluation.stop_reason", "op": "eq", "value": "[EXIT]"},
        {"name": "issue resolved", "kind": "llm", "question": "Did the agent resolve the caller's issue?"}
      ]
    }

Membership: a call belongs to the cohort when its `cohort_ids` contain `cohort_id`, or when its
`agent_id` matches one of `agents` (exact ids or fnmatch globs such as `billing-*`, case-sensitive).

Metrics: `weight` 0 to 100 (default 1); `threshold` 0 to 100, or null for the metric's default pass-at.

Criteria come in two kinds:
- `rule` (the default when `kind` is left out): a deterministic condition on one field of the call's
  result, named by a dotted path from the result's top level (`evaluation.stop_reason`,
  `evaluation.total_turns`, `agent_id`, `metrics.latency.value`, `metrics.wer.score`; a number
  segment indexes a list). See `CriterionOp` for the operators.
- `llm`: a yes/no `question` for the LLM judge; its verdict arrives later as a `judge.result` event
  (`criteria[name] = {passed, reason}`), and until then the criterion does not apply.

`pass_threshold` (0 to 100, default 70) is what the call's weighted score must reach for the cohort's
verdict to pass. A document with `deleted: true` removes the cohort (only `cohort_id` is needed).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Annotated, Any, Literal, TypeGuard, cast, get_args

import msgspec
from msgspec import Meta, Struct

from models.documents import decode_document, split_validation_error

DEFAULT_WEIGHT = 1
# The seed leaves the weighted score's pass mark open; 70 matches the most common metric pass-at.
DEFAULT_PASS_THRESHOLD = 70

# Weights, thresholds and the pass threshold are all on the 0 to 100 scale of a score.
ZeroToHundred = Annotated[int, Meta(ge=0, le=100)] | Annotated[float, Meta(ge=0, le=100)]

CriterionOp = Literal["eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "contains", "exists"]
"""eq/ne: equal or not (1 == 1.0, but true is not 1); lt/le/gt/ge: both numbers or both strings;
in/not_in: the field's value is (not) one of `value` (a list); contains: a string field contains the
text `value`, a list field contains the element `value`, an object field has the key `value`;
exists: the field is present and not null (`value: false` asks for the opposite)."""

CRITERION_OPS: tuple[str, ...] = get_args(CriterionOp)
ORDERING_OPS = frozenset({"lt", "le", "gt", "ge"})
LIST_OPS = frozenset({"in", "not_in"})

# The top-level fields of a call's result that a rule criterion may name.
RESULT_FIELDS: tuple[str, ...] = (
    "call_id",
    "version",
    "final",
    "agent_id",
    "cohort_ids",
    "run_id",
    "ended_ts_ms",
    "metrics",
    "evaluation",
)


class CohortError(ValueError):
    """A cohort document that cannot be accepted; the message names the field and the problem."""


class CohortMetric(Struct, forbid_unknown_fields=True):
    metric: str
    weight: ZeroToHundred = DEFAULT_WEIGHT
    threshold: ZeroToHundred | None = None


class RuleCriterion(Struct, tag_field="kind", tag="rule", forbid_unknown_fields=True):
    name: str
    field: str
    op: CriterionOp
    value: Any = None
    weight: ZeroToHundred = DEFAULT_WEIGHT


class LlmCriterion(Struct, tag_field="kind", tag="llm", forbid_unknown_fields=True):
    name: str
    question: str
    weight: ZeroToHundred = DEFAULT_WEIGHT


Criterion = RuleCriterion | LlmCriterion


class CohortDefinition(Struct, forbid_unknown_fields=True, kw_only=True):
    cohort_id: str
    name: str = ""
    agents: list[str] = []
    metrics: list[CohortMetric] = []
    criteria: list[Criterion] = []
    pass_threshold: ZeroToHundred = DEFAULT_PASS_THRESHOLD
    deleted: bool = False


# ------------------------------------------------------------------------------------------ decoding


def decode_cohort(
    document: bytes | str | dict[str, Any] | CohortDefinition, known_metrics: Iterable[str]
) -> CohortDefinition:
    """Decode and validate a cohort document (JSON or MessagePack bytes, a dict, or a definition).

    `known_metrics` are the QA metric names a cohort may count (the registry's). Raises `CohortError`.
    """
    if isinstance(document, CohortDefinition):
        definition = document
    else:
        data = _with_default_kinds(decode_document(document, CohortError, "cohort"))
        try:
            definition = msgspec.convert(data, CohortDefinition)
        except msgspec.ValidationError as exc:
            problems = _type_problems(data, list(known_metrics)) or [_explain(exc)]
            raise CohortError(f"invalid cohort{_subject(data)}: {_listed(problems)}") from None
    validate_cohort(definition, known_metrics)
    return definition


def _type_problems(data: Any, known_metrics: list[str]) -> list[str]:
    """Every problem of a document that does not convert, not only the first the decoder meets: the
    document without its lists, then each metric and each criterion on its own (with the metric names
    a converted entry names). Empty when the document is not an object."""
    if not isinstance(data, dict):
        return []
    lists = {key: data[key] for key in ("metrics", "criteria") if isinstance(data.get(key), list)}
    problems: list[str] = []
    try:
        msgspec.convert({key: value for key, value in data.items() if key not in lists}, CohortDefinition)
    except msgspec.ValidationError as exc:
        problems.append(_explain(exc))
    for key, item_type in (("metrics", CohortMetric), ("criteria", Criterion)):
        for i, item in enumerate(lists.get(key, [])):
            try:
                converted = msgspec.convert(item, item_type)
            except msgspec.ValidationError as exc:
                problem, path = split_validation_error(exc)
                problems.append(_explain_at(f"{key}[{i}]" + (f".{path}" if path else ""), problem))
                continue
            if isinstance(converted, CohortMetric) and converted.metric not in known_metrics:
                problems.append(
                    f"`metrics[{i}]`: unknown metric {converted.metric!r} (known metrics: {', '.join(known_metrics)})"
                )
    return problems


def encode_cohort(definition: CohortDefinition) -> bytes:
    """The MessagePack value written to `callqa.cohorts`."""
    return msgspec.msgpack.encode(definition)


def cohort_to_builtins(definition: CohortDefinition) -> dict[str, Any]:
    """The JSON-ready document the HTTP API returns."""
    return cast("dict[str, Any]", msgspec.to_builtins(definition))


def _with_default_kinds(data: Any) -> Any:
    """A criterion without `kind` is a rule (the msgspec tagged union needs the tag spelled out)."""
    if not isinstance(data, dict) or not isinstance(data.get("criteria"), list):
        return data
    criteria = [{"kind": "rule", **c} if isinstance(c, dict) and "kind" not in c else c for c in data["criteria"]]
    return {**data, "criteria": criteria}


def _subject(data: Any) -> str:
    cohort_id = data.get("cohort_id") if isinstance(data, dict) else None
    return f" {cohort_id!r}" if isinstance(cohort_id, str) and cohort_id else ""


def _explain(exc: msgspec.ValidationError) -> str:
    """msgspec's "Expected `int` <= 100 - at `$.metrics[0].weight`" as "`metrics[0].weight`: Expected …"."""
    problem, path = split_validation_error(exc)
    return _explain_at(path, problem)


def _explain_at(path: str, problem: str) -> str:
    # A weight or threshold is a whole number or a decimal (ZeroToHundred): msgspec names the first
    # type of the union it tried, which would read as if 1.5 were refused.
    problem = re.sub(r"Expected `(?:int|float)` ([<>]=) (\d+)(?:\.0)?\b", r"Expected a number \1 \2", problem)
    if not path:
        return problem
    if path.endswith(".op"):
        problem += f" (known ops: {', '.join(CRITERION_OPS)})"
    elif path.endswith(".kind"):
        problem += " (known kinds: rule, llm)"
    return f"`{path}`: {problem}"


# ---------------------------------------------------------------------------------------- validation


def validate_cohort(definition: CohortDefinition, known_metrics: Iterable[str]) -> None:
    """The checks a type cannot express: known and unique names, values that fit their operator."""
    problems = _problems(definition, list(known_metrics))
    if problems:
        subject = f" {definition.cohort_id!r}" if definition.cohort_id else ""
        raise CohortError(f"invalid cohort{subject}: {_listed(problems)}")


def _listed(problems: list[str]) -> str:
    """The first MAX_PROBLEMS_LISTED problems, and how many more there are."""
    listed = problems[:MAX_PROBLEMS_LISTED]
    more = len(problems) - len(listed)
    return "; ".join(listed) + (f"; and {more} more problem{'s' if more > 1 else ''}" if more else "")


def _problems(definition: CohortDefinition, known_metrics: list[str]) -> list[str]:
    if not definition.cohort_id.strip():
        return ["`cohort_id` must not be empty"]
    if definition.deleted:
        return []  # a delete needs nothing but the id
    if any(unicodedata.category(ch) == "Cc" for ch in definition.cohort_id):
        return ["`cohort_id` holds a control character, which no URL, table or log line shows"]
    problems = _size_problems(definition)
    if problems:
        return problems  # (the checks below would repeat what is oversized)
    if not definition.name.strip():
        problems.append("`name` must not be empty")
    for i, pattern in enumerate(definition.agents):
        if not pattern:
            problems.append(f"`agents[{i}]` must not be empty")

    seen_metrics: set[str] = set()
    for i, selection in enumerate(definition.metrics):
        where = f"`metrics[{i}].metric`"
        if selection.metric not in known_metrics:
            problems.append(f"{where}: unknown metric {selection.metric!r} (known metrics: {', '.join(known_metrics)})")
        elif selection.metric in seen_metrics:
            problems.append(f"{where}: metric {selection.metric!r} is listed twice")
        seen_metrics.add(selection.metric)

    seen_criteria: set[str] = set()
    for i, criterion in enumerate(definition.criteria):
        if not criterion.name.strip():
            problems.append(f"`criteria[{i}].name` must not be empty")
        elif criterion.name in seen_criteria:
            problems.append(f"`criteria[{i}].name`: criterion {criterion.name!r} is listed twice")
        seen_criteria.add(criterion.name)
        if isinstance(criterion, LlmCriterion):
            if not criterion.question.strip():
                problems.append(f"`criteria[{i}].question` must not be empty")
        else:
            problems.extend(_rule_problems(i, criterion, known_metrics))
    return problems


# Bounds on what a cohort may hold. Every result carries the verdict of every cohort its call belongs
# to (names, criteria, details): unbounded definitions made results too large to publish, and a value
# nested hundreds of levels deep could be stored but not written back as JSON.
MAX_NAME_CHARS = 200  # cohort_id, name, an agent pattern, a criterion's name and field
MAX_QUESTION_CHARS = 2_000
MAX_AGENT_PATTERNS = 100
MAX_METRICS = 100  # (each QA metric once: more can only be repeats)
MAX_PROBLEMS_LISTED = 20  # an error names this many problems, then counts the rest
MAX_CRITERIA = 50
MAX_VALUE_DEPTH = 8
MAX_VALUE_ITEMS = 1_000  # strings, numbers, lists and objects in a rule's value, all levels
MAX_VALUE_CHARS = 1_000  # a string in a rule's value


def _size_problems(definition: CohortDefinition) -> list[str]:
    problems: list[str] = []

    def check(where: str, text: str, limit: int = MAX_NAME_CHARS) -> None:
        if len(text) > limit:
            problems.append(f"{where} is {len(text)} characters long, more than {limit}")

    check("`cohort_id`", definition.cohort_id)
    check("`name`", definition.name)
    if len(definition.agents) > MAX_AGENT_PATTERNS:
        problems.append(f"`agents` lists {len(definition.agents)} patterns, more than {MAX_AGENT_PATTERNS}")
    for i, pattern in enumerate(definition.agents[:MAX_AGENT_PATTERNS]):
        check(f"`agents[{i}]`", pattern)
    if len(definition.metrics) > MAX_METRICS:
        problems.append(f"`metrics` lists {len(definition.metrics)} metrics, more than {MAX_METRICS}")
    if len(definition.criteria) > MAX_CRITERIA:
        problems.append(f"`criteria` lists {len(definition.criteria)} criteria, more than {MAX_CRITERIA}")
    for i, criterion in enumerate(definition.criteria[:MAX_CRITERIA]):
        check(f"`criteria[{i}].name`", criterion.name)
        if isinstance(criterion, LlmCriterion):
            check(f"`criteria[{i}].question`", criterion.question, MAX_QUESTION_CHARS)
        else:
            check(f"`criteria[{i}].field`", criterion.field)
            problem = _value_problem(criterion.value)
            if problem is not None:
                problems.append(f"`criteria[{i}].value`: {problem}")
    return problems


def _value_problem(value: Any) -> str | None:
    """Why a rule's value is too large (None: it is not), walked without recursion."""
    stack, items = [(value, 1)], 0
    while stack:
        item, depth = stack.pop()
        items += 1
        if items > MAX_VALUE_ITEMS:
            return f"holds more than {MAX_VALUE_ITEMS} items"
        if depth > MAX_VALUE_DEPTH:
            return f"is nested more than {MAX_VALUE_DEPTH} levels deep"
        if isinstance(item, str) and len(item) > MAX_VALUE_CHARS:
            return f"holds a string of {len(item)} characters, more than {MAX_VALUE_CHARS}"
        if isinstance(item, dict):
            stack.extend((key, depth + 1) for key in item)
            stack.extend((member, depth + 1) for member in item.values())
        elif isinstance(item, list):
            stack.extend((member, depth + 1) for member in item)
    return None


def _rule_problems(i: int, rule: RuleCriterion, known_metrics: list[str]) -> list[str]:
    problems: list[str] = []
    segments = rule.field.split(".")
    if not rule.field or not all(segments):
        problems.append(f"`criteria[{i}].field`: {rule.field!r} is not a dotted path such as 'evaluation.stop_reason'")
    elif segments[0] not in RESULT_FIELDS:
        problems.append(
            f"`criteria[{i}].field`: {segments[0]!r} is not a field of a call's result (known: "
            f"{', '.join(RESULT_FIELDS)})"
        )
    elif segments[0] == "metrics" and len(segments) > 1 and segments[1] not in known_metrics:
        problems.append(
            f"`criteria[{i}].field`: unknown metric {segments[1]!r} (known metrics: {', '.join(known_metrics)})"
        )

    where, value = f"`criteria[{i}].value`", rule.value
    if rule.op in LIST_OPS and not isinstance(value, list):
        problems.append(f"{where}: op {rule.op!r} needs a list")
    elif rule.op in ORDERING_OPS and not (is_number(value) or isinstance(value, str)):
        problems.append(f"{where}: op {rule.op!r} needs a number or a string")
    elif rule.op == "contains" and (value is None or isinstance(value, (list, dict))):
        problems.append(f"{where}: op 'contains' needs a string, number or boolean")
    elif rule.op == "exists" and value is not None and not isinstance(value, bool):
        problems.append(f"{where}: op 'exists' takes true, false or nothing")
    return problems


def is_number(value: Any) -> TypeGuard[int | float]:
    # JSON booleans decode to Python bools, which are ints; a condition never means them as numbers.
    return isinstance(value, (int, float)) and not isinstance(value, bool)
