"""`GET /alerts/episodes`: each alert episode (pending → firing → resolved) with its transitions and the
calls that drove it, as every worker reads them from the alerts topic (`callqa.alerts`, one event per
transition, keyed by the episode's dedupe key: models/alerts.py).

Every worker reads the whole topic, so any worker answers. It keeps the MAX_EPISODES latest episodes
(by their latest transition): the alerts page shows recent ones, and a topic of years must not grow a
worker without end.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import msgspec

from models.alerts import Alert

MAX_EPISODES = 1_000
MAX_SAMPLE_CALLS = 20
_decode = msgspec.json.Decoder(Alert).decode


class AlertEpisodes:
    def __init__(self, limit: int = MAX_EPISODES) -> None:
        self.limit = limit
        self._episodes: OrderedDict[str, dict[str, Any]] = OrderedDict()  # oldest latest-transition first

    def apply(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        if not value:
            return
        alert = _decode(value)
        episode = self._episodes.pop(alert.dedupe_key, None)
        if episode is None:
            episode = {
                "dedupe_key": alert.dedupe_key,
                "rule": alert.rule,
                "scope": alert.scope,
                "metric": alert.metric,
                "severity": alert.severity,
                "episode_start_ms": alert.episode_start_ms,
                "transitions": [],
                "sample_call_ids": [],
            }
        transition = {
            "state": alert.state,
            "event_ts_ms": alert.event_ts_ms,
            "pass_rate": alert.pass_rate,
            "passed": alert.passed,
            "total": alert.total,
            "reason": alert.reason,
        }
        if transition not in episode["transitions"]:  # (an event published again after a crash)
            episode["transitions"].append(transition)
        episode["state"] = alert.state
        episode["severity"] = alert.severity
        calls = episode["sample_call_ids"]
        calls.extend(call_id for call_id in alert.sample_call_ids if call_id not in calls)
        del calls[MAX_SAMPLE_CALLS:]
        self._episodes[alert.dedupe_key] = episode
        while len(self._episodes) > self.limit:
            self._episodes.popitem(last=False)

    def newest_first(self, state: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        episodes = [e for e in reversed(self._episodes.values()) if state is None or e["state"] == state]
        return episodes[:limit] if limit is not None else episodes
