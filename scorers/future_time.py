"""Time from the future: an event stamped further ahead of the clock than a bound is refused.

The watermark's leap rule (scorers/watermarks.py) holds back one call's clock leap until another source
bears it out; four calls of one fast clock bore each other out, and a partition's time went millennia
ahead, so every new call on it was refused as too late. So an event (a `watermark` event too) whose
`ts_ms` lies more than `bound_ms` past the clock is refused, whoever confirms it.

Which clock: the live worker's own, read when each message is handled. Replay uses the clock of the
machine it runs on, read once when it starts (`build_engine`), for the whole run: every event of a
log lies in the past of any replay run after it was recorded, so a log replays the same whenever it
runs, and an event the worker refused for lying beyond its clock plus the bound is refused by every
replay run before that time comes (for a clock that stamped the year 9000, every replay). The log's
own highest time would not do: a partition quiet for longer than the bound (a weekend) would have
its next calls refused. See docs/guides/hostile-input.md.
"""

from __future__ import annotations

DEFAULT_FUTURE_BOUND_MS = 86_400_000  # a day: far beyond any clock skew or batching delay


def from_the_future(ts_ms: int, clock_ms: int | None, bound_ms: int) -> bool:
    """Whether an event time lies more than `bound_ms` past `clock_ms` (None, or bound 0: no check)."""
    return bool(bound_ms) and clock_ms is not None and ts_ms > clock_ms + bound_ms


def future_reason(event_id: str, ts_ms: int, clock_ms: int, bound_ms: int) -> str:
    return (
        f"event {event_id!r}: its event time {ts_ms} is more than {bound_ms} ms (CALLQA_FUTURE_BOUND_S) past "
        f"the clock ({clock_ms}): an event from the future is refused, whoever bears it out "
        "(check the producer's clock)"
    )
