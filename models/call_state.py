"""What the worker keeps about one call between its events.

The core facts (who, which scenario, when, the turns) are kept here by the fold; each scorer keeps its
own small accumulator in `accumulators`, keyed by the scorer's name. Nothing here knows of Kafka.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

import msgspec

from models.events import MAX_TS_MS, AgentConfig, CallEndedData, JudgeResultData, ScenarioSpec

DEFAULT_INACTIVITY_TIMEOUT_S = 120.0


class EventIds:
    """The event_ids a call has applied, each with the signature of its event (its type and event
    time, `models.events.event_signature`): `event_id in ids`, and `ids.add(event_id, signature)`,
    which answers in one lookup whether the id is new and, if not, what it was applied to.

    Kept as two arrays in step, sorted by the id's 64-bit hash: 16 bytes an event instead of a string
    and a set slot (~150 bytes), which was the largest part of an open call's memory. Two different
    ids of one call with the same hash would make the second look like a reuse of the first: for a
    call of 1,000 events about one chance in 10^13. The hash is Python's string hash, which differs
    between processes: the ids are never stored, a restarted worker rebuilds them by re-folding the
    journal.
    """

    __slots__ = ("_hashes", "_signatures")

    def __init__(self) -> None:
        self._hashes = array("q")
        self._signatures = array("q")

    def _find(self, event_id: object) -> int | None:
        """Where `event_id` is kept (None: it is not)."""
        key = hash(event_id)
        hashes = self._hashes
        index = bisect_left(hashes, key)
        return index if index < len(hashes) and hashes[index] == key else None

    def __contains__(self, event_id: object) -> bool:
        return self._find(event_id) is not None

    def add(self, event_id: str, signature: int = 0) -> int | None:
        """Record `event_id` with its event's signature and return None; when the id was recorded
        already, record nothing and return the signature it was recorded with."""
        # (Every event comes here: the lookup is written out, not `_find`, to insert where it ends.)
        key = hash(event_id)
        hashes = self._hashes
        index = bisect_left(hashes, key)
        if index < len(hashes) and hashes[index] == key:
            return self._signatures[index]
        hashes.insert(index, key)
        self._signatures.insert(index, signature)
        return None

    def discard(self, event_id: str) -> None:
        """Forget `event_id` (an event refused after its id was recorded)."""
        index = self._find(event_id)
        if index is not None:
            del self._hashes[index]
            del self._signatures[index]

    def __len__(self) -> int:
        return len(self._hashes)

    def __repr__(self) -> str:
        return f"EventIds({len(self)} ids)"


class Record(msgspec.Struct, gc=False):
    """A small record a call keeps for each of many events (a turn, a latency sample, an utterance).

    Calls keep dozens of these for their whole life and they hold only strings and numbers, so they
    can never be part of a reference cycle: like the events, they are kept out of the cyclic garbage
    collector (`gc=False`), which otherwise walks every one of them in each collection (and they are
    cheaper to create than a dataclass).
    """


class TurnRecord(Record):
    ts_ms: int
    role: str
    text: str
    start_ms: float | None = None
    end_ms: float | None = None


@dataclass(slots=True)
class CallState:
    call_id: str
    agent_id: str | None = None
    cohort_ids: list[str] = field(default_factory=list)
    run_id: str | None = None
    scenario: ScenarioSpec | None = None
    agent_config: AgentConfig | None = None
    variables: dict[str, Any] = field(default_factory=dict)
    inactivity_timeout_s: float = DEFAULT_INACTIVITY_TIMEOUT_S

    started_ts_ms: int | None = None
    # When the accepted attempt began: the last `attempt.discarded` (None: the first attempt).
    attempt_started_ts_ms: int | None = None
    first_ts_ms: int | None = None
    # The latest event time of the events that could take the call up were it not held: all but the
    # post-call annotations, corrections and judge answers (the retention of an ended call runs from it).
    last_ts_ms: int | None = None
    # Event time of the last activity that resets the inactivity timer (any event of the call but
    # post-call annotations, watermarks and streamed audio levels: scorers/fold.py).
    last_activity_ts_ms: int | None = None

    ended: CallEndedData | None = None
    ended_ts_ms: int | None = None
    turns: list[TurnRecord] = field(default_factory=list)
    judge: JudgeResultData | None = None

    # Result bookkeeping: the version of the last published result (0 = none yet).
    version: int = 0
    events_applied: int = 0
    seen_event_ids: EventIds = field(default_factory=EventIds)
    # Highest source position applied (all of a call's events share one partition); -1 = none.
    applied_offset: int = -1
    # Where the latest version came from: the source position (-1 = replay) and event time of the event
    # that produced it, so that a redelivery of that event can publish it again (see LiveScorer).
    result_position: int = -1
    result_event_ts_ms: int | None = None

    accumulators: dict[str, Any] = field(default_factory=dict)
    # Scorer name -> the first failure of its update on this call (None: no failure, the usual case).
    # A scorer that raises on an event loses that event; the call, its other scorers and the worker
    # go on, and the result says so (evaluation["scorer_errors"], the metric's details).
    scorer_errors: dict[str, str] | None = None

    @property
    def has_ended(self) -> bool:
        return self.ended is not None

    @property
    def scenario_name(self) -> str:
        if self.scenario is not None and self.scenario.name:
            return self.scenario.name
        return self.call_id

    def attempt_start_ms(self, start: int | None) -> int | None:
        """`start` (the call's start, as the caller reads it), or later when an attempt was discarded
        after it: what the accepted attempt measures its duration from."""
        if start is None or self.attempt_started_ts_ms is None:
            return start
        return max(start, self.attempt_started_ts_ms)

    def inactivity_deadline_ms(self) -> int | None:
        if self.last_activity_ts_ms is None:
            return None
        # Capped at the latest event time the contract accepts, so that the synthetic `call.ended`
        # a sweep records at the deadline decodes again (from the journal, from a recorded log).
        return min(self.last_activity_ts_ms + round(self.inactivity_timeout_s * 1000), MAX_TS_MS)
