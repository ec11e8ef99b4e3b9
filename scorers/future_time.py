"""Time from the future: an event stamped further ahead of the clock than a bound is refused.

The watermark's leap rule (scorers/watermarks.py) holds back one call's clock leap until another source
bears it out; four calls of one fast clock bore each other out, and a partition's time went millennia
ahead, so every new call on it was refused as too late. So an event (a `watermark` event too) whose
`ts_ms` lies more than `bound_ms` past the clock is refused, whoever confirms it.

Which clock: the live worker's own (its wall clock when the message is handled). Replay reads no
clock: it uses the log's own time, the highest event time it has read so far on the event's partition,
those refused as from the future aside (none yet: nothing to compare with, the event is taken). Both are deterministic for the
worker's recorded topic in the usual case: an event years ahead is refused by both; see
docs/guides/hostile-input.md for where they can differ.
"""

from __future__ import annotations

DEFAULT_FUTURE_BOUND_MS = 86_400_000  # a day: far beyond any clock skew or batching delay


def from_the_future(ts_ms: int, clock_ms: int | None, bound_ms: int) -> bool:
    """Whether an event time lies more than `bound_ms` past `clock_ms` (None, or bound 0: no check)."""
    return bool(bound_ms) and clock_ms is not None and ts_ms > clock_ms + bound_ms


def future_reason(event_id: str, ts_ms: int, clock_ms: int, bound_ms: int, clock_name: str) -> str:
    return (f"event {event_id!r}: its event time {ts_ms} is more than {bound_ms} ms (CALLQA_FUTURE_BOUND_S) past "
            f"{clock_name} ({clock_ms}): an event from the future is refused, whoever bears it out "
            "(check the producer's clock)")
