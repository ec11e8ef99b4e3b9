"""A seeded generator of hostile messages for the events topic, as an attacker or a buggy producer
would send them: random bytes, truncated and mutated valid events and batches, extreme numbers, deep
nesting, huge strings, invalid UTF-8, far-past and far-future times, duplicates inside batches, and
events sent to another partition than their call's.

Each message is routed as a correct producer would route what it holds (by its calls' partition), so
that a replay of the same bytes places every event where the worker saw it — except the messages made
to go astray on purpose (`stray`), which the worker must dead-letter and a replay cannot place.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

import msgpack

from models.wire import decode_message
from streams.partitioning import partition_of

HOUR_MS = 3_600_000
YEAR_MS = 365 * 24 * HOUR_MS
MAX_TS_MS = 253_402_300_799_999
# Messages of 200 KB and 1.1 MB (past the limit): this many in a run at most, so that a long run does
# not fill the embedded broker's memory with them.
MAX_HUGE = 30


@dataclass
class Fuzzed:
    partition: int
    key: bytes
    value: bytes
    kind: str
    stray: bool = False  # sent on purpose to another partition than its call's


class HostileMessages:
    def __init__(self, seed: int, partitions: int, now_ms: int) -> None:
        self.rng = random.Random(seed)
        self.partitions = partitions
        self.now_ms = now_ms
        self.count = 0
        self.huge = 0
        self.hostile = True  # whether the event being built may hold hostile values (about a third do)

    # -------------------------------------------------------------------------- building blocks

    def call_id(self) -> str:
        return f"fz-{self.rng.randrange(400)}"  # a few hundred calls, so events meet their calls again

    def ts(self) -> int:
        # Mostly now-ish; a little past, a little ahead; hours ahead (taken); years off (refused either way).
        roll = self.rng.random() if self.hostile else 0.0
        if roll < 0.75:
            return self.now_ms + self.rng.randrange(-120_000, 120_000)
        if roll < 0.85:
            return self.now_ms + self.rng.randrange(1, 6) * HOUR_MS
        if roll < 0.93:
            return self.rng.randrange(0, self.now_ms - 400 * 24 * HOUR_MS)  # far past
        return self.rng.randrange(self.now_ms + 5 * YEAR_MS, MAX_TS_MS + 10)  # far future (some beyond 9999)

    def number(self) -> object:
        if not self.hostile:
            return self.rng.randrange(0, 60_000)
        return self.rng.choice(
            [
                0,
                -1,
                2**63 - 1,
                2**64 - 1,
                2**64,
                -(2**63) - 1,
                10**20,
                -(10**30),
                1e308,
                -1e308,
                5e-324,
                0.25,
                float("nan"),
                float("inf"),
                float("-inf"),
                self.rng.randrange(-(10**6), 10**6),
                self.rng.random() * 1e15,
            ]
        )

    def free(self, depth: int = 0) -> object:
        if not self.hostile:
            return {"value": self.rng.randrange(0, 5000) / 10, "processor": "llm"}
        roll = self.rng.random()
        if depth > 3 or roll < 0.4:
            return self.rng.choice([self.number(), "x" * self.rng.randrange(0, 40), None, True, b"\x00\xff"])
        if roll < 0.7:
            return [self.free(depth + 1) for _ in range(self.rng.randrange(0, 4))]
        keys = ["a", "ttfb", "tokens", "value", 1, 2**70, -3, "é", ""]
        return {self.rng.choice(keys): self.free(depth + 1) for _ in range(self.rng.randrange(0, 4))}

    def deep(self) -> object:
        value: object = 1
        for _ in range(self.rng.choice([10, 63, 64, 65, 200, 1500, 5000])):
            value = [value] if self.rng.random() < 0.5 else {"k": value}
        return value

    def event(self, call_id: str | None = None) -> dict:
        call_id = call_id or self.call_id()
        self.count += 1
        self.hostile = self.rng.random() < 0.35
        kind = self.rng.choice(
            [
                "call.started",
                "turn",
                "turn",
                "rtvi",
                "tool.call",
                "latency",
                "call.ended",
                "call.annotated",
                "transcript.corrected",
                "judge.result",
                "db.state",
                "watermark",
                "kb.retrieval",
                "bogus.type",
            ]
        )
        data: object = {
            "call.started": lambda: {"agent_id": "a", "variables": {"v": self.free()}},
            "turn": lambda: {
                "role": self.rng.choice(["user", "agent", "bot"] if self.hostile else ["user", "agent"]),
                "text": self.text(),
                "start_ms": self.number(),
                "end_ms": self.number(),
            },
            "rtvi": lambda: {"message": {"type": "metrics", "data": {"ttfb": self.free(), "tokens": self.free()}}},
            "tool.call": lambda: {
                "name": "t",
                "arguments": self.rng.choice(["{}", "[" * 3000, self.text()]),
                "result": self.free() if self.rng.random() < 0.8 else self.deep(),
            },
            "latency": lambda: {"latency_ms": self.number()},
            "call.ended": lambda: {"stop_reason": "[EXIT]", "trace_metrics": {"m": self.free()}},
            "call.annotated": lambda: {"user_sentiment": self.rng.choice(["Positive", "Meh", None])},
            "transcript.corrected": lambda: {"turn_index": self.rng.choice([0, 1, 2**64, -1]), "text": self.text()},
            "judge.result": lambda: {"qa": {"x": self.free()}, "evaluation": {"score": self.number()}},
            "db.state": lambda: {"side": "agent", "db": {"t": self.free()}},
            "watermark": dict,
            "kb.retrieval": lambda: {"passages": [self.text()]},
            "bogus.type": lambda: {"x": self.free()},
        }[kind]()
        if not self.hostile and kind == "bogus.type":
            kind, data = "turn", {"role": "user", "text": self.text()}
        event = {
            "v": self.rng.choice([1, 1, 1, 1, 2, "1"]) if self.hostile else 1,
            "type": kind,
            "event_id": (
                self.rng.choice([f"{call_id}:{self.count}", f"{call_id}:{self.count}", "", "e" * 5000])
                if self.hostile
                else f"{call_id}:{self.count}"
            ),
            "call_id": "__watermark__" if kind == "watermark" else call_id,
            "ts_ms": self.ts(),
            "data": data,
        }
        if self.hostile and self.rng.random() < 0.05:
            del event[self.rng.choice(list(event))]
        return event

    def text(self) -> str:
        roll = self.rng.random()
        if roll < 0.99:
            return self.rng.choice(["hello there", "I need to move my flight", "ok", "", "४५ रुपये", "订单号是4521"])
        return "z" * self.rng.choice([1_000, 100_000, 400_000])

    # ------------------------------------------------------------------------------- messages

    def encoded(self, document: object) -> bytes:
        """MessagePack or JSON, whichever is drawn, else the other one that can hold it."""

        def as_json() -> bytes:
            return json.dumps(document, default=lambda value: value.decode("latin-1")).encode()

        def as_msgpack() -> bytes:
            return msgpack.packb(document, strict_map_key=False)

        for encode in (as_json, as_msgpack) if self.rng.random() < 0.5 else (as_msgpack, as_json):
            try:
                return encode()
            except (OverflowError, TypeError, ValueError, RecursionError):
                continue
        return b'{"v": 1, "type": "turn", "unencodable": true}'  # (neither encoding holds it)

    def message(self) -> Fuzzed:
        kind = self.rng.choices(
            ["event", "batch", "random", "truncated", "mutated", "invalid-utf8", "stray", "huge", "empty"],
            weights=[25, 20, 10, 10, 10, 8, 8, 1 if self.huge < MAX_HUGE else 0, 2],
        )[0]
        if kind == "random":
            value = bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 300)))
        elif kind == "empty":
            value = b""
        elif kind == "huge":
            self.huge += 1
            event = self.event()
            event["data"] = {"role": "user", "text": "y" * self.rng.choice([200_000, 1_100_000])}
            event["type"] = "turn"
            value = self.encoded(event)
        elif kind == "batch":
            call_id = self.call_id() if self.rng.random() < 0.7 else None
            items = [self.event(call_id) for _ in range(self.rng.randrange(1, 8))]
            if self.rng.random() < 0.5:
                items.append(dict(items[0]))  # a duplicate inside the batch
            batch = {"v": 1, "events": items}
            if call_id is not None:
                batch["call_id"] = call_id
            value = self.encoded(batch)
        else:
            value = self.encoded(self.event())
            if kind == "truncated":
                value = value[: self.rng.randrange(0, max(1, len(value)))]
            elif kind == "mutated":
                mutable = bytearray(value)
                for _ in range(self.rng.randrange(1, 6)):
                    mutable[self.rng.randrange(len(mutable))] = self.rng.randrange(256)
                value = bytes(mutable)
            elif kind == "invalid-utf8":
                value = value.replace(b"hello", b"h\xc3\x28llo").replace(b"ok", b"o\xff")
                if b"\xff" not in value and b"\xc3\x28" not in value:
                    value = value[:-2] + b"\xed\xa0\x80" + value[-2:]
        return self.routed(value, kind)

    def routed(self, value: bytes, kind: str) -> Fuzzed:
        """Sent where a correct producer would send what it holds; a stray goes elsewhere on purpose."""
        events = decode_message(value, len(value) + 1).events
        homes = {partition_of(event, self.partitions) for event in events}
        if len(homes) > 1:
            return self.message()  # events of several partitions in one message: no producer sends that
        home = homes.pop() if homes else self.rng.randrange(self.partitions)
        if kind == "stray":
            if not events or any(event.call_id == "__watermark__" for event in events):
                return self.message()  # (a stray must hold a call's event: a watermark names its own partition)
            others = [p for p in range(self.partitions) if p != home]
            return Fuzzed(self.rng.choice(others), b"stray", value, kind, stray=True)
        return Fuzzed(home, b"batch" if kind == "batch" else b"fuzz", value, kind)

    def messages(self, count: int) -> list[Fuzzed]:
        return [self.message() for _ in range(count)]
