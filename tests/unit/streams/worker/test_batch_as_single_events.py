"""docs/concepts/batches.md#a-batch-is-its-events-sent-one-by-one: a batch is scored exactly as the same events sent one
by one. The inactivity sweep and the forgetting of ended calls run after each event of a batch, in replay and in the
live worker, and the worker's journal brings back what the batch did, in the order it did it."""

from __future__ import annotations

import json

import msgspec

from scorers.engine import CallEngine
from streams.replay.log_replay import replay
from streams.worker.live_scorer import (
    MAX_EVENTS_PER_MESSAGE,
    LiveScorer,
    event_position,
    sweep_position,
)
from tests.helpers.workerkit import handle_as_the_worker_does

T0 = 1_760_000_000_000
INACTIVITY = "[INACTIVITY_TIMEOUT]"


def doc(type_: str, data: dict, event_id: str, ts: int, call_id: str) -> dict:
    return {"v": 1, "type": type_, "event_id": event_id, "call_id": call_id, "ts_ms": ts, "data": data}


def started(call_id: str, ts: int, timeout_s: float = 120) -> dict:
    return doc("call.started", {"agent_id": "a1", "inactivity_timeout_s": timeout_s}, f"{call_id}-start", ts, call_id)


def turn(call_id: str, n: int, ts: int) -> dict:
    return doc("turn", {"role": "user", "text": f"turn {n}"}, f"{call_id}-{n}", ts, call_id)


def ended(call_id: str, ts: int) -> dict:
    return doc("call.ended", {"stop_reason": "[EXIT]"}, f"{call_id}-end", ts, call_id)


def annotated(call_id: str, ts: int) -> dict:
    return doc("call.annotated", {"user_sentiment": "Positive"}, f"{call_id}-note", ts, call_id)


def audio_level(call_id: str, ts: int) -> dict:
    return doc(
        "rtvi",
        {"message": {"label": "rtvi-ai", "type": "user-audio-level", "data": {"value": 0.1}}},
        f"{call_id}-level",
        ts,
        call_id,
    )


def record(document: dict) -> bytes:
    return json.dumps(document).encode()


def batch(*documents: dict) -> bytes:
    return json.dumps({"v": 1, "events": list(documents)}).encode()


def singles(records: list[bytes]) -> list[bytes]:
    """The same events, each a record of its own."""
    out = []
    for raw in records:
        decoded = json.loads(raw)
        out += [record(item) for item in decoded["events"]] if "events" in decoded else [raw]
    return out


DAY_MS = 86_400_000


def engine(retention_ms: int = DAY_MS) -> CallEngine:
    # No lateness: a deadline (or, with no retention, a call's end) passes with the first later event.
    return CallEngine(allowed_lateness_ms=0, retention_after_end_ms=retention_ms)


def replayed(records: list[bytes], retention_ms: int = DAY_MS) -> tuple[list[bytes], list[tuple[str | None, str]]]:
    results: list[bytes] = []
    dead: list[tuple[str | None, str]] = []
    replay(
        records,
        engine(retention_ms),
        1,
        lambda r: results.append(msgspec.json.encode(r)),
        on_dead_letter=lambda rejected, index: dead.append((rejected.event_id, rejected.reason)),
    )
    return results, dead


def lived(records: list[bytes], retention_ms: int = DAY_MS) -> tuple[list[bytes], list[tuple[str | None, str]]]:
    """Each record a message of partition 0, then the end-of-input watermark replay assumes."""
    live = LiveScorer(engine(retention_ms))
    results: list[bytes] = []
    dead: list[tuple[str | None, str]] = []
    end = doc("watermark", {"end_of_input": True, "partition": 0}, "end", T0, "__watermark__")
    for offset, raw in enumerate(records + [record(end)]):
        out = live.handle(raw, "callqa.events", 0, offset)
        results += [msgspec.json.encode(r) for r in out.results]
        dead += [(letter.event_id, letter.reason) for letter in out.dead_letters]
    return results, dead


def stop_reasons(results: list[bytes]) -> dict[str, str]:
    return {(r := json.loads(line))["call_id"]: r["evaluation"]["stop_reason"] for line in results}


# A call whose deadline passes between two events of a batch is ended between them: its own event
# after that point is refused, as it is when the events come one by one.
SWEPT_BETWEEN = [
    record(started("A", T0, timeout_s=1)),
    record(started("B", T0 + 100)),
    batch(turn("B", 1, T0 + 5_000), turn("A", 1, T0 + 5_001)),
]


def test_replay_sweeps_between_the_events_of_a_batch():
    results, dead = replayed(SWEPT_BETWEEN)
    assert (results, dead) == replayed(singles(SWEPT_BETWEEN))
    assert stop_reasons(results)["A"] == INACTIVITY
    assert [event_id for event_id, _ in dead] == ["A-1"] and "already ended" in dead[0][1]


def test_the_live_worker_sweeps_between_the_events_of_a_batch_as_replay_does():
    assert lived(SWEPT_BETWEEN) == lived(singles(SWEPT_BETWEEN)) == replayed(SWEPT_BETWEEN)


# An ended call whose retention passes between two events of a batch is forgotten between them: its
# annotation after that point finds no call, as it does when the events come one by one.
FORGOTTEN_BETWEEN = [
    record(started("C", T0)),
    record(ended("C", T0 + 1_000)),
    batch(started("D", T0 + 2_000), annotated("C", T0 + 2_001)),
]


def test_replay_and_the_worker_forget_between_the_events_of_a_batch():
    results, dead = replayed(FORGOTTEN_BETWEEN, retention_ms=0)
    assert (results, dead) == replayed(singles(FORGOTTEN_BETWEEN), 0) == lived(FORGOTTEN_BETWEEN, 0)
    assert [json.loads(r)["version"] for r in results if json.loads(r)["call_id"] == "C"] == [1]
    assert [event_id for event_id, _ in dead] == ["C-note"] and "not held" in dead[0][1]


def restored_from(table: dict[bytes, bytes], retention_ms: int = DAY_MS) -> LiveScorer:
    live = LiveScorer(engine(retention_ms))
    live.restore_partition(0, table.items())
    return live


def test_a_call_ended_by_the_sweep_after_a_batchs_last_event_is_journaled_as_the_message_then_its_end():
    # Audio levels hold no call open: the call's own last event moves time past its deadline.
    message = json.dumps(
        {"v": 1, "call_id": "E", "events": [started("E", T0, timeout_s=1), audio_level("E", T0 + 5_000)]}
    ).encode()
    table: dict[bytes, bytes] = {}
    live = LiveScorer(engine())
    out = handle_as_the_worker_does(live, message, 7, table)
    assert stop_reasons([msgspec.json.encode(r) for r in out.results]) == {"E": INACTIVITY}
    assert [position for position, _ in out.journal["E"]] == [event_position(7, 0), sweep_position(7, 1)]
    assert out.journal["E"][0][1] == message
    restored = restored_from(table).engine.calls["E"]
    assert restored.ended is not None and restored.ended.stop_reason == INACTIVITY
    assert restored.applied_offset == sweep_position(7, 1) and restored.events_applied == 3


def test_a_call_ended_between_the_events_of_its_own_message_is_journaled_event_by_event_in_order():
    message = json.dumps(
        {
            "v": 1,
            "call_id": "E",
            "events": [started("E", T0, timeout_s=1), audio_level("E", T0 + 5_000), turn("E", 1, T0 + 5_001)],
        }
    ).encode()
    table: dict[bytes, bytes] = {}
    live = LiveScorer(engine())
    out = handle_as_the_worker_does(live, message, 3, table)
    assert [letter.event_id for letter in out.dead_letters] == ["E-1"]
    assert [position for position, _ in out.journal["E"]] == [
        event_position(3, 0),
        event_position(3, 1),
        sweep_position(3, 1),
    ]
    restored = restored_from(table)
    call = restored.engine.calls["E"]
    assert call.ended is not None and call.ended.stop_reason == INACTIVITY and call.events_applied == 3
    # Delivered again (its offset committed later): nothing is applied twice, and the result the
    # message produced is published again as it was (it may have been lost in a crash).
    again = restored.handle(message, "callqa.events", 0, 3)
    assert [msgspec.json.encode(r) for r in again.results] == [msgspec.json.encode(r) for r in out.results]
    assert restored.engine.calls["E"].events_applied == 3


def test_a_call_forgotten_inside_a_message_and_taken_up_again_by_it_is_journaled_as_the_new_call_only():
    table: dict[bytes, bytes] = {}
    live = LiveScorer(engine(retention_ms=0))
    for offset, raw in enumerate(
        [record(started("C", T0)), record(turn("C", 1, T0 + 10)), record(ended("C", T0 + 1_000))]
    ):
        handle_as_the_worker_does(live, raw, offset, table)
    # One message of call C: its annotation re-scores the ended call and moves time past its retention
    # (the call is forgotten); its turn then starts a new call of that id.
    again = json.dumps(
        {"v": 1, "call_id": "C", "events": [annotated("C", T0 + 5_000), turn("C", 3, T0 + 5_001)]}
    ).encode()
    out = handle_as_the_worker_does(live, again, 3, table)
    assert out.forget == ["C"] and [(r.call_id, r.version) for r in out.results] == [("C", 2)]
    assert live.engine.calls["C"].events_applied == 1 and live.owned["C"][0] == 0
    restored = restored_from(table, retention_ms=0).engine.calls["C"]
    assert restored.events_applied == 1 and restored.ended is None and [t.text for t in restored.turns] == ["turn 3"]


def test_each_event_of_a_message_has_a_position_between_the_sweeps_before_and_after_it():
    assert (
        event_position(5, 0)
        < sweep_position(5, 0)
        < event_position(5, 1)
        < sweep_position(5, 1)
        < sweep_position(5, MAX_EVENTS_PER_MESSAGE - 1)
        < event_position(6, 0)
    )
