"""The idle clock: a quiet partition with open calls gets a watermark tick, and only then."""

from __future__ import annotations

from scorers.engine import CallEngine
from streams.worker.clock import idle_ticks
from streams.worker.live_scorer import LiveScorer
from tests.helpers.eventkit import T0
from tests.helpers.workerkit import handle_as_the_worker_does, message


def test_a_partition_whose_calls_have_all_ended_gets_no_tick():
    live = LiveScorer(CallEngine())
    live.handle(
        message("call.started", {"agent_id": "a1", "inactivity_timeout_s": 600}, "i1", T0), "callqa.events", 0, 0
    )
    assert [t.data.partition for t in idle_ticks(live, now=1e9, idle_s=5)] == [0]  # open: ticked
    live.handle(message("call.ended", {"stop_reason": "[EXIT]"}, "i2", T0 + 1), "callqa.events", 0, 1)
    assert idle_ticks(live, now=1e9, idle_s=5) == []  # its deadline is still in the heap, but it ended


def test_a_partition_restored_without_a_message_is_ticked_so_its_open_calls_can_be_swept():
    table: dict[bytes, bytes] = {}
    first = LiveScorer(CallEngine())
    handle_as_the_worker_does(first, message("call.started", {"agent_id": "a1"}, "q1", T0, call_id="open"), 0, table)
    restarted = LiveScorer(CallEngine())  # the message above was acknowledged: nothing is delivered again
    assert idle_ticks(restarted, now=100.0, idle_s=5) == []
    assert restarted.restore_quiet_partition(0, table.items(), now=100.0) == 1
    assert idle_ticks(restarted, now=103.0, idle_s=5) == []  # not idle long enough yet
    (tick,) = idle_ticks(restarted, now=110.0, idle_s=5)
    assert tick.data.partition == 0 and tick.ts_ms == T0 + 10_000
