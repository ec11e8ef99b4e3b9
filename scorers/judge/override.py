"""The LLM judge's answer replaces the heuristic result of each LLM metric it validly rated.

For each of the five LLM metrics, when `call.judge.qa` holds a valid answer for it (checked again
here against the metric's schema: the event may come from anywhere), the metric's result comes from
the judge and says `details.judge = "llm"`; otherwise the heuristic result stays as it is
(`"heuristic"`), with `details.judge_error` saying why when the judge's request failed (an event whose
`qa` is `{"error": …}`). A metric that does not apply to the call (the seed's not-applicable rules) stays
not applicable whatever the judge said, and a rating of null leaves the heuristic in place.

- hallucination: score = 100 − 30 × major − 10 × minor, floored at 0; value = the number of issues;
  `details` as the heuristic's (issues listed up to 20, counts by severity and type).
- kb_recall, tool_call_accuracy, transition_accuracy: score = the judge's 0–100 rating (clamped);
  value = score ÷ 100, rounded to 4 decimals, the share the value column stands for.
- naturalness: score = the judge's rating; value stays the heuristic's average words per agent turn,
  which is what the seed's value column means and which the judge does not measure.

Thresholds and `passed` are the metric's own (scorers/qa/base.py), so a cohort re-judges the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from models.call_state import CallState
from models.results import MetricResult
from scorers.judge.schemas import QA_ERROR_KEY, hallucination_check, rating_check
from scorers.numbers import finite_number
from scorers.qa.base import QaMetric, clamp
from scorers.qa.hallucination import (
    CONFUSION,
    CONTRADICTION,
    FABRICATION,
    MAJOR,
    MAJOR_PENALTY,
    MAX_LISTED_ISSUES,
    MINOR,
    MINOR_PENALTY,
    excerpt,
)

LLM_JUDGE = "llm"
SHARE_DECIMALS = 4


def with_judge_answers(results: list[MetricResult], metrics: Sequence[QaMetric], call: CallState) -> list[MetricResult]:
    """`results` (one per metric, in order) with the judge's answers in place of the heuristics."""
    qa = call.judge.qa if call.judge is not None else None
    if not isinstance(qa, dict):
        return results
    error = qa.get(QA_ERROR_KEY)
    if isinstance(error, str):
        # The request failed: the heuristics stand, and say why the judge's rating is missing.
        return [
            _with_judge_error(result, error) if metric.name in OVERRIDES else result
            for metric, result in zip(metrics, results, strict=True)
        ]
    out = []
    for metric, result in zip(metrics, results, strict=True):
        override = OVERRIDES.get(metric.name)
        answer = qa.get(metric.name)
        judged = override(metric, result, answer) if override is not None and result.score is not None else None
        out.append(judged if judged is not None else result)
    return out


def _with_judge_error(result: MetricResult, error: str) -> MetricResult:
    if result.score is None:  # not applicable: the judge had nothing to rate
        return result
    return MetricResult(
        metric=result.metric,
        value=result.value,
        score=result.score,
        passed=result.passed,
        details={**result.details, "judge_error": error},
    )


def _llm_result(metric: QaMetric, value: float | int, score: float, **details: Any) -> MetricResult:
    result = metric.scored(value, score, **details)
    result.details["judge"] = LLM_JUDGE
    return result


def _hallucination(metric: QaMetric, heuristic: MetricResult, answer: Any) -> MetricResult | None:
    if not hallucination_check().is_valid(answer):
        return None
    issues = answer["issues"]
    major = sum(1 for issue in issues if issue["severity"] == MAJOR)
    minor = sum(1 for issue in issues if issue["severity"] == MINOR)
    by_type = {
        kind: sum(1 for issue in issues if issue["type"] == kind) for kind in (FABRICATION, CONTRADICTION, CONFUSION)
    }
    return _llm_result(
        metric,
        len(issues),
        max(0, 100 - MAJOR_PENALTY * major - MINOR_PENALTY * minor),
        issues=[
            {"type": i["type"], "severity": i["severity"], "text": excerpt(i["text"])}
            for i in issues[:MAX_LISTED_ISSUES]
        ],
        total=len(issues),
        major=major,
        minor=minor,
        fabrications=by_type[FABRICATION],
        contradictions=by_type[CONTRADICTION],
        confusions=by_type[CONFUSION],
    )


def _rating(answer: Any) -> tuple[float, str] | None:
    """The judge's clamped 0–100 rating and reason, or None when there is no valid rating."""
    if not rating_check().is_valid(answer):
        return None
    score = finite_number(answer["score"])
    if score is None:
        return None
    return clamp(score), answer["reason"]


def _share(metric: QaMetric, heuristic: MetricResult, answer: Any) -> MetricResult | None:
    rating = _rating(answer)
    if rating is None:
        return None
    score, reason = rating
    return _llm_result(metric, round(score / 100, SHARE_DECIMALS), score, judge_reason=reason)


def _naturalness(metric: QaMetric, heuristic: MetricResult, answer: Any) -> MetricResult | None:
    rating = _rating(answer)
    if rating is None:
        return None
    score, reason = rating
    return _llm_result(metric, cast(float, heuristic.value), score, judge_reason=reason)  # (scored: it has a value)


Override = Callable[[QaMetric, MetricResult, Any], "MetricResult | None"]
OVERRIDES: dict[str, Override] = {
    "hallucination": _hallucination,
    "kb_recall": _share,
    "naturalness": _naturalness,
    "tool_call_accuracy": _share,
    "transition_accuracy": _share,
}
