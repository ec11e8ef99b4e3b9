"""A worker's writes of cohort definitions through the HTTP API: checked, written and read back one at a time.

The compacted cohorts topic is the one writer of every worker's CohortBook: a write goes to the topic,
and the book changes when the worker reads it back (`apply`), as every other worker's does. A write is
answered once this worker has read it back, so that the client's next request sees it, and is told
apart from one overtaken by a later write of the same cohort through another worker by the offsets read
back.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import unquote

import aiohttp.web
import msgspec

from models.cohorts import (
    CohortDefinition,
    CohortError,
    cohort_to_builtins,
    encode_cohort,
)
from scorers.cohorts import CohortBook

# How long a cohort write waits for the broker to confirm it before answering 503.
COHORT_WRITE_TIMEOUT_S = 5.0
# How long a write's answer waits for the worker to read it back: some 0.25 s once the worker runs;
# in the seconds after a start, until Faust has started the tasks that read the topics, longer.
READ_BACK_TIMEOUT_S = 10.0
READ_BACK_POLL_S = 0.01
# The most cohorts a new one may join through the API: each is a verdict in every result it matches.
MAX_COHORTS = 1_000


class CohortWrites:
    """`publish` and `delete` answer a request through `web` (a Faust view: `json`, `error`,
    `notfound`); `apply` is the topic reader's callback."""

    def __init__(self, book: CohortBook, topic: Any) -> None:
        self.book = book
        self.topic = topic
        # One write at a time, from the check to the read-back: two requests for one cohort_id would
        # both pass the POST's check for an existing cohort and both be answered 201. (Writes through
        # different workers can still cross: one overtaken by another's, which then stands, is
        # answered 409; two POSTs of one new id through two workers at once may both be answered
        # 201, the later standing, as nothing on the topic tells a create from a replace.)
        self._writes = asyncio.Lock()
        # By cohort_id, the offset of the last record read back for it: a write is read back when this
        # reaches the write's own offset, and was overtaken when it passes it.
        self._read_offsets: dict[str, int] = {}

    def apply(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        if key:
            self._read_offsets[key.decode(errors="replace")] = offset
        if value is None:
            if key:
                self.book.delete(key.decode())
            return
        self.book.apply(value)

    async def publish(self, web: Any, request: Any, cohort_id: str | None) -> Any:
        """POST (`cohort_id` None: a new cohort) or PUT (create or replace the URL's cohort)."""
        try:
            raw = await request.read()
        except aiohttp.web.HTTPException:
            raise  # (413: the body is over the size limit, answered as such)
        except Exception as exc:  # a body that cannot be read (a bad Content-Encoding) is the client's
            return unreadable_body(web, request, exc)
        try:  # strict JSON: Python's reader would take NaN and Infinity, which no document can hold
            body = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            return web.error(400, "the body must be a JSON cohort document")
        if not isinstance(body, dict):
            return web.error(400, "the body must be a JSON object")
        if "deleted" in body:
            return web.error(422, "`deleted` is not part of a cohort: DELETE /cohorts/{cohort_id} removes one")
        if cohort_id is not None and not path_decodes(request):
            return web.error(400, "the URL's cohort id is not valid percent-encoded UTF-8")
        if cohort_id is not None:
            if body.get("cohort_id") is None:
                body["cohort_id"] = cohort_id
            if body["cohort_id"] != cohort_id:
                return web.error(400, f"the body's cohort_id differs from the URL's {cohort_id!r}")
        try:
            definition = self.book.decode(body)
            key, value = definition.cohort_id.encode(), encode_cohort(definition)
        except CohortError as exc:
            return web.error(422, str(exc))
        except (OverflowError, UnicodeEncodeError, msgspec.EncodeError) as exc:  # e.g. an integer beyond 64 bits
            return web.error(422, f"the cohort cannot be stored: {exc}")
        async with self._writes:
            before = self.book.get(definition.cohort_id)
            if cohort_id is None and before is not None:
                return web.error(409, f"cohort {definition.cohort_id!r} exists: PUT /cohorts/{{cohort_id}} replaces it")
            if before is None and len(self.book) >= MAX_COHORTS:
                return web.error(
                    422, f"there are {len(self.book)} cohorts, the most a deployment holds: delete one first"
                )
            written = await self._write(key, value)
            if isinstance(written, str):
                return web.error(503, written)
            # (Overtaken by the same document, a delete by a delete say, the client's write stands.)
            overtaken = (
                await self._read_back(definition.cohort_id, written)
                and self.book.get(definition.cohort_id) != definition
            )
        if overtaken:
            return web.error(
                409,
                f"cohort {definition.cohort_id!r} was written again just after this write, "
                "through another worker, and that write stands: GET it",
            )
        # 201 for a cohort this write created, POST or PUT alike (RFC 9110: a PUT that creates its
        # target answers 201); 200 for one it replaced.
        return web.json(cohort_to_builtins(definition), status=201 if before is None else 200)

    async def delete(self, web: Any, cohort_id: str) -> Any:
        async with self._writes:
            if self.book.get(cohort_id) is None:
                return web.notfound(f"no cohort {cohort_id!r}")
            tombstone = CohortDefinition(cohort_id=cohort_id, deleted=True)
            written = await self._write(cohort_id.encode(), encode_cohort(tombstone))
            if isinstance(written, str):
                return web.error(503, written)
            overtaken = await self._read_back(cohort_id, written) and self.book.get(cohort_id) is not None
        if overtaken:
            return web.error(
                409,
                f"cohort {cohort_id!r} was written again just after this delete, through "
                "another worker, and that write stands: GET it",
            )
        return web.json({"cohort_id": cohort_id, "deleted": True})

    async def _read_back(self, cohort_id: str, offset: int) -> bool:
        """Wait (a little) until this worker has read its own write back from the topic, so that the
        client's next request sees it: a cohort just created can be read and deleted at once. True
        when a later write of the cohort (through another worker: this one's are one at a time)
        came after it on the topic, where the last write stands: the client must not be told its
        write stands."""
        deadline = time.monotonic() + READ_BACK_TIMEOUT_S
        while self._read_offsets.get(cohort_id, -1) < offset and time.monotonic() < deadline:
            await asyncio.sleep(READ_BACK_POLL_S)
        return self._read_offsets.get(cohort_id, -1) > offset

    async def _write(self, key: bytes, value: bytes) -> int | str:
        """Send a cohort document and wait until the broker has it: a write that was only buffered
        must not be answered as done. Returns its offset, or why it failed."""
        try:
            delivery = await self.topic.send(key=key, value=value)
            # (Waited for, not cancelled when late: the future is the producer's, and it may still
            # be delivered.)
            await asyncio.wait([delivery], timeout=COHORT_WRITE_TIMEOUT_S)
            if not delivery.done():
                return (
                    f"{self.topic.get_topic_name()} did not confirm the write within "
                    f"{COHORT_WRITE_TIMEOUT_S:g} s (is the broker reachable?); it may still be applied"
                )
            return delivery.result().offset
        except Exception as exc:  # any failure of the producer is the client's answer
            return f"the write to {self.topic.get_topic_name()} failed: {type(exc).__name__}: {exc}"


def unreadable_body(web: Any, request: Any, exc: Exception) -> Any:
    """400 for a body the web server could not decode (a `Content-Encoding: gzip` that is not gzip).
    The body is given up and the connection closed after the answer: the server would otherwise read
    the rest of the body once more after the answer, meet the same failure and log it as a traceback."""
    encoding = request.headers.get("Content-Encoding")
    cause = " ".join(str(exc).split()) or type(exc).__name__
    reason = (
        f"it is not what its Content-Encoding ({encoding}) says ({cause})"
        if encoding
        else f"{type(exc).__name__}: {cause}"
    )
    request.content.feed_eof()
    response = web.error(400, f"the body cannot be read: {reason}")
    response.force_close()
    return response


def path_decodes(request: Any) -> bool:
    """Whether the request's path is valid percent-encoded UTF-8. The web server leaves an escape it
    cannot decode (`%FF`) as it is, so `PUT /cohorts/%FF` would name a cohort "%FF"."""
    try:
        unquote(request.raw_path.split("?", 1)[0], errors="strict")
    except UnicodeDecodeError:
        return False
    return True
