"""One bad message never stops scoring: what the probe found, as specifications (no broker here; the
worker's own path through MessageFlow and the journal, and replay, side by side)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from models.events import Event
from scorers.engine import CallEngine, Processed
from streams.replay.log_replay import replay
from streams.worker.live_scorer import LiveScorer
from tests.helpers.eventkit import T0
from tests.helpers.workerkit import handle_as_the_worker_does, message

DAY_MS = 86_400_000
WALL_MS = T0 + 3_600_000  # the worker's clock in these tests: an hour after the calls start
YEAR_9000_MS = 221_845_392_000_000
REASON_BOUND = 800  # characters: a few hundred, whatever the producer sent


def call(call_id: str, ts: int, ended: bool = True) -> list[bytes]:
    messages = [
        message("call.started", {"agent_id": "a"}, f"{call_id}:1", ts, call_id),
        message("turn", {"role": "user", "text": "hello there"}, f"{call_id}:2", ts + 1000, call_id),
    ]
    if ended:
        messages.append(message("call.ended", {"stop_reason": "[EXIT]"}, f"{call_id}:3", ts + 2000, call_id))
    return messages


def bounded(engine: CallEngine, future_bound_ms: int = DAY_MS) -> CallEngine:
    engine.future_bound_ms = future_bound_ms  # (as settings give it: CALLQA_FUTURE_BOUND_S)
    return engine


def live_worker(future_bound_ms: int = DAY_MS, engine: CallEngine | None = None) -> LiveScorer:
    live = LiveScorer(bounded(engine or CallEngine(), future_bound_ms))
    live.clock = lambda: WALL_MS / 1000
    return live


@dataclass
class Outcome:
    results: list[tuple[str, int]]
    reasons: list[str]


def run_live(messages: list[bytes], live: LiveScorer | None = None) -> Outcome:
    live = live or live_worker()
    table: dict[bytes, bytes] = {}
    results, reasons = [], []
    for offset, raw in enumerate(messages):
        out = handle_as_the_worker_does(live, raw, offset, table)
        results += [(result.call_id, result.version) for result in out.results]
        reasons += [letter.reason for letter in out.dead_letters]
    return Outcome(results, reasons)


def run_replay(messages: list[bytes], engine: CallEngine | None = None) -> Outcome:
    engine = engine or bounded(CallEngine())
    engine.wall_clock_ms = WALL_MS  # (replay's clock, read once when it starts)
    results: list[tuple[str, int]] = []
    reasons: list[str] = []
    replay(
        messages,
        engine,
        1,
        lambda result: results.append((result.call_id, result.version)),
        lambda rejected, index: reasons.append(rejected.reason),
    )
    return Outcome(results, reasons)


def poison_batch() -> bytes:
    metrics = {
        "v": 1,
        "type": "rtvi",
        "event_id": "p:2",
        "call_id": "p",
        "ts_ms": T0 + 1000,
        "data": {"message": {"type": "metrics", "data": {"ttfb": 100000000000000000000}}},
    }
    started = {
        "v": 1,
        "type": "call.started",
        "event_id": "p:1",
        "call_id": "p",
        "ts_ms": T0,
        "data": {"agent_id": "a"},
    }
    return json.dumps({"v": 1, "call_id": "p", "events": [started, metrics, started]}).encode()


def test_a_batch_with_a_10_to_the_20_integer_is_one_dead_letter_and_the_next_call_is_scored():
    # The probe: the journal could not encode the integer, and the worker stopped on every restart.
    messages = [
        poison_batch(),
        message("call.ended", {"stop_reason": "[EXIT]"}, "p:3", T0 + 2000, "p"),
        *call("next", T0 + 5000),
    ]
    live = run_live(messages)
    assert live.results == [("p", 1), ("next", 1)]
    assert len(live.reasons) == 1 and "does not fit in 64 bits - at `data.message.data.ttfb`" in live.reasons[0]
    assert run_replay(messages) == live


class PlantedBug(CallEngine):
    """An engine with a bug that raises on one event: what a failure later in the hot path looks like."""

    def process(self, event: Event, *args, **kwargs) -> Processed:
        if event.event_id == "boom":
            raise KeyError("a planted bug")
        return super().process(event, *args, **kwargs)


def test_an_event_that_fails_later_in_the_hot_path_is_dead_lettered_and_the_partition_goes_on():
    messages = [
        *call("c1", T0)[:2],
        message("turn", {"role": "agent", "text": "hi"}, "boom", T0 + 1500, "c1"),
        call("c1", T0)[2],
        *call("c2", T0 + 3000),
    ]
    live = run_live(messages, live_worker(engine=PlantedBug()))
    assert live.results == [("c1", 1), ("c2", 1)]
    assert len(live.reasons) == 1 and live.reasons[0].startswith("event 'boom': handling it failed (KeyError")
    assert run_replay(messages, bounded(PlantedBug())) == live


def test_events_of_four_calls_from_the_future_are_refused_and_the_partition_keeps_scoring():
    # Four calls of years 3134 to 9508 bore out each other's leap: the partition's time went millennia
    # ahead, and every good call after them was refused as too late.
    future = [
        message("call.started", {"agent_id": "a"}, f"f{n}:1", ts, f"f{n}")
        for n, ts in enumerate((36_000_000_000_000, 99_000_000_000_000, 180_000_000_000_000, 237_900_000_000_000))
    ]
    messages = [*call("before", T0), *future, *call("after", T0 + 10_000)]
    live = run_live(messages)
    assert live.results == [("before", 1), ("after", 1)]
    assert len(live.reasons) == 4 and all("from the future" in reason for reason in live.reasons)
    assert run_replay(messages) == live


def test_twelve_calls_from_the_year_9000_do_not_stop_a_partition_from_scoring_the_next_good_call():
    future = [message("call.started", {"agent_id": "a"}, f"y{n}:1", YEAR_9000_MS + n, f"y{n}") for n in range(12)]
    messages = [*call("first", T0), *future, *call("next", T0 + 10_000)]
    assert run_live(messages).results == [("first", 1), ("next", 1)]
    assert run_replay(messages).results == [("first", 1), ("next", 1)]


def test_an_event_just_within_the_bound_of_the_workers_clock_is_taken():
    messages = [
        message("call.started", {"agent_id": "a"}, "s:1", WALL_MS + DAY_MS, "s"),
        message("call.started", {"agent_id": "a"}, "t:1", WALL_MS + DAY_MS + 1, "t"),
    ]
    live = run_live(messages)
    assert len(live.reasons) == 1 and live.reasons[0].startswith("event 't:1': its event time")


def test_a_watermark_event_from_the_future_is_refused_too():
    far = json.dumps(
        {
            "v": 1,
            "type": "watermark",
            "event_id": "w",
            "call_id": "__watermark__",
            "ts_ms": YEAR_9000_MS,
            "data": {"partition": 0},
        }
    ).encode()
    live = run_live([*call("a", T0), far, *call("b", T0 + 10_000)])
    assert live.results == [("a", 1), ("b", 1)] and "from the future" in live.reasons[0]


def reset_to(ts_ms: int) -> bytes:
    return json.dumps(
        {
            "v": 1,
            "type": "watermark",
            "event_id": f"__watermark__:reset:0:{ts_ms}",
            "call_id": "__watermark__",
            "ts_ms": ts_ms,
            "data": {"partition": 0, "reset": True},
        }
    ).encode()


def test_a_watermark_reset_brings_back_a_partition_whose_time_was_moved_too_far():
    # A partition moved ahead before the bound existed (or with it off): new calls refused as too late.
    moved = json.dumps(
        {
            "v": 1,
            "type": "watermark",
            "event_id": "w",
            "call_id": "__watermark__",
            "ts_ms": YEAR_9000_MS,
            "data": {"partition": 0},
        }
    ).encode()
    live = live_worker(future_bound_ms=0)
    refused = run_live([moved, *call("late", T0)], live)
    assert refused.results == [] and live.engine.too_late == {0: 3}  # (the call's three events)
    back = run_live([reset_to(WALL_MS), *call("back", WALL_MS)], live)
    assert back.results == [("back", 1)] and back.reasons == []
    assert live.engine.sweeper.watermark(0) == WALL_MS + 2000


def test_a_reset_reaches_the_journal_so_a_restarted_worker_keeps_the_lower_time():
    moved = json.dumps(
        {
            "v": 1,
            "type": "watermark",
            "event_id": "w",
            "call_id": "__watermark__",
            "ts_ms": YEAR_9000_MS,
            "data": {"partition": 0},
        }
    ).encode()
    live, table = live_worker(future_bound_ms=0), {}
    for offset, raw in enumerate([*call("a", T0), moved, reset_to(WALL_MS)]):
        handle_as_the_worker_does(live, raw, offset, table)
    restarted = live_worker(future_bound_ms=0)
    restarted.restore_partition(0, table.items())
    assert restarted.engine.sweeper.watermark(0) == WALL_MS


def test_replay_takes_the_next_days_calls_after_a_quiet_day_as_the_worker_does():
    # (Against the log's own latest time, a quiet weekend would have refused Monday's calls.)
    messages = [*call("friday", T0 - 3 * DAY_MS), *call("monday", T0)]
    assert run_replay(messages).results == run_live(messages).results == [("friday", 1), ("monday", 1)]


def test_dead_letter_reasons_are_bounded_whatever_the_producer_sent():
    huge_id = "x" * 99_326
    raw = json.dumps(
        {"v": 1, "type": "no.such.type" * 1000, "event_id": huge_id, "call_id": "c", "ts_ms": T0, "data": {}}
    ).encode()
    live = run_live([raw])
    assert len(live.reasons) == 1 and len(live.reasons[0]) <= REASON_BOUND
    # The quoted id and type are cut, not what the reason says of them.
    assert live.reasons[0].startswith("event 'xxx") and "…': unknown event type 'no.such.type" in live.reasons[0]
    assert len(run_replay([raw]).reasons[0]) <= REASON_BOUND
