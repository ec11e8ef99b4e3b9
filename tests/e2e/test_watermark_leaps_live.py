"""End to end through the real (embedded) broker: a worker holds one call's leap in event time back,
and its idle tick bears out a leap its own clock agrees with."""

from __future__ import annotations

import json
import time

import pytest

from streams.partitioning import partition_for
from tests.helpers.livekit import collect_results, send, settings_for, start_worker

pytestmark = pytest.mark.broker

# Hours fast: within the future-time bound (a day), so the leap rule, not that bound, holds it back.
HOURS_FAST = 12 * 3_600_000


def _calls_of_partition(prefix: str, partition: int, count: int, partitions: int = 4) -> list[str]:
    """`count` call_ids that Kafka's default partitioner sends to `partition`."""
    ids = (f"{prefix}-{n}" for n in range(1_000))
    return [call_id for call_id in ids if partition_for(call_id, partitions) == partition][:count]


def _line(call_id: str, n: int, ts_ms: int, type_: str, data: dict) -> str:
    return json.dumps(
        {"v": 1, "event_id": f"{call_id}:{n}", "call_id": call_id, "ts_ms": ts_ms, "type": type_, "data": data}
    )


def test_a_fast_clock_sweeps_nobody_and_a_call_after_a_quiet_hour_is_swept_on_time(broker, topic_prefix, tmp_path):
    now = int(time.time() * 1000)
    talking, skewed = _calls_of_partition("talking", 0, 2)
    earlier, after_quiet_hour = _calls_of_partition("quiet", 1, 2)
    lines = [
        # Partition 0: a call talks; another call's clock is hours fast; the first goes on and ends.
        _line(talking, 0, now, "call.started", {"agent_id": "a1", "inactivity_timeout_s": 60}),
        _line(skewed, 0, now + HOURS_FAST, "call.started", {"agent_id": "a1"}),
        _line(talking, 1, now + 1_000, "turn", {"role": "user", "text": "are you there?"}),
        _line(talking, 2, now + 2_000, "call.ended", {"stop_reason": "[EXIT]"}),
        # Partition 1: a call an hour ago, then one now that goes silent (2 s timeout) and never ends.
        _line(earlier, 0, now - 3_600_000, "call.started", {"agent_id": "a1"}),
        _line(earlier, 1, now - 3_599_000, "call.ended", {"stop_reason": "[EXIT]"}),
        _line(after_quiet_hour, 0, now, "call.started", {"agent_id": "a1", "inactivity_timeout_s": 2}),
    ]
    log = tmp_path / "calls.jsonl"
    log.write_text("\n".join(lines) + "\n")
    settings = settings_for(broker, topic_prefix)
    worker = start_worker(broker, topic_prefix, env={"CALLQA_IDLE_TICK_S": "0.5", "CALLQA_ALLOWED_LATENESS_MS": "500"})
    try:
        send(str(log), settings, end_of_input=False, batch_size=1)
        expected = {talking: {"version": 1}, after_quiet_hour: {"version": 1}}
        results = {r["call_id"]: r for r in collect_results(settings, expected, timeout_s=60)}
        with open(worker.log_path) as log_file:
            worker_log = log_file.read()
    finally:
        worker.stop()
    # Before, the skewed call's event swept the talking call at once, and its turn and end were refused.
    assert results[talking]["evaluation"]["stop_reason"] == "[EXIT]"
    # Before, nothing vouched for the hour: the silent call waited an hour of the worker's ticks.
    assert results[after_quiet_hour]["evaluation"]["stop_reason"] == "[INACTIVITY_TIMEOUT]"
    assert skewed not in results
    assert f"call {skewed!r} on partition 0 has events" in worker_log
    assert worker_log.count("ahead of this worker's clock") == 1  # once, though the timer ran every 0.5 s
