"""`GET /events/results`: new results as they are read, as server-sent events, so that a page shows them
without reloading. Each new version the call index reads is one `event: result` whose data is the
call's row (as `GET /calls` lists it); a comment every KEEPALIVE_S keeps proxies from closing a quiet
stream. A client too slow to take its events loses the oldest (it can list `GET /calls` again).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp.web

from models.results import CallResult
from streams.web.call_index import CallIndex, IndexedCall
from streams.web.call_list import summary

KEEPALIVE_S = 15.0
QUEUE_SIZE = 256


class LiveFeed:
    def __init__(self, index: CallIndex) -> None:
        self.index = index
        self._listeners: set[asyncio.Queue[str]] = set()
        index.on_new_version.append(self._on_new_version)

    def _on_new_version(self, result: CallResult, held: IndexedCall | None) -> None:
        if not self._listeners:
            return  # (nobody listens: no row to make)
        row = summary(result.call_id, self.index.calls[result.call_id], self.index.metric_names)
        message = f"event: result\ndata: {json.dumps(row, separators=(',', ':'))}\n\n"
        for queue in self._listeners:
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(message)

    async def stream(self, request: Any) -> aiohttp.web.StreamResponse:
        response = aiohttp.web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        )
        await response.prepare(request)
        if request.method == "HEAD":  # (the headers only: no stream to hold open)
            return response
        queue: asyncio.Queue[str] = asyncio.Queue(QUEUE_SIZE)
        self._listeners.add(queue)
        try:
            await response.write(b": connected\n\n")
            while True:
                try:
                    message = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
                except TimeoutError:
                    message = ": keepalive\n\n"
                await response.write(message.encode())
        except ConnectionResetError:
            pass  # the client went away
        finally:
            self._listeners.discard(queue)
        return response
