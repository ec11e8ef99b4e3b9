"""Assemble a call's result document from its accumulators: QA metrics, cohorts, evaluation."""

from __future__ import annotations

from models.call_state import CallState
from models.results import CallResult, MetricResult
from scorers.cohorts import CohortBook
from scorers.conversation import agent_spoke
from scorers.evaluation.metrics_json import build_metrics_json
from scorers.fold import MAX_SCORER_ERROR_CHARS
from scorers.judge.override import with_judge_answers
from scorers.qa.base import QaMetric
from scorers.registry import ScorerRegistry


def score_metrics(call: CallState, registry: ScorerRegistry) -> list[MetricResult]:
    heuristics = [_finalize(metric, call) for metric in registry.qa]
    return with_judge_answers(heuristics, registry.qa, call)


def _finalize(metric: QaMetric, call: CallState) -> MetricResult:
    try:
        result = metric.finalize(call.accumulators[metric.name], call)
    except Exception as exc:  # one metric's bug must not cost the call its result
        return metric.not_applicable(f"scoring failed: {type(exc).__name__}: {exc}"[:MAX_SCORER_ERROR_CHARS])
    failure = call.scorer_errors.get(metric.name) if call.scorer_errors else None
    if failure is not None:
        result.details["scorer_error"] = failure
    return result


def score_call(
    call: CallState, registry: ScorerRegistry, cohorts: CohortBook, version: int, event_ts_ms: int
) -> CallResult:
    metrics = score_metrics(call, registry)
    evaluation = build_metrics_json(call)
    return CallResult(
        call_id=call.call_id,
        version=version,
        final=call.has_ended,
        no_conversation=not agent_spoke(call),
        agent_id=call.agent_id,
        cohort_ids=list(call.cohort_ids),
        run_id=call.run_id,
        ended_ts_ms=call.ended_ts_ms,
        event_ts_ms=event_ts_ms,
        metrics=metrics,
        cohorts=cohorts.verdicts(call, metrics, evaluation),
        evaluation=evaluation,
    )
