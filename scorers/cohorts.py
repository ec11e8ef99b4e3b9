"""Cohort verdicts for a call: its weighted score over the cohort's metrics and criteria, and pass/fail.

For each cohort a call belongs to (see `models.cohorts` for membership):
- a metric counts when it applied to the call (score not null); it passes at the cohort's threshold,
  or the metric's default when the cohort sets none;
- a rule criterion always applies and scores 100 when met, 0 when not; an LLM criterion applies only
  once the judge has answered it (`call.judge.criteria[name]`);
- weighted score = Σ weight × score / Σ weight over what applies, rounded to one decimal; null when
  nothing applies or every weight that applies is 0;
- the verdict passes when the (rounded) weighted score reaches the cohort's `pass_threshold`.

`CohortBook` holds the definitions; the stream layer feeds it the documents of `callqa.cohorts` and of
the HTTP API with `apply()`. A definition change affects results published after it, not earlier ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from fnmatch import fnmatchcase
from fractions import Fraction
from typing import Any

from msgspec import Struct

from models.call_state import CallState
from models.cohorts import (
    LIST_OPS,
    CohortDefinition,
    LlmCriterion,
    RuleCriterion,
    decode_cohort,
    is_number,
)
from models.results import CohortVerdict, MetricResult
from scorers.conversation import agent_spoke
from scorers.qa.base import QaMetric, round_score
from scorers.registry import ScorerRegistry, qa_metrics

CRITERION_MET_SCORE = 100
CRITERION_NOT_MET_SCORE = 0
NOT_JUDGED_REASON = "No judge verdict yet"
NOT_SCORED_REASON = "Metric not scored for this call"


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class CohortBook:
    """The cohort definitions in force, keyed by `cohort_id`. `CohortBook()` knows no cohorts."""

    def __init__(self, registry: ScorerRegistry | None = None, cohorts: Iterable[Any] = ()) -> None:
        metrics: Iterable[QaMetric] = registry.qa if registry is not None else qa_metrics()
        self.default_thresholds: dict[str, float] = {m.name: m.default_threshold for m in metrics}
        self._cohorts: dict[str, CohortDefinition] = {}
        # Each cohort's `in` and `not_in` lists as sets (None for its other criteria), made once.
        self._members: dict[str, tuple[Members | None, ...]] = {}
        for document in cohorts:
            self.apply(document)

    # ------------------------------------------------------------------------------ definitions

    def decode(self, document: bytes | str | dict[str, Any] | CohortDefinition) -> CohortDefinition:
        """Validate a document against this book's metrics without applying it. Raises CohortError."""
        return decode_cohort(document, self.default_thresholds)

    def apply(self, document: bytes | str | dict[str, Any] | CohortDefinition) -> None:
        """Upsert a cohort, or remove it when the document says `deleted: true`. Raises CohortError."""
        definition = self.decode(document)
        if definition.deleted:
            self.delete(definition.cohort_id)
        else:
            self._cohorts[definition.cohort_id] = definition
            self._members[definition.cohort_id] = tuple(
                Members(criterion.value) if isinstance(criterion, RuleCriterion) and criterion.op in LIST_OPS else None
                for criterion in definition.criteria
            )

    def delete(self, cohort_id: str) -> None:
        """Remove a cohort (a Kafka tombstone on `callqa.cohorts` carries only the key)."""
        self._cohorts.pop(cohort_id, None)
        self._members.pop(cohort_id, None)

    def get(self, cohort_id: str) -> CohortDefinition | None:
        return self._cohorts.get(cohort_id)

    def all(self) -> list[CohortDefinition]:
        return [self._cohorts[cohort_id] for cohort_id in sorted(self._cohorts)]

    def __len__(self) -> int:
        return len(self._cohorts)

    # --------------------------------------------------------------------------------- verdicts

    def verdicts(self, call: CallState, metrics: list[MetricResult], evaluation: dict[str, Any]) -> list[CohortVerdict]:
        if not self._cohorts:
            return []
        view = ResultView(call, metrics, evaluation)
        keys = llm_criterion_keys(call, self.all())
        return [
            self.verdict(self._cohorts[cohort_id], view, keys)
            for cohort_id in sorted(self._cohorts)
            if belongs(call, self._cohorts[cohort_id])
        ]

    def verdict(
        self, cohort: CohortDefinition, view: ResultView, keys: dict[tuple[str, str], str] | None = None
    ) -> CohortVerdict:
        """`keys`: where each LLM criterion's verdict is recorded (`llm_criterion_keys`; by default its name)."""
        parts: list[tuple[Fraction, Fraction]] = []  # (weight, score) of everything that applies
        metric_details: dict[str, dict[str, Any]] = {}
        counted: list[str] = []
        for selection in cohort.metrics:
            threshold = (
                selection.threshold if selection.threshold is not None else self.default_thresholds[selection.metric]
            )
            result = view.metrics.get(selection.metric)
            detail: dict[str, Any] = {"score": None, "threshold": threshold, "passed": None, "weight": selection.weight}
            if result is not None and result.score is not None:
                detail["score"] = result.score
                detail["passed"] = result.score >= threshold
                counted.append(selection.metric)
                parts.append((Fraction(selection.weight), Fraction(result.score)))
            else:
                detail["reason"] = (result.details if result is not None else {}).get("reason", NOT_SCORED_REASON)
            metric_details[selection.metric] = detail

        criterion_details: dict[str, dict[str, Any]] = {}
        held = self._cohorts.get(cohort.cohort_id) is cohort
        members = self._members[cohort.cohort_id] if held else (None,) * len(cohort.criteria)
        for criterion, its_members in zip(cohort.criteria, members, strict=True):
            if isinstance(criterion, LlmCriterion):
                key = (keys or {}).get((cohort.cohort_id, criterion.name), criterion.name)
                met, reason = llm_criterion_met(criterion, view.call, key)
                detail = {"met": met, "weight": criterion.weight, "reason": reason}
            else:
                met = rule_met(criterion, view.resolve(criterion.field), its_members)
                detail = {"met": met, "weight": criterion.weight}
            criterion_details[criterion.name] = detail
            if met is not None:
                score = CRITERION_MET_SCORE if met else CRITERION_NOT_MET_SCORE
                parts.append((Fraction(criterion.weight), Fraction(score)))

        weighted = weighted_score(parts)
        details: dict[str, Any] = {
            "name": cohort.name,
            "pass_threshold": cohort.pass_threshold,
            "metrics": metric_details,
            "criteria": criterion_details,
        }
        passed = None if weighted is None else weighted >= cohort.pass_threshold
        if passed and not agent_spoke(view.call):
            # A call whose agent never spoke fails whatever its other metrics say (the user's speech
            # transcribed well, say): a dead bot must not look healthy (scorers/conversation.py).
            passed = False
            details["no_conversation"] = True
        return CohortVerdict(
            cohort_id=cohort.cohort_id,
            weighted_score=weighted,
            passed=passed,
            metrics_counted=counted,
            details=details,
        )


def belongs(call: CallState, cohort: CohortDefinition) -> bool:
    if cohort.cohort_id in call.cohort_ids:
        return True
    return call.agent_id is not None and any(fnmatchcase(call.agent_id, pattern) for pattern in cohort.agents)


def weighted_score(parts: list[tuple[Fraction, Fraction]]) -> float | None:
    """Σ weight × score / Σ weight, rounded to one decimal; exact sums, so the rounding is the only one."""
    total_weight = sum(weight for weight, _ in parts)
    if not parts or total_weight == 0:
        return None
    return round_score(float(sum(weight * score for weight, score in parts) / total_weight))


# ----------------------------------------------------------------------------------- criteria


def llm_criterion_keys(call: CallState, cohorts: Iterable[CohortDefinition]) -> dict[tuple[str, str], str]:
    """(cohort_id, criterion name) → the key the judge is asked and its verdict recorded under, for the
    LLM criteria of the call's cohorts (in cohort id order): the criterion's name — shared by cohorts
    that ask the same question under it — unless an earlier cohort asks another question under that
    name; then `name (cohort_id)`, so that no cohort is given the answer to another cohort's question."""
    return {(cohort_id, criterion.name): key for cohort_id, criterion, key in _keyed_llm_criteria(call, cohorts)}


def llm_criterion_questions(call: CallState, cohorts: Iterable[CohortDefinition]) -> dict[str, str]:
    """key → question: what the judge is asked about the call, each distinct question once."""
    return {key: criterion.question for _, criterion, key in _keyed_llm_criteria(call, cohorts)}


def _keyed_llm_criteria(
    call: CallState, cohorts: Iterable[CohortDefinition]
) -> Iterator[tuple[str, LlmCriterion, str]]:
    question_of: dict[str, str] = {}
    for cohort in cohorts:
        if not belongs(call, cohort):
            continue
        for criterion in cohort.criteria:
            if isinstance(criterion, LlmCriterion):
                key = criterion.name
                if question_of.get(key, criterion.question) != criterion.question:
                    key = f"{criterion.name} ({cohort.cohort_id})"
                question_of.setdefault(key, criterion.question)
                yield cohort.cohort_id, criterion, key


def llm_criterion_met(criterion: LlmCriterion, call: CallState, key: str | None = None) -> tuple[bool | None, str]:
    """(met, reason), from the judge's verdict recorded under `key` (the criterion's name by default).
    Not applicable (None) until the judge answered this criterion; an answer that is not a boolean
    counts as not met, as for the judge's other verdicts."""
    answers = call.judge.criteria if call.judge is not None else None
    key = criterion.name if key is None else key
    if not answers or key not in answers:
        return None, NOT_JUDGED_REASON
    answer = answers[key]
    passed = answer.get("passed") if isinstance(answer, dict) else None
    reason = answer.get("reason") if isinstance(answer, dict) else None
    if not isinstance(passed, bool):
        return False, f"Invalid judge verdict: passed is {passed!r}, not a boolean"
    return passed, reason if isinstance(reason, str) else ""


def rule_met(rule: RuleCriterion, actual: Any, members: Members | None = None) -> bool:
    """Whether `actual` (the field's value, or MISSING) satisfies the rule. A missing field reads as null.
    `members`: the rule's list as `Members`, for `in` and `not_in` (else it is looked through)."""
    op, expected = rule.op, rule.value
    if op == "exists":
        present = actual is not MISSING and actual is not None
        return present == (True if expected is None else expected)
    if actual is MISSING:
        actual = None
    if op == "eq":
        return _equal(actual, expected)
    if op == "ne":
        return not _equal(actual, expected)
    if op in LIST_OPS:
        found = actual in members if members is not None else any(_equal(actual, item) for item in expected)
        return found if op == "in" else not found
    if op == "contains":
        if isinstance(actual, str):
            return isinstance(expected, str) and expected in actual
        if isinstance(actual, list):
            return any(_equal(item, expected) for item in actual)
        if isinstance(actual, dict):
            return isinstance(expected, str) and expected in actual
        return False
    comparable = (is_number(actual) and is_number(expected)) or (isinstance(actual, str) and isinstance(expected, str))
    if not comparable:
        return False
    if op == "lt":
        return bool(actual < expected)
    if op == "le":
        return bool(actual <= expected)
    if op == "gt":
        return bool(actual > expected)
    return bool(actual >= expected)  # "ge"


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


# A field's value of these types is looked up in a set; each equals only an item of these types.
_SCALARS = frozenset({str, int, float, bool, type(None)})


class Members:
    """A rule's `in` list, to ask whether a value is one of its items as `_equal` would, without
    comparing it with each: a cohort may hold 50 rules of 1,000 items, asked for every result.

    The items of a scalar type are kept in sets, booleans apart from the numbers they equal in Python
    (`True == 1`). A value of a scalar type can equal no other item (a list, an object, NaN), so the
    sets answer for it; any other value is compared with every item."""

    __slots__ = ("_booleans", "_items", "_values")

    def __init__(self, items: list[Any]) -> None:
        self._items = items
        scalars = [item for item in items if type(item) in _SCALARS and item == item]
        self._values = frozenset(item for item in scalars if type(item) is not bool)
        self._booleans = frozenset(item for item in scalars if type(item) is bool)

    def __contains__(self, actual: Any) -> bool:
        kind = type(actual)
        if kind is bool:
            return actual in self._booleans
        if kind in _SCALARS and actual == actual:  # (NaN equals nothing: compared, and found in nothing)
            return actual in self._values
        return any(_equal(actual, item) for item in self._items)


# ---------------------------------------------------------------------------------- the result


class ResultView:
    """The fields of the call's result a rule criterion may name, without building the document."""

    __slots__ = ("call", "evaluation", "metrics")

    def __init__(self, call: CallState, metrics: list[MetricResult], evaluation: dict[str, Any]) -> None:
        self.call = call
        self.metrics = {m.metric: m for m in metrics}
        self.evaluation = evaluation

    def root(self, name: str) -> Any:
        call = self.call
        if name == "metrics":
            return self.metrics
        if name == "evaluation":
            return self.evaluation
        if name == "final":
            return call.has_ended
        if name == "cohort_ids":
            return list(call.cohort_ids)
        if name in ("call_id", "version", "agent_id", "run_id", "ended_ts_ms"):
            return getattr(call, name)
        return MISSING

    def resolve(self, path: str) -> Any:
        first, *rest = path.split(".")
        node = self.root(first)
        for segment in rest:
            node = _step(node, segment)
            if node is MISSING:
                break
        return node


def _step(node: Any, segment: str) -> Any:
    if isinstance(node, dict):
        return node.get(segment, MISSING)
    if isinstance(node, Struct):
        return getattr(node, segment) if segment in node.__struct_fields__ else MISSING
    if isinstance(node, list):
        try:
            return node[int(segment)]
        except (ValueError, IndexError):
            return MISSING
    return MISSING
