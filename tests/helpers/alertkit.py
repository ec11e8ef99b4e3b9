"""Build published results and event logs for the alert tests: agents whose calls pass or fail a metric
at known event times."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

T0 = 1_760_000_000_000  # event-time origin, Unix ms
AGENTS = ("a0", "a1", "a2")
CALL_EVERY_S = 10  # each agent ends one call every 10 s of event time


def result(
    call_id: str,
    agent_id: str | None,
    ended_ts_ms: int,
    passed: bool | None,
    *,
    metric: str = "latency",
    score: float | None = None,
    version: int = 1,
    cohort_ids: Iterable[str] = (),
    cohorts: Iterable[dict] = (),
    event_ts_ms: int | None = None,
) -> dict:
    """A published result with one metric; `passed` None: the metric did not apply."""
    if score is None and passed is not None:
        score = 90.0 if passed else 10.0
    return {
        "call_id": call_id,
        "version": version,
        "final": True,
        "agent_id": agent_id,
        "cohort_ids": list(cohort_ids),
        "run_id": None,
        "ended_ts_ms": ended_ts_ms,
        "event_ts_ms": event_ts_ms or ended_ts_ms,
        "metrics": [{"metric": metric, "value": None, "score": score, "passed": passed, "details": {}}],
        "cohorts": list(cohorts),
        "evaluation": {},
    }


def agent_stream(seconds: int, fails: Callable[[str, int], bool], agents: Iterable[str] = AGENTS) -> list[dict]:
    """One call per agent every CALL_EVERY_S seconds from T0 for `seconds`; `fails(agent, second)`
    says whether that call fails the latency metric. Calls of one instant end 1 ms apart per agent."""
    out = []
    for second in range(0, seconds, CALL_EVERY_S):
        for k, agent in enumerate(agents):
            out.append(result(f"{agent}-{second}", agent, T0 + second * 1000 + k, not fails(agent, second)))
    return out


def write_latency_log(
    path: str, seconds: int, slow: Callable[[str, int], bool], agents: Iterable[str] = AGENTS
) -> None:
    """An event log with the same shape as `agent_stream`: each call has two handoffs, 800 ms each
    (latency score 100, passes) or 3500 ms each when `slow` (score 16.7, fails the pass-at 60)."""
    lines = []
    for second in range(0, seconds, CALL_EVERY_S):
        for k, agent in enumerate(agents):
            call_id = f"{agent}-{second}"
            end = T0 + second * 1000 + k
            start = end - 8000
            latency = 3500 if slow(agent, second) else 800
            events = [
                ("call.started", start, {"agent_id": agent}),
                ("latency", start + 2000, {"latency_ms": latency}),
                ("latency", start + 5000, {"latency_ms": latency}),
                ("call.ended", end, {"stop_reason": "[EXIT]"}),
            ]
            for n, (type_, ts, data) in enumerate(events):
                lines.append(
                    (
                        ts,
                        json.dumps(
                            {
                                "v": 1,
                                "event_id": f"{call_id}:{n}",
                                "call_id": call_id,
                                "ts_ms": ts,
                                "type": type_,
                                "data": data,
                            }
                        ),
                    )
                )
    lines.sort(key=lambda item: item[0])
    with open(path, "w") as handle:
        handle.write("\n".join(line for _, line in lines) + "\n")


# One rule as a rules file holds it: every agent's latency pass rate over five minutes.
AGENT_LATENCY_TOML = """
[[rules]]
name = "agent latency"
scope = "agent:*"
metric = "latency"
window_s = 300
fire_below = 0.5
clear_above = 0.8
min_calls = 5
for_s = 60
severity = "critical"
"""
