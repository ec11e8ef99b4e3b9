"""A rule's verdict on one window reading, and the state machine of one rule on one scope.

States: inactive → pending → firing → resolved, and back to inactive (a new breach starts a new
episode, with a new dedupe key). An episode is one run from pending to resolved.

- No verdict while the window holds fewer than `min_calls` scored calls: nothing changes.
- Breach: the window's pass rate is below `fire_below` and, when the rule has a long window, the
  long window's pass rate is below `fire_below` too (a short dip alone does not page anyone).
- Healthy: the window's pass rate is at or above `clear_above` (the long window does not hold a
  recovery back: it only confirms breaches). Between the two thresholds lies the hysteresis band:
  rates flapping inside it change nothing.
- inactive + breach → pending (the episode starts at the watermark).
- pending + healthy → resolved (the breach ended before it fired); pending + breach, once `for_s` of
  event time has passed since the episode started → firing. A pending episode inside the band keeps
  waiting (the band does not restart the clock), but fires only on an evaluation that breaches.
- firing + healthy → resolved.

`for_s` is measured in event time (the watermark), so a replay fires at the same point of the stream.
With `for_s` 0 an episode passes through pending and fires in the same evaluation: every episode
publishes the same sequence of states.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from msgspec import Struct

from models.alert_rules import AlertRule
from scorers.alerting.windows import WindowTotals

Verdict = Literal["breach", "between", "healthy"]
EpisodeState = Literal["pending", "firing"]


class Episode(Struct, kw_only=True):
    """A rule's open episode on one scope: pending or firing (an inactive scope has none)."""

    rule: AlertRule  # the rule as it stands (updated when only its thresholds change)
    scope: str
    state: EpisodeState
    started_ms: int
    dedupe_key: str
    firing_alert: dict[str, Any] | None = None  # the published firing event, for `firing()`


def verdict(rule: AlertRule, window: WindowTotals, long_window: WindowTotals | None) -> Verdict | None:
    """None: too few scored calls for a verdict."""
    if window.total < rule.min_calls or window.pass_rate is None:
        return None
    rate = window.pass_rate
    # The long window holds the short one (validation keeps it longer), so it has at least
    # `min_calls` scored calls whenever the short one has.
    long_breach = long_window is None or (long_window.pass_rate is not None and long_window.pass_rate < rule.fire_at)
    if rate < rule.fire_at and long_breach:
        return "breach"
    if rate >= rule.clear_at:
        return "healthy"
    return "between"


def transitions(rule: AlertRule, episode: Episode | None, judged: Verdict | None, now_ms: int) -> list[str]:
    """The states published at `now_ms`, in order: [], ["pending"], ["pending", "firing"],
    ["firing"] or ["resolved"]."""
    if judged is None:
        return []
    if episode is None:
        if judged != "breach":
            return []
        return ["pending", "firing"] if rule.for_ms == 0 else ["pending"]
    if judged == "healthy":
        return ["resolved"]
    if episode.state == "pending" and judged == "breach" and now_ms - episode.started_ms >= rule.for_ms:
        return ["firing"]
    return []


def dedupe_key(rule_name: str, scope: str, metric: str, started_ms: int, cause: str) -> str:
    """Stable across replays and shared by one episode's pending, firing and resolved events.

    `cause` names what started the episode (the result that was counted, or the rule as it was
    changed): the watermark alone does not tell two episodes apart, as one can resolve and the next
    start while late results hold the watermark still."""
    text = "\x1f".join((rule_name, scope, metric, str(started_ms), cause))
    return hashlib.sha256(text.encode()).hexdigest()[:20]
