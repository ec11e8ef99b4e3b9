"""The per-call processing loop shared by the live worker and in-process replay.

For every event: skip what was already applied (a redelivered offset, or an event_id seen before),
refuse what can no longer change the call, fold the rest, and score the call when it ends or when a
post-call event re-scores it (version + 1). The inactivity sweep hands back synthetic `call.ended`
events for the caller to record and then feed in like any other event.

No I/O here: the live worker and `callqa replay` differ only in where events come from and where
results go.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import msgspec

from models.call_state import CallState
from models.deadletter import failure_reason
from models.events import (
    AFTER_END_CLASSES,
    RESCORE_CLASSES,
    CallEnded,
    CallStarted,
    Event,
    JudgeResult,
    TranscriptCorrected,
    Watermark,
    event_signature,
    signature_parts,
)
from models.results import CallResult
from scorers.call_result import score_call
from scorers.cohorts import CohortBook
from scorers.fold import MAX_SCORER_ERROR_CHARS, apply_event, new_call
from scorers.future_time import from_the_future, future_reason
from scorers.inactivity import (
    DEFAULT_ALLOWED_LATENESS_MS,
    INACTIVITY_ID_SUFFIX,
    InactivitySweeper,
    RetentionClock,
    inactivity_end_event,
    is_inactivity_end,
)
from scorers.registry import ScorerRegistry, default_registry
from scorers.text_forms import unicode_normal
from scorers.watermarks import DEFAULT_MAX_LEAP_MS

Status = Literal["applied", "duplicate", "redelivered", "rejected", "watermark"]

# What a producer whose events come late does about it (docs/concepts/event-time.md#late-events).
LATE_DELIVERY_ADVICE = (
    "A call's events must reach its partition within its inactivity timeout and the allowed "
    "lateness of the partition's newest event time: a producer that sends calls once they end, "
    "or whose clock runs behind the others', needs CALLQA_ALLOWED_LATENESS_MS of at least its "
    "delay"
)


# Unix milliseconds below this are before March 1973: a time in seconds, or counted from the call's start.
_PLAUSIBLE_UNIX_MS = 100_000_000_000


def _seconds_hint(ts_ms: int) -> str:
    if ts_ms >= _PLAUSIBLE_UNIX_MS:
        return ""
    return (
        f" (an event time of {ts_ms} is {ts_ms / 86_400_000:.1f} days after 1970: ts_ms is Unix time in "
        "milliseconds, not seconds, nor time since the call started)"
    )


def unscored_reason(event: Event, version: int, exc: Exception) -> str:
    failure = f"{type(exc).__name__}: {exc}"[:MAX_SCORER_ERROR_CHARS]
    return (
        f"event {event.event_id!r}: applied to call {event.call_id!r}, but its result (version {version}) "
        f"could not be assembled ({failure}): the event is kept in the call's state, that version is "
        f"not published"
    )


def uncorrectable_turn(call: CallState, event: TranscriptCorrected) -> str | None:
    """Why a transcript correction cannot apply to `call` (None: it can). It corrects what the user
    was heard to say (the WER reference), so it must name one of the call's user turns: applied
    otherwise, it would publish a new version that changed nothing while its sender believed it had."""
    index, turns = event.data.turn_index, call.turns
    if not 0 <= index < len(turns):
        held = f"its {len(turns)} turns are numbered 0 to {len(turns) - 1}" if turns else "it has no turns"
        return f"turn_index {index} names no turn of call {call.call_id!r} ({held})"
    if turns[index].role != "user":
        return (
            f"turn_index {index} of call {call.call_id!r} is the {turns[index].role}'s turn; only user turns are "
            "corrected"
        )
    original = event.data.original
    # (Compared in one Unicode form: a correction typed on another system may spell the same text
    # decomposed, or with invisible direction marks.)
    if original is not None and unicode_normal(original).split() != unicode_normal(turns[index].text).split():
        return (
            f"turn_index {index} of call {call.call_id!r} is {_excerpt(turns[index].text)!r}, not the text this "
            f"correction replaces ({_excerpt(original)!r}): a turn sent before it may have been refused "
            "(dead-lettered), which moves the turns after it"
        )
    return None


def _excerpt(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def foreign_judgement(call: CallState, event: JudgeResult) -> str | None:
    """Why a judge's answer does not belong to `call` (None: it does). An answer is stamped with the
    end of the call it judged plus 1 ms (scorers/judge/requests.py), and its event_id names only the
    call_id. A judge that fell behind by more than the retention can answer a call forgotten since,
    whose call_id a new call has taken up: applied, the new call would carry the old one's judgement,
    and its own answer, under the same event_id, would be refused as a reuse. Such an answer judges
    an end that comes before every event of the call held now."""
    first = call.first_ts_ms
    if first is None or event.ts_ms > first:
        return None
    return (
        f"the judge's answer for call {call.call_id!r} judges a call that ended at event time "
        f"{event.ts_ms - 1}, before the call of that id held now began (at event time {first}): "
        f"an earlier call of the id, forgotten since"
    )


# What `process` says about each event. A msgspec Struct out of the cyclic GC rather than a
# dataclass: one is made for every event and dropped at once, and a Struct costs less than half as
# much to make (the same holds for the decoder's `Decoded` and the live worker's `Outbox`).
class Processed(msgspec.Struct, gc=False):
    status: Status
    call: CallState | None = None
    result: CallResult | None = None
    reason: str | None = None


@dataclass
class EngineCounters:
    applied: int = 0
    duplicate: int = 0
    redelivered: int = 0
    rejected: int = 0
    results: int = 0
    unscored: int = 0  # results that could not be assembled (a bug): their events are dead-lettered
    calls: int = 0  # calls taken up, forgotten ones included
    watermarks: int = 0  # event-time marks, which belong to no call


@dataclass
class CallEngine:
    registry: ScorerRegistry = field(default_factory=default_registry)
    cohorts: CohortBook = field(default_factory=CohortBook)
    allowed_lateness_ms: int = DEFAULT_ALLOWED_LATENESS_MS
    # How far past its partition's watermark one call's event may move it on its own (0: any
    # distance); a longer leap waits to be borne out (scorers/watermarks.py).
    max_watermark_leap_ms: int = DEFAULT_MAX_LEAP_MS
    # Ended calls are kept this long (event time) for late annotations, corrections and judge answers.
    retention_after_end_ms: int = 86_400_000
    calls: dict[str, CallState] = field(default_factory=dict)
    counters: EngineCounters = field(default_factory=EngineCounters)
    # An event more than this past `wall_clock_ms` is refused as from the future (0: no bound;
    # scorers/future_time.py). The caller sets the clock: the live worker before each message, replay
    # once when it starts (None: no check).
    future_bound_ms: int = 0
    wall_clock_ms: int | None = None
    # By partition, new calls refused as too late (behind the watermark by more than the retention):
    # a partition whose time was moved too far ahead refuses them all (`/health` shows it).
    too_late: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.sweeper = InactivitySweeper(self.allowed_lateness_ms, max_leap_ms=self.max_watermark_leap_ms)
        # Kept at least the allowed lateness: an event of a call forgotten sooner, arriving within the
        # lateness, would be taken up as a new call and publish a second version 1 (retention 0 did).
        self._retained = RetentionClock(self.sweeper, self._forgetting_span_ms())
        # Partitions told that an input ended, with the calls it named (None: not said, every open
        # call; see `sweep`).
        self._end_of_input: dict[int, set[str] | None] = {}

    # ------------------------------------------------------------------------------------ events

    def process(self, event: Event, partition: int = 0, position: int | None = None, refold: bool = False) -> Processed:
        """Fold one event. `position` is its place in the source partition (monotone within it; for a
        batch message, offset and index combined): an event at or below the call's highest applied
        position is a redelivery and is skipped. Replay passes None. `refold`: an event the journal
        holds, applied once already, re-folded to restore its call: it leaves the partition's time
        alone (the caller sets it from the journal afterwards, `InactivitySweeper.restore_time`), so
        nothing is decided against a time it would only have half rebuilt."""
        # Runs for every event: locals instead of repeated attribute lookups.
        if (
            self.future_bound_ms
            and not refold
            and from_the_future(event.ts_ms, self.wall_clock_ms, self.future_bound_ms)
        ):
            return self._from_the_future(event)
        if isinstance(event, Watermark):
            self.counters.watermarks += 1
            if event.data.reset:  # an operator's command: the partition's time starts again from here
                self.sweeper.reset_time(partition, event.ts_ms)
            else:
                self.sweeper.observe(partition, event.ts_ms)
            if event.data.end_of_input:
                named, told = event.data.calls, self._end_of_input
                if named is None:
                    told[partition] = None
                elif partition not in told:
                    told[partition] = set(named)
                elif (named_before := told[partition]) is not None:  # (several ends before a sweep: all they name)
                    named_before.update(named)
            return Processed("watermark")

        call_id = event.call_id
        call = self.calls.get(call_id)
        if call is None:
            if type(event) in RESCORE_CLASSES:
                # A post-call event needs the call it changes: one that never started here, or that
                # was forgotten after its retention, has nothing left to re-score.
                self.counters.rejected += 1
                tag = event.__struct_config__.tag
                return Processed(
                    "rejected",
                    reason=f"event {event.event_id!r}: a {tag!r} event names call "
                    f"{call_id!r}, which is not held (it never started, or it ended "
                    "and was forgotten after its retention)",
                )
            watermark = None if refold else self.sweeper.watermark(partition)
            if watermark is not None and event.ts_ms < watermark - self._forgetting_span_ms():
                return self._too_late_for_a_new_call(event, watermark, partition)
            call = self.calls[call_id] = new_call(call_id, self.registry)
            self.counters.calls += 1
        if position is not None:
            if position <= call.applied_offset:
                self.counters.redelivered += 1
                return Processed("redelivered", call)
            call.applied_offset = position
        event_id = event.event_id
        signature = event_signature(event)
        earlier = call.seen_event_ids.add(event_id, signature)  # (a new id is recorded as seen from now on)
        if earlier is not None:
            if earlier == signature or is_inactivity_end(event):
                self.counters.duplicate += 1
                return Processed("duplicate", call)
            return self._reused_event_id(call, event, earlier)

        rescores = type(event) in AFTER_END_CLASSES
        ended_before = call.ended is not None
        if ended_before and not rescores:
            if is_inactivity_end(event):
                call.seen_event_ids.discard(event_id)  # (not applied: see `_refused`)
                return self._superseded_sweep_end(call)
            tag = event.__struct_config__.tag
            reason = f"a {tag!r} event cannot change call {call_id!r}, which has already ended"
            if f"{call_id}{INACTIVITY_ID_SUFFIX}" in call.seen_event_ids:
                reason += self._swept_because(call)
            return self._refused(call, event_id, reason)
        if rescores and type(event) is TranscriptCorrected:
            refusal = uncorrectable_turn(call, event)
            if refusal is not None:
                return self._refused(call, event_id, refusal)
        elif rescores and type(event) is JudgeResult:
            refusal = foreign_judgement(call, event)
            if refusal is not None:
                return self._refused(call, event_id, refusal)
        elif type(event) is CallStarted and call.started_ts_ms is not None:
            # A call starts once: a second start (another event_id) would silently replace the first's
            # agent, run, cohorts and scenario, moving the call out of the run it was started in.
            return self._refused(
                call,
                event_id,
                f"call {call_id!r} has already started (at event time {call.started_ts_ms}); a call starts once",
            )

        first_activity = call.last_activity_ts_ms is None
        apply_event(call, event, self.registry)
        self.counters.applied += 1
        if type(event) is not JudgeResult and not refold:
            # A judge's answer is stamped just after the call's end, by whoever asked: it tells of the
            # call, not of the partition's time. Moving the watermark, a log recorded with answers
            # (`--judge --record`) could sweep a call that the same log without them does not.
            self.sweeper.observe(partition, event.ts_ms, call_id)
        if first_activity and call.last_activity_ts_ms is not None:
            self.sweeper.track(partition, call)

        if call.ended is None:
            return Processed("applied", call)
        if not ended_before:
            self._retained.track_end(partition, call)
        elif not rescores:
            return Processed("applied", call)
        call.version += 1
        call.result_position = -1 if position is None else position
        call.result_event_ts_ms = event.ts_ms
        try:
            result = score_call(call, self.registry, self.cohorts, call.version, event.ts_ms)
        except Exception as exc:  # a bug in assembling one result must not stop the stream
            # The event stays applied (the call's state, and the journal, keep it); the reason goes
            # with it to the dead letters, where the missing version is found. Every metric's own
            # failure is already contained in the result (`scorers.call_result`): this is the rest.
            self.counters.unscored += 1
            return Processed("applied", call, reason=unscored_reason(event, call.version, exc))
        self.counters.results += 1
        return Processed("applied", call, result)

    def process_guarded(self, event: Event, partition: int = 0, position: int | None = None) -> Processed:
        """`process`, with a failure turned into the event's refusal: a bug on one event (what the
        decoder let through and the engine cannot take) must never stop a partition. The worker and
        replay both process through here, so they dead-letter such an event alike."""
        try:
            return self.process(event, partition, position)
        except Exception as exc:  # whatever it is, it is that event's, not the stream's
            self.counters.rejected += 1
            return Processed("rejected", self.calls.get(event.call_id), reason=failure_reason(event.event_id, exc))

    def _swept_because(self, call: CallState) -> str:
        """Why the sweep ended `call`, for the events refused after that end: a producer behind the
        others (calls sent once they end, a clock that runs behind) sees its calls ended this way."""
        return (
            f": the inactivity sweep ended it at event time {call.ended_ts_ms}, once its partition's time had "
            f"passed its last activity by more than its inactivity timeout "
            f"({round(call.inactivity_timeout_s * 1000)} ms) and the allowed lateness "
            f"({self.allowed_lateness_ms} ms) together. {LATE_DELIVERY_ADVICE}"
        )

    def _forgetting_span_ms(self) -> int:
        """How far behind its partition's watermark an event's call may have ended and been forgotten.
        Never less than the allowed lateness: a new call's first event reordered within it is taken up."""
        return max(self.retention_after_end_ms, self.allowed_lateness_ms)

    def _from_the_future(self, event: Event) -> Processed:
        """The refusal of an event stamped more than the bound past the clock."""
        assert self.wall_clock_ms is not None
        self.counters.rejected += 1
        return Processed(
            "rejected", reason=future_reason(event.event_id, event.ts_ms, self.wall_clock_ms, self.future_bound_ms)
        )

    def _too_late_for_a_new_call(self, event: Event, watermark: int, partition: int) -> Processed:
        """An event of a call not held, older than the retention: its call may have ended and been
        forgotten, and taking it up as a new call would publish a second version 1 over its result."""
        if is_inactivity_end(event):
            return self._superseded_sweep_end(None)
        self.counters.rejected += 1
        self.too_late[partition] = self.too_late.get(partition, 0) + 1
        tag = event.__struct_config__.tag
        return Processed(
            "rejected",
            reason=(
                f"event {event.event_id!r}: a {tag!r} event of call {event.call_id!r}, which is not held, at event "
                f"time {event.ts_ms}, more than the retention ({self._forgetting_span_ms()} ms) behind its partition's "
                f"watermark ({watermark}): its call may have ended and been forgotten, so it is not taken up as a "
                "new call"
                f"{_seconds_hint(event.ts_ms)}"
            ),
        )

    def _refused(self, call: CallState, event_id: str, reason: str) -> Processed:
        """An event of a held call refused after its id was recorded: the id is taken back. Only what
        is applied names an event of the call (the journal, which a restarted worker rebuilds the ids
        from, holds nothing else), so the same id sent again, mended, is taken as after a restart."""
        call.seen_event_ids.discard(event_id)
        self.counters.rejected += 1
        return Processed("rejected", call, reason=f"event {event_id!r}: {reason}")

    def _reused_event_id(self, call: CallState, event: Event, earlier: int) -> Processed:
        """An event under an event_id its call has already applied to another event (another type or
        event time): dropping it as a duplicate would lose it without a word."""
        self.counters.rejected += 1
        tag, ts_ms = signature_parts(earlier)
        return Processed(
            "rejected",
            call,
            reason=(
                f"event {event.event_id!r}: call {call.call_id!r} has already applied another event under this "
                f"event_id (a {tag!r} event at event time {ts_ms}; this one is a {event.__struct_config__.tag!r} "
                f"event at event time {event.ts_ms}): an event_id names one event of its call, so give this one an "
                "id of its own and send it again (or, when it belongs to another call than the one held under "
                f"{call.call_id!r}, give that call an id of its own: a call_id names one call)"
            ),
        )

    def _superseded_sweep_end(self, call: CallState | None) -> Processed:
        """A sweep's end, recorded to the log, coming back when it no longer applies: its call has
        ended otherwise (the worker that swept it lost its decision with it), or this very sweep ended
        it and let it go at once (its end lies further back than the retention). Not bad input."""
        self.counters.duplicate += 1
        return Processed("duplicate", call)

    def latest_result(self, call: CallState) -> CallResult | None:
        """The call's latest published version, scored again (the same document, as scoring is pure;
        None when there is none, or when it could not be assembled and so was never published)."""
        if call.version == 0 or call.result_event_ts_ms is None:
            return None
        try:
            return score_call(call, self.registry, self.cohorts, call.version, call.result_event_ts_ms)
        except Exception:  # dead-lettered when it first failed (see `process`)
            return None

    # ---------------------------------------------------------------------------------- sweeping

    def anything_due(self, partition: int) -> bool:
        """Whether `sweep` or `forget_expired` can find anything on `partition` now. Callers ask
        before running them after each event (a batch's events are swept as if sent one by one):
        nearly always neither can, and asking costs a third of running both."""
        return (
            partition in self._end_of_input
            or self.sweeper.anything_due(partition)
            or self._retained.anything_expired(partition)
        )

    def sweep(self, partition: int, end_of_input: bool = False) -> list[CallEnded]:
        """Synthetic inactivity ends for the partition's calls that are due. Not yet applied: the
        caller records each one and then passes it to `process` like any other event.

        `end_of_input` (replay's own end): every open call. An end-of-input watermark (a producer's
        input is over, `callqa send`) that names its input's calls ends those of them still open:
        the other open calls came from other producers, still sending on a shared deployment, and
        are left to their own inactivity. One that names none ends every open call of its partition."""
        told = partition in self._end_of_input
        named = self._end_of_input.pop(partition, None)
        if end_of_input:
            told, named = True, None
        return [
            inactivity_end_event(call)
            for call in self.sweeper.due(partition, self.calls, end_of_input=told, only=named)
        ]

    def forget_expired(self, partition: int) -> list[str]:
        """Forget the ended calls of `partition` whose retention has passed, and name them (the caller
        drops their stored state). A post-call event arriving later finds no call and is dead-lettered."""
        expired = self._retained.expired(partition, self.calls)
        self.forget(expired)
        if expired:
            self.sweeper.forget_leap(partition, expired)
        return expired

    def partitions(self) -> Iterable[int]:
        return list(self.sweeper.partitions)

    # ------------------------------------------------------------------------------- ownership

    def forget(self, call_ids: Iterable[str]) -> None:
        for call_id in call_ids:
            self.calls.pop(call_id, None)

    def release_partitions(self, partitions: Iterable[int]) -> None:
        """Drop the partitions' clocks, deadlines and retention entries (their calls are forgotten
        with `forget`): whatever comes back is rebuilt from its journal, with nothing left over."""
        for partition in partitions:
            self.sweeper.forget_partition(partition)
            self._retained.forget_partition(partition)
            self._end_of_input.pop(partition, None)
            self.too_late.pop(partition, None)
