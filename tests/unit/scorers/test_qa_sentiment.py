"""Sentiment: the post-call `user_sentiment` annotation mapped to a score (value and score alike)."""

import pytest

from tests.helpers.eventkit import event
from tests.helpers.qa_kit import scored


def annotated(**data):
    return event("call.annotated", data)


@pytest.mark.parametrize(
    ("label", "score", "passed"),
    [
        ("Positive", 100.0, True),
        ("Neutral", 70.0, True),
        ("Unknown", 50.0, True),
        ("Negative", 20.0, False),
    ],
)
def test_each_sentiment_label_has_its_score_and_passes_at_50(label, score, passed):
    m = scored("sentiment", annotated(user_sentiment=label))
    assert (m.value, m.score, m.passed) == (score, score, passed)
    assert m.details["user_sentiment"] == label and m.details["threshold"] == 50


def test_no_sentiment_yet_is_not_applicable():
    m = scored("sentiment")
    assert (m.value, m.score, m.passed) == (None, None, None)
    assert m.details["reason"] == "No post-call sentiment yet"


def test_an_annotation_without_a_sentiment_keeps_the_earlier_one():
    m = scored("sentiment", annotated(user_sentiment="Positive"), annotated(summary="Caller rebooked."))
    assert m.score == 100.0


def test_the_latest_sentiment_wins():
    m = scored("sentiment", annotated(user_sentiment="Positive"), annotated(user_sentiment="Negative"))
    assert (m.score, m.passed) == (20.0, False)
