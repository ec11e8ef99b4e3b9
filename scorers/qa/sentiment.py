"""Sentiment: maps the post-call `user_sentiment` annotation to a score; value and score are the same."""

from __future__ import annotations

from dataclasses import dataclass

from models.call_state import CallState
from models.events import CallAnnotated
from models.results import MetricResult
from scorers.qa.base import QaMetric

SENTIMENT_SCORES = {"Positive": 100.0, "Neutral": 70.0, "Unknown": 50.0, "Negative": 20.0}
NOT_APPLICABLE = "No post-call sentiment yet"


@dataclass(slots=True)
class SentimentAcc:
    user_sentiment: str | None = None


class Sentiment(QaMetric):
    name = "sentiment"
    label = "Sentiment"
    value_meaning = "Sentiment score"
    default_threshold = 50
    judge_kind = "computed"
    handles = frozenset({"call.annotated"})

    def start(self) -> SentimentAcc:
        return SentimentAcc()

    def update(self, acc: SentimentAcc, event: CallAnnotated, call: CallState) -> None:
        if event.data.user_sentiment is not None:
            acc.user_sentiment = event.data.user_sentiment

    def finalize(self, acc: SentimentAcc, call: CallState) -> MetricResult:
        if acc.user_sentiment is None:
            return self.not_applicable(NOT_APPLICABLE)
        score = SENTIMENT_SCORES[acc.user_sentiment]
        return self.scored(score, score, user_sentiment=acc.user_sentiment)
