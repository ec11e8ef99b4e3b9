"""A reviewer's corrections and annotations through the HTTP API: `POST /calls/{id}/corrections` and
`POST /calls/{id}/annotations` publish a `transcript.corrected` or `call.annotated` event to the
events topic, as any producer would. The worker holding the call re-scores it (version + 1) and the
new version reaches every worker's call index; a replay of the recorded events topic re-scores it the
same way. The answer waits (a little) for that version, so that the page can show it at once.

The event's time is the call's latest result's (an open call's: its last event's), not the clock's:
a correction made today of a call replayed from last year must not move its partition's event time
by a year (which would sweep every open call there).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import aiohttp.web
import msgspec

from models.events import CallAnnotated, Event, TranscriptCorrected
from streams.web.call_index import CallIndex
from streams.web.cohort_writes import unreadable_body

SEND_TIMEOUT_S = 5.0
RESCORE_WAIT_S = 10.0
RESCORE_POLL_S = 0.02


class RescoreWrites:
    def __init__(self, index: CallIndex, events_topic: Any, open_call_time: Any) -> None:
        self.index = index
        self.topic = events_topic
        self.open_call_time = (
            open_call_time  # call_id -> the last event time of an open call this worker holds, or None
        )

    async def correct(self, web: Any, request: Any, call_id: str) -> Any:
        return await self._publish(web, request, call_id, TranscriptCorrected, "correction")

    async def annotate(self, web: Any, request: Any, call_id: str) -> Any:
        return await self._publish(web, request, call_id, CallAnnotated, "annotation")

    async def _publish(self, web: Any, request: Any, call_id: str, kind: type[Event], word: str) -> Any:
        try:
            raw = await request.read()
        except aiohttp.web.HTTPException:
            raise
        except Exception as exc:  # a body that cannot be read is the client's
            return unreadable_body(web, request, exc)
        try:
            data = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            return web.error(400, f"the body must be a JSON {word}")
        if not isinstance(data, dict):
            return web.error(400, "the body must be a JSON object")
        entry = self.index.calls.get(call_id)
        ts_ms = entry.event_ts_ms if entry is not None else self.open_call_time(call_id)
        if ts_ms is None:
            return web.notfound(f"no call {call_id!r} (a {word} needs a call this deployment has scored)")
        version_before = entry.version if entry is not None else 0
        event_id = f"api-{word}-{uuid.uuid4().hex}"
        try:
            event = msgspec.convert(
                {
                    "type": kind.__struct_config__.tag,
                    "event_id": event_id,
                    "call_id": call_id,
                    "ts_ms": ts_ms,
                    "data": data,
                },
                kind,
            )
        except msgspec.ValidationError as exc:
            return web.error(422, f"not a valid {word}: {exc}")
        sent = await self._send(call_id.encode(), msgspec.json.encode(event))
        if sent is not None:
            return web.error(503, sent)
        version = await self._rescored(call_id, version_before)
        return web.json({"call_id": call_id, "event_id": event_id, "version": version}, status=200 if version else 202)

    async def _send(self, key: bytes, value: bytes) -> str | None:
        """Send the event and wait for the broker to have it; None, or why it failed."""
        try:
            delivery = await self.topic.send(key=key, value=value)
            await asyncio.wait([delivery], timeout=SEND_TIMEOUT_S)
            if not delivery.done():
                return (
                    f"the events topic did not confirm the event within {SEND_TIMEOUT_S:g} s; it may still be applied"
                )
            delivery.result()
        except Exception as exc:  # any failure of the producer is the client's answer
            return f"the event could not be sent: {type(exc).__name__}: {exc}"
        return None

    async def _rescored(self, call_id: str, before: int) -> int | None:
        """The call's new version once this worker's index has read it (None: not within RESCORE_WAIT_S;
        an open call is re-scored at its end, and a refused event goes to the dead-letter topic)."""
        deadline = time.monotonic() + RESCORE_WAIT_S
        while time.monotonic() < deadline:
            entry = self.index.calls.get(call_id)
            if entry is not None and entry.version > before:
                return entry.version
            await asyncio.sleep(RESCORE_POLL_S)
        return None
