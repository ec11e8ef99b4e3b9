"""The live worker's per-message steps without Kafka: a message's bytes, and its outbox performed as
streams/app.py performs it (forget, stage, write the segment and the watermark)."""

from __future__ import annotations

import json

from streams.live import LiveScorer


def message(type_: str, data: dict, event_id: str, ts: int, call_id: str = "c1") -> bytes:
    return json.dumps({"v": 1, "type": type_, "event_id": event_id, "call_id": call_id, "ts_ms": ts, "data": data}).encode()


def handle_as_the_worker_does(live: LiveScorer, raw: bytes, offset: int, table: dict[bytes, bytes], write: bool = True):
    """One message as streams/app.py performs its outbox: forget, then stage and (when `write`, as
    when a segment is due) write the segment of everything staged, forgetting's table changes and
    the watermark."""
    out = live.handle(raw, "callqa.events", 0, offset)
    if out.forget:
        live.book.forget(out.forget)
        live.forgotten(out.forget)
    live.book.stage(0, out.journal, ack=offset, now=0.0)
    if write:
        key, value, _ = live.book.take(0)
        if key is not None:
            table[key] = value
        for changed, changed_value in live.book.take_changes(0):
            if changed_value is None:
                table.pop(changed, None)
            else:
                table[changed] = changed_value
        watermark = live.watermark_to_journal(0, offset)
        if watermark is not None:
            table[watermark[0]] = watermark[1]
    return out
