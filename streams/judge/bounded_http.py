"""An HTTP client for the judge that holds every answer's body to a size limit, decoded size included.

A chat completion is a few kilobytes. Without a limit a misbehaving server (or a proxy in front of it)
could stream hundreds of megabytes into a worker's memory within the request timeout, or send a small
gzip body that inflates a thousandfold. This client reads a body itself, as the `openai` package would
have it read, counting the bytes as they are decoded (httpx2 inflates in bounded steps) and stopping at
the limit; a body whose declared length is over the limit is not read at all. It also asks for
uncompressed bodies: nothing a judge answers is worth a decompression step.
"""

from __future__ import annotations

from typing import Any

import httpx2
from openai import DefaultAsyncHttpxClient

# The client would otherwise offer gzip, br and zstd.
UNCOMPRESSED = {"Accept-Encoding": "identity"}
# Headers that describe the body as it came over the wire, not as it is handed on (decoded).
_WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class BodyTooLarge(Exception):
    """The answer's body passed the limit: reading stopped there."""


class BoundedAsyncClient(DefaultAsyncHttpxClient):
    """The `openai` package's own client (its timeouts, connection limits, the proxies the environment
    names), with every body that is read whole held to `limit_bytes`. A caller that asks to stream gets
    the stream as it is: the judge never does. Redirects are not followed: the client would read each
    redirect's body whole itself, before this one reads the last (a judge's API has no reason to
    redirect; the error recorded says where it pointed)."""

    def __init__(self, limit_bytes: int, **kwargs: Any) -> None:
        super().__init__(**{**kwargs, "follow_redirects": False})
        self.limit_bytes = limit_bytes

    async def send(self, request: httpx2.Request, *, stream: bool = False, **kwargs: Any) -> httpx2.Response:
        kwargs["follow_redirects"] = False  # (`openai` may ask for them per request)
        response = await super().send(request, stream=True, **kwargs)
        if stream:
            return response
        try:
            # (A redirect's body is not the answer, and nothing reads it: left unread.)
            body = b"" if 300 <= response.status_code < 400 else await read_bounded(response, self.limit_bytes)
        finally:
            await response.aclose()
        headers = [(name, value) for name, value in response.headers.multi_items() if name.lower() not in _WIRE_HEADERS]
        return httpx2.Response(
            response.status_code,
            headers=headers,
            content=body,
            request=request,
            extensions=response.extensions,
            history=response.history,
        )


async def read_bounded(response: httpx2.Response, limit_bytes: int) -> bytes:
    """The response's decoded body, or BodyTooLarge as soon as it passes `limit_bytes`."""
    declared = response.headers.get("content-length", "").strip()
    if declared.isdigit() and not response.headers.get("content-encoding") and int(declared) > limit_bytes:
        raise BodyTooLarge(f"the judge's answer is {int(declared):,} bytes, above the {limit_bytes:,}-byte limit")
    parts: list[bytes] = []
    read = 0
    async for part in response.aiter_bytes():
        read += len(part)
        if read > limit_bytes:
            raise BodyTooLarge(f"the judge's answer ran past the {limit_bytes:,}-byte limit")
        parts.append(part)
    return b"".join(parts)
