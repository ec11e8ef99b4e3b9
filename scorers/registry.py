"""Every scorer callqa runs, in one list. Adding a metric means adding one module and one line here."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from models.call_state import CallState
from models.events import EVENT_TYPES, Event, Rtvi
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
from scorers.qa.latency import LatencyMetric
from scorers.qa.naturalness import Naturalness
from scorers.qa.overlapping_speech import OverlappingSpeech
from scorers.qa.sentiment import Sentiment
from scorers.qa.tool_call_accuracy import ToolCallAccuracy
from scorers.qa.transfer_success import TransferSuccess
from scorers.qa.transfer_wait_time import TransferWaitTime
from scorers.qa.transition_accuracy import TransitionAccuracy
from scorers.qa.wer import WordErrorRate
from scorers.retries import Retries
from scorers.token_usage import TokenUsage
from scorers.ttfb import TimeToFirstByte


def qa_metric_names() -> list[str]:
    """The names a cohort or an alert rule may count, in the results' order."""
    return [metric.name for metric in qa_metrics()]


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
        TimeToFirstByte(),
        Retries(),
        ConversationEnd(),
        PredictedActions(),
        DbStateScorer(predicates),
        EvaluationJudge(),
        JudgeContext(),
    ]


# (accumulator name, the scorer's update) for each scorer an event goes to, in registry order.
Updates = tuple[tuple[str, Callable[[Any, Event, CallState], None]], ...]


@dataclass(frozen=True)
class ScorerRegistry:
    scorers: tuple[Scorer, ...]
    qa: tuple[QaMetric, ...]
    # The fold's routing table, built once: by event class, and for RTVI by message type as well, so
    # that an RTVI message reaches only the scorers that read its type (`Scorer.rtvi_messages`).
    routes: dict[type, Updates] = field(default_factory=dict)
    rtvi_routes: dict[str, Updates] = field(default_factory=dict)
    rtvi_unlisted: Updates = ()

    @classmethod
    def build(cls, signals: list[Scorer], metrics: list[QaMetric]) -> ScorerRegistry:
        scorers = tuple(signals) + tuple(metrics)
        names = [s.name for s in scorers]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise ValueError(f"scorer names must be unique: {sorted(duplicates)}")
        by_type: dict[str, list[Scorer]] = {}
        for scorer in scorers:
            for event_type in scorer.handles:
                by_type.setdefault(event_type, []).append(scorer)

        def updates(chosen: Iterable[Scorer]) -> Updates:
            return tuple((scorer.name, scorer.update) for scorer in chosen)

        routes = {EVENT_TYPES[tag]: updates(chosen) for tag, chosen in by_type.items() if tag in EVENT_TYPES}
        rtvi = by_type.get(RTVI, [])
        listed = {kind for scorer in rtvi if scorer.rtvi_messages is not None for kind in scorer.rtvi_messages}
        rtvi_routes = {
            kind: updates(s for s in rtvi if s.rtvi_messages is None or kind in s.rtvi_messages) for kind in listed
        }
        rtvi_unlisted = updates(s for s in rtvi if s.rtvi_messages is None)
        return cls(scorers, tuple(metrics), routes, rtvi_routes, rtvi_unlisted)

    def updates_for(self, event: Event) -> Updates:
        """The scorers that fold `event`: those whose `handles` name its type (and, for an RTVI
        message, whose `rtvi_messages` allow its message type)."""
        if type(event) is Rtvi:
            return self.rtvi_routes.get(event.data.message.type, self.rtvi_unlisted)
        return self.routes.get(type(event), ())


RTVI = cast(str, Rtvi.__struct_config__.tag)  # (a tagged Struct: its tag is the event type)


def default_registry() -> ScorerRegistry:
    return ScorerRegistry.build(signal_scorers(), qa_metrics())
