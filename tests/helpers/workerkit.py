"""The live worker's per-message steps without Kafka: a message's bytes, run through the worker's own
`MessageFlow` (streams/worker/message_flow.py) with a dict for the journal table and sends that the
"broker" has already acknowledged."""

from __future__ import annotations

import asyncio
import json
import math
import sys
from dataclasses import dataclass, field
from typing import Any

from streams.journal.call_journal import SEGMENT_BYTES
from streams.worker.live_scorer import LiveScorer, Outbox
from streams.worker.message_flow import MessageFlow


def message(type_: str, data: dict, event_id: str, ts: int, call_id: str = "c1") -> bytes:
    return json.dumps(
        {"v": 1, "type": type_, "event_id": event_id, "call_id": call_id, "ts_ms": ts, "data": data}
    ).encode()


@dataclass
class KafkaMessage:
    value: bytes
    offset: int
    partition: int = 0
    topic: str = "callqa.events"


@dataclass
class DictSink:
    """The journal table as a dict; sends are kept in order, each delivered at once."""

    table: dict[bytes, bytes]
    sent: list[tuple[str, bytes, bytes]] = field(default_factory=list)
    acknowledged: list[Any] = field(default_factory=list)

    async def _delivered(self, topic: str, key: bytes, value: bytes) -> asyncio.Future[Any]:
        self.sent.append((topic, key, value))
        future = asyncio.get_running_loop().create_future()
        future.set_result(None)
        return future

    async def send_result(self, key: bytes, value: bytes) -> asyncio.Future[Any]:
        return await self._delivered("results", key, value)

    async def send_dead_letter(self, key: bytes, value: bytes) -> asyncio.Future[Any]:
        return await self._delivered("deadletter", key, value)

    async def send_event(self, key: bytes, value: bytes) -> asyncio.Future[Any]:
        return await self._delivered("events", key, value)

    def journal_items(self) -> list[tuple[bytes, bytes]]:
        return list(self.table.items())

    def write_journal(self, message: Any, changes: list[tuple[bytes, bytes | None]]) -> list[asyncio.Future[Any]]:
        for key, value in changes:
            if value is None:
                self.table.pop(key, None)
            else:
                self.table[key] = value
        return []  # (a dict holds them at once)

    def acknowledge(self, acks: list[Any]) -> None:
        self.acknowledged.extend(acks)


def handle_as_the_worker_does(
    live: LiveScorer, raw: bytes, offset: int, table: dict[bytes, bytes], write: bool = True
) -> Outbox:
    """One message of partition 0 as the worker performs it; `write`: the partition's segment is due
    (everything staged, forgetting's table changes and the watermark are written), or not yet."""
    live.book.segment_seconds, live.book.segment_bytes = (0.0, SEGMENT_BYTES) if write else (math.inf, sys.maxsize)
    flow = MessageFlow(live, DictSink(table))
    return asyncio.run(flow.score(KafkaMessage(raw, offset)))
