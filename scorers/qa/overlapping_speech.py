"""Overlapping speech: how often the agent and the caller talked over each other.

Uses per-word timings (a turn's `words`: [word, start_ms, end_ms], milliseconds from the call's start).
A turn spans from its earliest word start to its latest word end; turns without words take no part.
A turn overlaps when it starts before the previous speaker's last word ended — the previous speaker's
turn being the other role's most recent turn with words. The overlap in ms is the part of the two
spans they share: `min(ends) − max(starts)`, so it is bounded by the turn's own last word (a short
interjection inside the other's speech overlaps by its own length). Requiring the spans to share time
also keeps a turn whose event arrives late, after a reply that started later, from counting the whole
gap as overlap.

Value: the number of overlaps. The call's length for the percentage is `call.ended − call.started`
in event time (`ts_ms`) — up to its last turn's event when inactivity ended it (the silence that ended
the call is no part of its conversation: a call swept 120 s after its last words would count two
minutes of nothing against its overlaps; `duration_seconds` in the evaluation document keeps it, as
the harness does) — and never less than the span of all word timings seen, which alone gives it when
either is missing: a producer that stamps a call's events close together (a post-call upload) made
12 s of speech a call of 1 s, and its overlap 600 % of it. The percent is at most 100. Score:
100 − 10 × overlaps − 2 × overlap percent, clamped to 0–100. No word timings at all: no overlaps,
score 100 (the seed's rule). Not applicable ("The agent did not speak") when no agent turn has a
word (scorers/conversation.py): the seed lists no such case, but a call without the agent's speech
has no overlap to measure, and its 100 passed dead calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.call_state import CallState
from models.events import Turn, word_span
from models.results import MetricResult
from scorers.conversation import AGENT_DID_NOT_SPEAK, agent_spoke
from scorers.inactivity import INACTIVITY_STOP_REASON
from scorers.qa.base import QaMetric

PENALTY_PER_OVERLAP = 10.0
PENALTY_PER_OVERLAP_PERCENT = 2.0


@dataclass(slots=True)
class Span:
    start_ms: float
    end_ms: float


@dataclass(slots=True)
class OverlapAcc:
    last_user: Span | None = None
    last_agent: Span | None = None
    overlaps: int = 0
    overlap_ms: float = 0.0
    first_word_ms: float | None = None
    last_word_ms: float | None = None
    last_turn_ts_ms: int | None = None  # the event time of the latest turn, with words or not


def call_length_ms(acc: OverlapAcc, call: CallState) -> float:
    start = call.attempt_start_ms(call.started_ts_ms)  # (the accepted attempt's, as its overlaps are)
    end = call.ended_ts_ms
    inactive = call.ended is not None and call.ended.stop_reason == INACTIVITY_STOP_REASON
    if end is not None and inactive and acc.last_turn_ts_ms is not None:
        end = min(end, acc.last_turn_ts_ms)
    spoken = (
        acc.last_word_ms - acc.first_word_ms if acc.first_word_ms is not None and acc.last_word_ms is not None else 0.0
    )
    if start is not None and end is not None and end > start:
        return max(float(end - start), spoken)
    return spoken


class OverlappingSpeech(QaMetric):
    name = "overlapping_speech"
    label = "Overlapping speech"
    value_meaning = "Number of overlaps"
    default_threshold = 70
    judge_kind = "computed"
    handles = frozenset({"turn"})

    def start(self) -> OverlapAcc:
        return OverlapAcc()

    def update(self, acc: OverlapAcc, event: Turn, call: CallState) -> None:
        if acc.last_turn_ts_ms is None or event.ts_ms > acc.last_turn_ts_ms:
            acc.last_turn_ts_ms = event.ts_ms
        words = event.data.words
        if not words:
            return
        span = Span(*word_span(words))
        if acc.first_word_ms is None or span.start_ms < acc.first_word_ms:
            acc.first_word_ms = span.start_ms
        if acc.last_word_ms is None or span.end_ms > acc.last_word_ms:
            acc.last_word_ms = span.end_ms

        previous = acc.last_agent if event.data.role == "user" else acc.last_user
        if previous is not None and span.start_ms < previous.end_ms and span.end_ms > previous.start_ms:
            acc.overlaps += 1
            acc.overlap_ms += max(0.0, min(previous.end_ms, span.end_ms) - max(previous.start_ms, span.start_ms))
        if event.data.role == "user":
            acc.last_user = span
        else:
            acc.last_agent = span

    def finalize(self, acc: OverlapAcc, call: CallState) -> MetricResult:
        if not agent_spoke(call):  # (no one to talk over: a score of 100 would pass a dead call)
            return self.not_applicable(AGENT_DID_NOT_SPEAK)
        length_ms = call_length_ms(acc, call)
        # (At most 100: overlaps of three turns at once can share time and count it twice.)
        percent = min(100.0, 100.0 * acc.overlap_ms / length_ms) if length_ms > 0 else 0.0
        score = 100.0 - PENALTY_PER_OVERLAP * acc.overlaps - PENALTY_PER_OVERLAP_PERCENT * percent
        return self.scored(
            acc.overlaps,
            score,
            total_overlap_ms=round(acc.overlap_ms, 1),
            overlap_percent=round(percent, 2),
            call_length_ms=round(length_ms, 1),
        )
