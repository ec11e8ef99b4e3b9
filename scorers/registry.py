"""Every scorer callqa runs, in one list. Adding a metric means adding one module and one line here."""

from __future__ import annotations

from dataclasses import dataclass, field

from scorers.base import Scorer
from scorers.evaluation.actions import PredictedActions
from scorers.evaluation.conversation_end import ConversationEnd
from scorers.evaluation.db_state import DbStateScorer, PredicateRegistry
from scorers.evaluation.judge_fields import EvaluationJudge
from scorers.handoff_latency import HandoffLatency
from scorers.judge.context import JudgeContext
from scorers.qa.base import QaMetric
from scorers.qa.hallucination import Hallucination
from scorers.qa.kb_recall import KbRecall
from scorers.qa.wer import WordErrorRate
from scorers.qa.overlapping_speech import OverlappingSpeech
from scorers.qa.naturalness import Naturalness
from scorers.qa.tool_call_accuracy import ToolCallAccuracy
from scorers.qa.transition_accuracy import TransitionAccuracy
from scorers.qa.transfer_success import TransferSuccess
from scorers.qa.transfer_wait_time import TransferWaitTime
from scorers.qa.latency import LatencyMetric
from scorers.qa.sentiment import Sentiment
from scorers.retries import Retries
from scorers.token_usage import TokenUsage


def qa_metrics() -> list[QaMetric]:
    """The QA metric judges, in the order they appear in a result's `metrics` list."""
    return [
        Hallucination(),
        KbRecall(),
        WordErrorRate(),
        OverlappingSpeech(),
        Sentiment(),
        Naturalness(),
        ToolCallAccuracy(),
        TransitionAccuracy(),
        TransferSuccess(),
        TransferWaitTime(),
        LatencyMetric(),
    ]


def signal_scorers(predicates: PredicateRegistry | None = None) -> list[Scorer]:
    """Accumulators the evaluation document (metrics.json) and several metrics read. `predicates`
    replaces the default DB-state predicate registry (see scorers/evaluation/db_state.py)."""
    return [
        HandoffLatency(),
        TokenUsage(),
        Retries(),
        ConversationEnd(),
        PredictedActions(),
        DbStateScorer(predicates),
        EvaluationJudge(),
        JudgeContext(),
    ]


@dataclass(frozen=True)
class ScorerRegistry:
    scorers: tuple[Scorer, ...]
    qa: tuple[QaMetric, ...]
    by_event_type: dict[str, tuple[Scorer, ...]] = field(default_factory=dict)

    @classmethod
    def build(cls, signals: list[Scorer], metrics: list[QaMetric]) -> "ScorerRegistry":
        scorers = tuple(signals) + tuple(metrics)
        names = [s.name for s in scorers]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise ValueError(f"scorer names must be unique: {sorted(duplicates)}")
        by_type: dict[str, list[Scorer]] = {}
        for scorer in scorers:
            for event_type in scorer.handles:
                by_type.setdefault(event_type, []).append(scorer)
        return cls(scorers, tuple(metrics), {k: tuple(v) for k, v in by_type.items()})


def default_registry() -> ScorerRegistry:
    return ScorerRegistry.build(signal_scorers(), qa_metrics())
