"""End-to-end handoff latency: from the user's last audio to the agent's first audio after it.

Three sources, in order of preference, never mixed within one call so nothing is counted twice:
1. pre-measured `latency` events;
2. RTVI speaking events — a simulated user's `bot-stopped-speaking` (user side) → the agent's
   `bot-started-speaking`; failing that, the agent pipeline's `user-stopped-speaking` → its
   `bot-started-speaking` (both in event time, `ts_ms`);
3. turn timings — a user turn's `end_ms` → the next agent turn's `start_ms` (none when that turn
   started before the user's ended: talking over the user is an overlap, not a handoff); a turn
   without them is timed by its words, from its first word's start to its last word's end.
Each source keeps its own samples while the call runs; the first non-empty one is the call's.

A handoff measures nothing, and gives no sample, when the agent starts before the user's stop (skewed
clocks, or the agent talking over the user: negative, it would score as better than instant), when the
user speaks again before the agent starts (the stop was a pause, not the end of the user's turn), or
when the agent's turn is blank (no words: not a reply; for turn timings — a speaking sample measures
the agent's audio, and takes the text of its next agent turn, unless the user speaks first).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models.call_state import CallState, Record
from models.events import Event, Latency, Rtvi, Turn, word_span
from scorers.base import Scorer


class LatencySample(Record):
    latency_ms: float
    user_transcript: str = ""
    agent_transcript: str = ""

    def as_dict(self) -> dict[str, str | float]:
        return {
            "user_transcript": self.user_transcript,
            "agent_transcript": self.agent_transcript,
            "latency_ms": self.latency_ms,
        }


@dataclass(slots=True)
class _SpeakingSource:
    """Samples from one kind of 'user stopped' signal paired with the agent's 'bot started'."""

    samples: list[LatencySample] = field(default_factory=list)
    user_stopped_ts: int | None = None
    # Samples taken before the agent's transcript of that reply arrived.
    awaiting_agent_text: list[int] = field(default_factory=list)


@dataclass(slots=True)
class HandoffLatencyAcc:
    measured: list[LatencySample] = field(default_factory=list)
    simulated_user: _SpeakingSource = field(default_factory=_SpeakingSource)
    agent_pipeline: _SpeakingSource = field(default_factory=_SpeakingSource)
    from_turns: list[LatencySample] = field(default_factory=list)
    last_user_text: str = ""
    last_user_end_ms: float | None = None

    def samples(self) -> list[LatencySample]:
        for source in (self.measured, self.simulated_user.samples, self.agent_pipeline.samples, self.from_turns):
            if source:
                return source
        return []


class HandoffLatency(Scorer):
    name = "handoff_latency"
    handles = frozenset({"latency", "rtvi", "turn"})
    rtvi_messages = frozenset(
        {"bot-stopped-speaking", "user-stopped-speaking", "bot-started-speaking", "user-started-speaking"}
    )

    def start(self) -> HandoffLatencyAcc:
        return HandoffLatencyAcc()

    def update(self, acc: HandoffLatencyAcc, event: Event, call: CallState) -> None:
        if isinstance(event, Latency):
            d = event.data
            acc.measured.append(LatencySample(float(d.latency_ms), d.user_transcript, d.agent_transcript))
        elif isinstance(event, Rtvi):
            self._speaking(acc, event)
        elif isinstance(event, Turn):
            self._turn(acc, event)

    @staticmethod
    def _speaking(acc: HandoffLatencyAcc, event: Rtvi) -> None:
        kind, side = event.data.message.type, event.data.side
        # (The simulated user's pipeline calls its own speech the bot's.)
        if side == "user" and kind == "bot-stopped-speaking":
            acc.simulated_user.user_stopped_ts = event.ts_ms
        elif side == "user" and kind == "bot-started-speaking":
            acc.simulated_user.user_stopped_ts = None  # the user speaks again: that stop was a pause
        elif side == "agent" and kind == "user-stopped-speaking":
            acc.agent_pipeline.user_stopped_ts = event.ts_ms
        elif side == "agent" and kind == "user-started-speaking":
            acc.agent_pipeline.user_stopped_ts = None
        elif side == "agent" and kind == "bot-started-speaking":
            for source in (acc.simulated_user, acc.agent_pipeline):
                if source.user_stopped_ts is not None:
                    latency = float(event.ts_ms - source.user_stopped_ts)
                    if latency >= 0:
                        source.samples.append(LatencySample(latency, acc.last_user_text, ""))
                        source.awaiting_agent_text.append(len(source.samples) - 1)
                    source.user_stopped_ts = None  # one sample per handoff

    @staticmethod
    def _turn(acc: HandoffLatencyAcc, event: Turn) -> None:
        d = event.data
        if d.role == "user":
            acc.last_user_text = d.text
            acc.last_user_end_ms = d.end_ms if d.end_ms is not None or not d.words else word_span(d.words)[1]
            # A reply still without its text keeps none: the agent's next words answer this turn.
            acc.simulated_user.awaiting_agent_text.clear()
            acc.agent_pipeline.awaiting_agent_text.clear()
            return
        if not d.text.strip():
            return  # a blank agent turn is no reply: the reply that follows is the handoff's
        for source in (acc.simulated_user, acc.agent_pipeline):
            for index in source.awaiting_agent_text:
                source.samples[index].agent_transcript = d.text
            source.awaiting_agent_text.clear()
        start_ms = d.start_ms if d.start_ms is not None or not d.words else word_span(d.words)[0]
        if acc.last_user_end_ms is not None and start_ms is not None:
            # An agent turn that starts before the user finished talked over the user (an overlap),
            # it did not answer after the user's last audio: no sample, rather than a negative one.
            if start_ms >= acc.last_user_end_ms:
                acc.from_turns.append(LatencySample(float(start_ms - acc.last_user_end_ms), acc.last_user_text, d.text))
            acc.last_user_end_ms = None
