"""The alert event: one per state transition of one rule on one scope, on `callqa.alerts`.

Key = `dedupe_key`, the same for the `pending`, `firing` and `resolved` events of one episode (a
breach from its start to its end), so a consumer keeps the newest event per key. Windows are in event
time and half-open at the start: a window holds the calls that ended in (`window_start_ms`,
`window_end_ms`], and `window_end_ms` is the watermark (the latest call end seen).
"""

from __future__ import annotations

from typing import Literal

from msgspec import Struct

AlertState = Literal["pending", "firing", "resolved"]


class WindowReading(Struct, kw_only=True):
    """A window's figures for one scope and metric: calls scored, passed, pass rate, average score."""

    window_s: float
    window_start_ms: int
    window_end_ms: int
    total: int
    passed: int
    pass_rate: float | None  # None: no call scored in the window
    average_score: float | None


class Alert(Struct, kw_only=True):
    rule: str
    scope: str  # the scope instance: `all`, `agent:a1`, `cohort:billing`
    metric: str
    state: AlertState
    severity: str
    # The rule's (short) window at the transition.
    pass_rate: float | None
    passed: int
    total: int
    average_score: float | None
    window_s: float
    window_start_ms: int
    window_end_ms: int
    fire_below: float
    clear_above: float
    min_calls: int
    for_s: float
    long_window: WindowReading | None  # the rule's optional longer window, which must breach too
    sample_call_ids: list[str]  # a few calls of the window, failing ones first, newest first
    episode_start_ms: int  # event time at which the episode went pending
    event_ts_ms: int  # event time of the transition (the watermark)
    dedupe_key: str
    reason: str
