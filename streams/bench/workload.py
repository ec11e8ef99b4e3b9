"""The benchmark's events: many overlapping calls with every kind of event a voice pipeline emits.

Deterministic for a seed. Calls start `start_every_ms` apart and run `turns` user/agent exchanges
each, so a few thousand calls are open at once, as on a busy deployment. An exchange is the user's
turn (sometimes with per-word timings), the agent pipeline's four speaking events and LLM token
metrics, now and then a tool call, a knowledge-base retrieval or a flow transition, and the agent's
turn.
Texts are built from templates with varied words and figures (prices, times, order numbers), so a
cache keyed by text cannot shortcut the text scorers. A share of the calls gets a post-call sentiment
annotation, a transcript correction or a judge answer (each a rescore), and a few never end (swept
for inactivity).

`Workload.messages()` gives the Kafka messages as `(key, value)` pairs: one event per message, or the
events of one call in batch envelopes of up to `batch_size` (docs/concepts/batches.md#two-shapes-of-batch), in
event-time order.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

T0 = 1_760_000_000_000
_encode = msgspec.msgpack.Encoder().encode

_ITEMS = ["order", "booking", "parcel", "refund", "invoice", "ticket", "account", "subscription", "delivery", "claim"]
_PLACES = ["Boston", "Denver", "Seattle", "Austin", "Chicago", "Portland", "Miami", "Dallas"]
_VERBS = ["check", "change", "cancel", "track", "update", "move", "confirm", "reschedule"]
_FEELINGS = ["great", "fine", "perfect", "okay then", "that works", "hmm not sure"]
_USER = [
    "Hi, I want to {verb} my {item} number {num}.",
    "Can you {verb} the {item} for {place} please?",
    "It was supposed to arrive by {time}, what happened?",
    "The {item} cost me ${price} but I was charged twice.",
    "Yes my name is {name} and I live in {place}.",
    "{feeling}, and how long will that take?",
    "No, I said {place}, not {place2}.",
    "Could you also {verb} my other {item}?",
]
_AGENT = [
    "Sure, I can {verb} your {item} {num} right away.",
    "Your {item} to {place} is scheduled for {time}.",
    "The total comes to ${price} including taxes.",
    "I'm sorry, I didn't catch that. Could you repeat the {item} number?",
    "I have updated the {item}; it will take about {minutes} minutes.",
    "Your {item} is not eligible for a refund, but it is eligible for credit.",
    "Thanks {name}, I found the {item} under your account in {place}.",
    "Is there anything else I can help you with today?",
]
_NAMES = ["Ana", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jon"]
_PASSAGES = [
    "Refunds are issued within {days} days to the original payment method.",
    "Orders over ${price} ship free; standard delivery takes {days} days.",
    "Customers in {place} can change a {item} until {time} the day before.",
]


@dataclass
class Workload:
    calls: int = 2000
    turns: int = 13  # user/agent exchanges per call
    seed: int = 7
    start_every_ms: int = 40
    exchange_ms: int = 4000
    call_prefix: str = "call"
    t0_ms: int = T0
    limit: int | None = None  # keep only the first `limit` events (in event-time order)
    events: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if not self.events:
            self.events = self._build()

    # ------------------------------------------------------------------------------- messages

    def messages(self, batch_size: int = 1, max_span_ms: int | None = None) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) per Kafka message, in event-time order; `batch_size` > 1 packs a call's
        events into batch envelopes as a producer serving one call does (a Pipecat observer): a
        call's batch goes out when it holds `batch_size` events or when event time has moved
        `max_span_ms` past its first event, and at the call's end (and with each post-call event)
        at once. (`callqa send` batches a partition's events in the log's order instead.)"""
        if batch_size <= 1:
            for event in self.events:
                yield event["call_id"].encode(), _encode(event)
            return
        pending: dict[str, list[dict[str, Any]]] = {}
        for event in self.events:
            call_id = event["call_id"]
            batch = pending.setdefault(call_id, [])
            batch.append(event)
            if len(batch) >= batch_size or event["type"] in _FLUSHING_TYPES:
                del pending[call_id]
                yield call_id.encode(), _encode({"v": 1, "call_id": call_id, "events": batch})
            if max_span_ms is not None:
                # Batches were opened in event-time order, so the stale ones are the oldest entries.
                while pending:
                    oldest = next(iter(pending))
                    if event["ts_ms"] - pending[oldest][0]["ts_ms"] < max_span_ms:
                        break
                    yield oldest.encode(), _encode({"v": 1, "call_id": oldest, "events": pending.pop(oldest)})
        for call_id, batch in pending.items():
            yield call_id.encode(), _encode({"v": 1, "call_id": call_id, "events": batch})

    def records(self) -> list[bytes]:
        """One msgpack record per event, as `callqa replay` reads a `.msgpack` log."""
        return [_encode(event) for event in self.events]

    # -------------------------------------------------------------------------------- building

    def _build(self) -> list[dict[str, Any]]:
        rng = random.Random(self.seed)
        timeline: list[tuple[int, int, dict[str, Any]]] = []
        seq = 0

        def add(call_id: str, ts: int, type_: str, data: dict[str, Any]) -> None:
            nonlocal seq
            seq += 1
            # Producers name events with UUIDs; a random 128-bit hex id has the same size.
            event_id = f"{rng.getrandbits(128):032x}"
            timeline.append(
                (ts, seq, {"v": 1, "event_id": event_id, "call_id": call_id, "ts_ms": ts, "type": type_, "data": data})
            )

        for c in range(self.calls):
            self._call(rng, add, c)
        timeline.sort(key=lambda item: (item[0], item[1]))
        return [event for _, _, event in timeline[: self.limit]]

    def _call(self, rng: random.Random, add: Any, c: int) -> None:
        call_id = f"{self.call_prefix}-{c:05d}-{rng.getrandbits(48):012x}"  # ids as long as real session ids
        t = self.t0_ms + c * self.start_every_ms
        fill = _Filler(rng)
        started: dict[str, Any] = {
            "agent_id": f"agent-{c % 5}",
            "cohort_ids": ["support"],
            "run_id": "bench",
            "scenario": {"name": f"{call_id}__s"},
        }
        if c % 4 == 0:
            started["agent_config"] = {"prompt": fill("Help callers with orders; fees are ${price}.")}
            started["variables"] = {"customer": fill("{name}"), "order": fill("{num}")}
        add(call_id, t, "call.started", started)
        offset = 0
        step = self.exchange_ms
        for k in range(self.turns):
            base = t + 500 + k * step
            user_text = fill(rng.choice(_USER))
            user: dict[str, Any] = {"role": "user", "text": user_text, "start_ms": offset, "end_ms": offset + 1500}
            if k % 5 == 0:
                words = user_text.split()[:4]
                user["words"] = [[w, offset + i * 300, offset + i * 300 + 250] for i, w in enumerate(words)]
            add(
                call_id,
                base - 1200,
                "rtvi",
                {"side": "agent", "message": {"label": "rtvi-ai", "type": "user-started-speaking"}},
            )
            add(call_id, base, "turn", user)
            add(
                call_id,
                base + 1500,
                "rtvi",
                {"side": "agent", "message": {"label": "rtvi-ai", "type": "user-stopped-speaking"}},
            )
            add(
                call_id,
                base + 1700,
                "rtvi",
                {
                    "side": "agent",
                    "message": {
                        "label": "rtvi-ai",
                        "type": "metrics",
                        "data": {
                            "tokens": [
                                {
                                    "prompt_tokens": 300 + 20 * k,
                                    "completion_tokens": 25 + k % 7,
                                    "total_tokens": 325 + 21 * k,
                                }
                            ]
                        },
                    },
                },
            )
            if k % 7 == 3:
                price = fill("{price}")
                add(
                    call_id,
                    base + 1800,
                    "tool.call",
                    {
                        "name": rng.choice(["lookup_order", "quote", "reschedule"]),
                        "arguments": json.dumps({"id": fill("{num}")}),
                        "tool_call_id": f"t{k}",
                        "result": {"status": 200, "price": float(price)} if k % 3 else "error: not found",
                    },
                )
            if k % 9 == 4:
                add(
                    call_id,
                    base + 1850,
                    "kb.retrieval",
                    {"query": fill("{item} policy"), "passages": [fill(rng.choice(_PASSAGES))]},
                )
            if k % 6 == 1:
                add(
                    call_id, base + 1900, "node.transition", {"to": rng.choice(["greet", "verify", "resolve", "close"])}
                )
            if c % 8 == 5 and k == 2:
                add(
                    call_id,
                    base + 1950,
                    "rtvi",
                    {
                        "side": "agent",
                        "message": {
                            "label": "rtvi-ai",
                            "type": "llm-function-call-in-progress",
                            "data": {"tool_call_id": "f1", "function_name": "transfer_call"},
                        },
                    },
                )
                add(
                    call_id,
                    base + 1960,
                    "rtvi",
                    {
                        "side": "agent",
                        "message": {
                            "label": "rtvi-ai",
                            "type": "llm-function-call-stopped",
                            "data": {"tool_call_id": "f1", "cancelled": False, "result": {"ok": 1}},
                        },
                    },
                )
            if c % 11 == 3:
                add(call_id, base + 1990, "latency", {"latency_ms": 600 + rng.randint(0, 1500)})
            add(
                call_id,
                base + 1500 + rng.randint(400, 2500),
                "rtvi",
                {"side": "agent", "message": {"label": "rtvi-ai", "type": "bot-started-speaking"}},
            )
            agent_text = fill(rng.choice(_AGENT))
            add(
                call_id,
                base + 2600,
                "turn",
                {
                    "role": "agent",
                    "text": agent_text,
                    "start_ms": offset + 1900 + rng.randint(0, 1200),
                    "end_ms": offset + 3800,
                },
            )
            add(
                call_id,
                base + 3300,
                "rtvi",
                {"side": "agent", "message": {"label": "rtvi-ai", "type": "bot-stopped-speaking"}},
            )
            offset += step
        end = t + 500 + self.turns * step
        if c % 13 == 2:
            add(call_id, end - 900, "transfer", {"phase": "started", "target": "billing"})
            add(call_id, end - 300, "transfer", {"phase": "bridged", "target": "billing"})
        if c % 5 == 0:
            add(
                call_id,
                end - 200,
                "rtvi",
                {
                    "side": "agent",
                    "message": {
                        "label": "rtvi-ai",
                        "type": "server-message",
                        "data": {
                            "text": "<final_response>"
                            + json.dumps({"action": "refund", "amount": fill("{price}")})
                            + "</final_response>"
                        },
                    },
                },
            )
        if c % 12 == 0:
            add(call_id, end - 100, "db.state", {"side": "agent", "hash": f"h{c % 3}"})
        if c % 50 == 7:
            add(call_id, t - 1000, "attempt.discarded", {"reason": "simulator crashed"})
        if c % 23 == 11:
            return  # never ends: swept for inactivity
        add(call_id, end, "call.ended", {"stop_reason": "[EXIT]" if c % 2 else "[SIMULATOR_EXIT]"})
        if c % 3 == 0:
            add(
                call_id,
                end + 4000,
                "call.annotated",
                {"user_sentiment": rng.choice(["Positive", "Neutral", "Negative"])},
            )
        if c % 10 == 1:
            add(call_id, end + 6000, "transcript.corrected", {"turn_index": 0, "text": fill(rng.choice(_USER))})
        if c % 20 == 9:
            add(call_id, end + 8000, "judge.result", {"model": "m", "evaluation": {"score": 0.8, "reason": "fine"}})


_FLUSHING_TYPES = frozenset({"call.ended", "call.annotated", "transcript.corrected", "judge.result"})


class _Filler:
    """Fills a template's placeholders with varied words and figures."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def __call__(self, template: str) -> str:
        r = self.rng
        place, place2 = r.sample(_PLACES, 2)
        hour = r.randint(1, 12)
        return template.format(
            verb=r.choice(_VERBS),
            item=r.choice(_ITEMS),
            num=r.randint(10_000, 99_999),
            place=place,
            place2=place2,
            time=f"{hour}:{r.choice(['00', '15', '30', '45'])} {r.choice(['am', 'pm'])}",
            price=f"{r.randint(5, 400)}.{r.randint(0, 99):02d}",
            name=r.choice(_NAMES),
            feeling=r.choice(_FEELINGS),
            minutes=r.choice([5, 10, 15, 30, 45]),
            days=r.randint(2, 14),
        )
