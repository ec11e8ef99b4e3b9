"""A synthetic event log for end-to-end tests: many overlapping calls with every kind of wrinkle the
worker must absorb (duplicates, malformed records, calls that never end, post-call rescoring)."""

from __future__ import annotations

import json
import random

from streams.partitioning import partition_for
from streams.send.plan import SendPlan, end_of_input_messages

T0 = 1_760_000_000_000
SECOND = 1_000


def build_log(
    path: str, calls: int = 120, turns: int = 6, seed: int = 3, inactivity_timeout_s: float | None = None
) -> dict:
    rng = random.Random(seed)
    timeline: list[tuple[int, int, dict]] = []
    seq = 0
    stats = {"calls": calls, "never_end": 0, "duplicates": 0, "malformed": 0}

    def add(call_id: str, ts: int, type_: str, data: dict) -> dict:
        nonlocal seq
        seq += 1
        ev = {"v": 1, "event_id": f"{call_id}:{seq}", "call_id": call_id, "ts_ms": ts, "type": type_, "data": data}
        timeline.append((ts, seq, ev))
        return ev

    for c in range(calls):
        call_id = f"call-{c:04d}"
        t = T0 + c * 700
        started = {
            "agent_id": f"agent-{c % 4}",
            "cohort_ids": ["support"],
            "run_id": "run-e2e",
            "scenario": {"name": f"d{c % 3}__s{c}"},
        }
        if inactivity_timeout_s is not None:
            started["inactivity_timeout_s"] = inactivity_timeout_s
        add(call_id, t, "call.started", started)
        offset = 0
        for k in range(turns):
            user = add(
                call_id,
                t + 1000 + k * 4000,
                "turn",
                {"role": "user", "text": f"I need help with order {k}", "start_ms": offset, "end_ms": offset + 1500},
            )
            add(
                call_id,
                t + 2000 + k * 4000,
                "rtvi",
                {
                    "side": "agent",
                    "message": {
                        "label": "rtvi-ai",
                        "type": "metrics",
                        "data": {
                            "tokens": [{"prompt_tokens": 100 + k, "completion_tokens": 20, "total_tokens": 120 + k}]
                        },
                    },
                },
            )
            add(
                call_id,
                t + 3000 + k * 4000,
                "turn",
                {
                    "role": "agent",
                    "text": f"Sure, order {k} is on its way",
                    "start_ms": offset + 1500 + rng.randint(300, 2500),
                    "end_ms": offset + 3800,
                },
            )
            offset += 4000
            if rng.random() < 0.05:
                timeline.append((user["ts_ms"] + 1, seq, user))  # the producer sent it twice
                stats["duplicates"] += 1
        end = t + 1000 + turns * 4000
        if c % 17 == 5:
            stats["never_end"] += 1
            continue
        add(call_id, end, "call.ended", {"stop_reason": "[EXIT]"})
        if c % 3 == 0:
            add(
                call_id,
                end + 5000,
                "call.annotated",
                {"user_sentiment": rng.choice(["Positive", "Neutral", "Negative"])},
            )
    timeline.sort(key=lambda item: (item[0], item[1]))
    lines = [json.dumps(ev) for _, _, ev in timeline]
    for position, bad in (
        (10, "this is not an event"),
        (
            50,
            json.dumps(
                {
                    "v": 1,
                    "event_id": "bad-1",
                    "call_id": "call-0001",
                    "ts_ms": T0,
                    "type": "turn",
                    "data": {"role": "bot", "text": "x"},
                }
            ),
        ),
        (
            90,
            json.dumps(
                {"v": 1, "event_id": "bad-2", "call_id": "call-0002", "ts_ms": T0, "type": "no.such.type", "data": {}}
            ),
        ),
    ):
        lines.insert(position, bad)
        stats["malformed"] += 1
    # A retrieval that returned a whole manual: over the 1 MiB message limit.
    huge = {
        "v": 1,
        "event_id": "bad-3",
        "call_id": "call-0003",
        "ts_ms": T0,
        "type": "kb.retrieval",
        "data": {"passages": ["policy text " * 100_000]},
    }
    lines.insert(min(120, len(lines)), json.dumps(huge))
    stats["malformed"] += 1
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    stats["records"] = len(lines)
    return stats


def edge_log(rng: random.Random) -> list[bytes]:
    """A few calls made to sit on the edges of event time: calls silent past their (short) timeout that
    speak again, audio levels that hold no call open, annotations arriving as their call's retention
    passes, events reordered within half a second. JSON Lines records, in the order of the log."""
    events = []
    for c in range(rng.randint(2, 7)):
        call_id = f"call-{c}"
        ts = T0 + rng.randint(0, 20 * SECOND)
        n = 0

        def add(type_: str, data: dict, at: int, call_id: str = call_id) -> None:
            nonlocal n
            n += 1
            events.append(
                {"v": 1, "type": type_, "event_id": f"{call_id}:{n}", "call_id": call_id, "ts_ms": at, "data": data}
            )

        add("call.started", {"agent_id": "a1", "inactivity_timeout_s": rng.choice([1, 2, 5])}, ts)
        for _ in range(rng.randint(1, 8)):
            ts += rng.choice([200, 900, 1_500, 3_000, 7_000, 12_000])  # now and then longer than the timeout
            if rng.random() < 0.2:
                add("rtvi", {"message": {"label": "rtvi-ai", "type": "user-audio-level", "data": {"value": 0.2}}}, ts)
            else:
                add("turn", {"role": rng.choice(["user", "assistant"]), "text": f"turn {n}"}, ts)
        if rng.random() < 0.7:
            ts += rng.choice([100, 2_000])
            add("call.ended", {"stop_reason": "[EXIT]"}, ts)
            if rng.random() < 0.6:
                add("call.annotated", {"user_sentiment": "Positive"}, ts + rng.choice([500, 3_000, 9_000]))
    # In event-time order, each event moved by up to half a second: the reordering a live feed has.
    events.sort(key=lambda e: (e["ts_ms"] + rng.randint(-500, 500), e["event_id"]))
    return [json.dumps(e).encode() for e in events]


def sent(log: list[bytes], partitions: int, batch_size: int) -> dict[int, list[bytes]]:
    """What `callqa send` puts on each partition for `log`, in order, its end-of-input watermarks last."""
    plan = SendPlan(partitions, batch_size)
    messages = [m for raw in log for m in plan.add(raw)] + plan.finish()
    topic: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    for message in messages:
        partition = (
            message.partition if message.partition is not None else partition_for(message.key.decode(), partitions)
        )
        topic[partition].append(message.value)
    for partition in range(partitions):
        topic[partition].extend(
            end_of_input_messages(plan.end_ts_ms or 0, partition, plan.report.calls.get(partition, ()))
        )
    return topic
