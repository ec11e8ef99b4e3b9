"""A call's QA verdicts in a few bytes: what an index of every call keeps of a result to filter, count and
chart it without reading the document again.

One byte per metric (in the registry's order) says whether it passed, failed, did not apply or is not
in the result; one 16-bit number per metric holds its score in tenths (scores have one decimal:
scorers/qa/base.py `round_score`), so that sums of scores are exact integers that can be taken back.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

from models.results import MetricResult

NOT_LISTED, NA, FAIL, PASS = 0, 1, 2, 3
VERDICT_WORDS = {NA: "na", FAIL: "fail", PASS: "pass"}
NO_SCORE = -1


def encode_verdicts(metrics: Iterable[MetricResult], order: dict[str, int]) -> tuple[bytes, bytes]:
    """(verdict per metric, score in tenths per metric as int16) in `order`'s places; metrics not in
    `order` (a metric retired since) are left out."""
    verdicts = bytearray(len(order))
    scores = array("h", [NO_SCORE]) * len(order)
    for metric in metrics:
        place = order.get(metric.metric)
        if place is None:
            continue
        if metric.score is None:
            verdicts[place] = NA
            continue
        verdicts[place] = PASS if metric.passed else FAIL
        scores[place] = round(metric.score * 10)
    return bytes(verdicts), scores.tobytes()


def decode_scores(scores: bytes) -> array[int]:
    decoded = array("h")
    decoded.frombytes(scores)
    return decoded


def verdict_words(verdicts: bytes, names: Sequence[str]) -> dict[str, list[str]]:
    """{"passed": [...], "failed": [...], "na": [...]}: the metrics by verdict, in `names`' order."""
    words: dict[str, list[str]] = {"passed": [], "failed": [], "na": []}
    key = {PASS: "passed", FAIL: "failed", NA: "na"}
    for name, verdict in zip(names, verdicts, strict=True):
        if verdict != NOT_LISTED:
            words[key[verdict]].append(name)
    return words
