"""Alert episodes as read from the alerts topic: one per dedupe key, its transitions in order, latest first."""

from __future__ import annotations

import msgspec

from models.alerts import Alert
from streams.web.alert_episodes import AlertEpisodes


def alert(key: str, state: str, ts: int, calls: list[str]) -> bytes:
    return msgspec.json.encode(
        Alert(
            rule="agent latency",
            scope="agent:a1",
            metric="latency",
            state=state,
            severity="page",
            pass_rate=0.4,
            passed=4,
            total=10,
            average_score=50.0,
            window_s=900,
            window_start_ms=ts - 900_000,
            window_end_ms=ts,
            fire_below=0.6,
            clear_above=0.8,
            min_calls=10,
            for_s=0,
            long_window=None,
            sample_call_ids=calls,
            episode_start_ms=1000,
            event_ts_ms=ts,
            dedupe_key=key,
            reason="pass rate 40% below 60%",
        )
    )


def test_an_episodes_transitions_are_kept_in_order_with_the_calls_that_drove_it():
    episodes = AlertEpisodes()
    for value in (
        alert("k1", "pending", 1000, ["c1"]),
        alert("k1", "firing", 2000, ["c2", "c1"]),
        alert("k1", "firing", 2000, ["c2", "c1"]),
        alert("k1", "resolved", 3000, []),
    ):
        episodes.apply(b"k1", value, 0)
    (episode,) = episodes.newest_first()
    assert [t["state"] for t in episode["transitions"]] == ["pending", "firing", "resolved"]
    assert (episode["state"], episode["severity"], episode["sample_call_ids"]) == ("resolved", "page", ["c1", "c2"])


def test_latest_first_filtered_by_state_and_bounded():
    episodes = AlertEpisodes(limit=2)
    for number, state in enumerate(("firing", "pending", "firing")):
        episodes.apply(None, alert(f"k{number}", state, 1000 + number, []), number)
    assert [e["dedupe_key"] for e in episodes.newest_first()] == ["k2", "k1"]
    assert [e["dedupe_key"] for e in episodes.newest_first(state="firing")] == ["k2"]
