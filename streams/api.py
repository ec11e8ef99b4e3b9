"""The worker's HTTP API and the background readers that keep its views current.

- `GET /qa/metrics` — every metric with its default threshold, label and judge kind.
- `GET /cohorts`, `POST /cohorts`, `GET|PUT|DELETE /cohorts/{id}` — cohort definitions. Writes go to
  the compacted `callqa.cohorts` topic (so every worker, and any later replay of that topic, sees the
  same configuration); each worker applies the topic to its CohortBook as it reads it.
- `GET /cohorts/{id}/overview` — per metric: calls where it applied, average score and value, pass rate.
- `GET /runs`, `GET /runs/{id}/summary` (JSON), `GET /runs/{id}/summary.txt` (all_summary.txt).

Every worker reads the whole results and cohorts topics outside the consumer group, so any worker can
answer for every partition.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any
from urllib.parse import unquote

import aiohttp.web
import faust
import msgspec
from aiokafka import TopicPartition

from models.cohorts import CohortDefinition, CohortError, cohort_to_builtins, encode_cohort
from models.results import CallResult
from scorers.cohorts import CohortBook
from scorers.metric_catalog import metric_catalog
from scorers.runs import render_all_summary
from streams.kafka_clients import ensure_topics, reader, retrying
from streams.results_view import ResultsView

# How long a cohort write waits for the broker to confirm it before answering 503.
COHORT_WRITE_TIMEOUT_S = 5.0
# How long a write's answer waits for the worker to read it back: some 0.25 s once the worker runs;
# in the seconds after a start, until Faust has started the tasks that read the topics, longer.
READ_BACK_TIMEOUT_S = 10.0
READ_BACK_POLL_S = 0.01
# The most cohorts a new one may join through the API: each is a verdict in every result it matches.
MAX_COHORTS = 1_000


@aiohttp.web.middleware
async def json_errors(request: Any, handler: Any) -> Any:
    """Every error the API answers is a JSON `{"error": ...}`: also the web server's own (an unknown
    path, a method a path does not take, a body over the size limit), which are plain text otherwise."""
    try:
        return await handler(request)
    except aiohttp.web.HTTPException as exc:
        if exc.status < 400 or exc.content_type == "application/json":
            raise
        detail = exc.text if exc.text and not exc.text.startswith(f"{exc.status}:") else exc.reason
        return aiohttp.web.json_response({"error": detail}, status=exc.status, headers=_kept_headers(exc))


def _kept_headers(exc: Any) -> dict[str, str]:
    """The headers an error must keep (405 names the methods the path takes)."""
    return {name: value for name, value in exc.headers.items() if name.lower() == "allow"}

logger = logging.getLogger("callqa.api")


async def follow_topic(callqa: Any, topic: str, on_record: Any, on_caught_up: Any = None) -> None:
    """Read `topic` from its first offset forever (outside any group), handing each record on
    (`on_record(key, value, offset)`).
    `on_caught_up()` is called once, when every partition has been read up to the high watermark its
    last fetch reported (a fetch that merely came back empty in time is not enough)."""
    await ensure_topics(callqa.settings, callqa.topics.only(callqa.settings.partitions, topic))
    consumer = reader(callqa.settings)
    await consumer.start()
    try:
        partitions: set[int] | None = None
        while not partitions:
            partitions = consumer.partitions_for_topic(topic)
            if not partitions:
                await consumer._client.force_metadata_update()
                await asyncio.sleep(0.5)
        consumer.assign([TopicPartition(topic, p) for p in sorted(partitions)])
        await consumer.seek_to_beginning()
        while True:
            batches = await consumer.getmany(timeout_ms=1000)
            if not batches and on_caught_up is not None and await _read_to_the_end(consumer):
                on_caught_up()
                on_caught_up = None
            for records in batches.values():
                for record in records:
                    try:
                        on_record(record.key, record.value, record.offset)
                    except Exception as exc:  # noqa: BLE001 - one bad record must not stop the view
                        logger.warning("%s[%s]@%s skipped: %s", topic, record.partition, record.offset, exc)
    finally:
        await consumer.stop()


def _decodes(request: Any) -> bool:
    """Whether the request's path is valid percent-encoded UTF-8. The web server leaves an escape it
    cannot decode (`%FF`) as it is, so `PUT /cohorts/%FF` would name a cohort "%FF"."""
    try:
        unquote(request.raw_path.split("?", 1)[0], errors="strict")
    except UnicodeDecodeError:
        return False
    return True


async def _read_to_the_end(consumer: Any) -> bool:
    for tp in consumer.assignment():
        highwater = consumer.highwater(tp)  # from the last fetch response; None before the first
        if highwater is None or await consumer.position(tp) < highwater:
            return False
    return True


def install_api(callqa: Any, book: CohortBook, view: ResultsView) -> None:
    app: faust.App = callqa.app
    names = callqa.topics
    registry = callqa.live.engine.registry
    cohorts_topic = app.topic(names.cohorts, key_type=bytes, value_type=bytes, partitions=1)
    # This worker's cohort writes, one at a time from the check to the read-back: two requests for one
    # cohort_id would both pass the POST's check for an existing cohort and both be answered 201.
    # (Writes through different workers can still cross: one overtaken by another's, which then
    # stands, is answered 409; two POSTs of one new id through two workers at once may both be
    # answered 201, the later standing, as nothing on the topic tells a create from a replace.)
    writes = asyncio.Lock()
    # By cohort_id, the offset of the last record read back for it: a write is read back when this
    # reaches the write's own offset, and was overtaken when it passes it.
    read_offsets: dict[str, int] = {}

    def apply_cohort(key: bytes | None, value: bytes | None, offset: int) -> None:
        if key:
            read_offsets[key.decode(errors="replace")] = offset
        if value is None:
            if key:
                book.delete(key.decode())
            return
        book.apply(value)

    # The view reads every result the workers publish, straight into the typed result: it reads it
    # typed, and decoding to dicts first, to be converted after, did the work twice.
    decode_result = msgspec.json.Decoder(CallResult).decode

    def apply_result(key: bytes | None, value: bytes | None, offset: int) -> None:
        if value:
            view.add(decode_result(value))

    @app.task
    async def read_cohorts() -> None:
        def caught_up() -> None:
            logger.info("%s read: %d cohorts", names.cohorts, len(book.all()))
            callqa.cohorts_read.set()

        await retrying(f"reading {names.cohorts}",
                       lambda: follow_topic(callqa, names.cohorts, apply_cohort, on_caught_up=caught_up), logger)

    @app.task
    async def read_results() -> None:
        await retrying(f"reading {names.results}", lambda: follow_topic(callqa, names.results, apply_result), logger)

    async def publish_cohort(web: Any, request: Any, cohort_id: str | None) -> Any:
        try:
            raw = await request.read()
        except aiohttp.web.HTTPException:
            raise  # (413: the body is over the size limit, answered as such)
        except Exception as exc:  # noqa: BLE001 - a body that cannot be read (a bad Content-Encoding) is the client's
            return web.error(400, f"the body cannot be read: {type(exc).__name__}: {exc}")
        try:  # strict JSON: Python's reader would take NaN and Infinity, which no document can hold
            body = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            return web.error(400, "the body must be a JSON cohort document")
        if not isinstance(body, dict):
            return web.error(400, "the body must be a JSON object")
        if "deleted" in body:
            return web.error(422, "`deleted` is not part of a cohort: DELETE /cohorts/{cohort_id} removes one")
        if cohort_id is not None and not _decodes(request):
            return web.error(400, "the URL's cohort id is not valid percent-encoded UTF-8")
        if cohort_id is not None:
            if body.get("cohort_id") is None:
                body["cohort_id"] = cohort_id
            if body["cohort_id"] != cohort_id:
                return web.error(400, f"the body's cohort_id differs from the URL's {cohort_id!r}")
        try:
            definition = book.decode(body)
            key, value = definition.cohort_id.encode(), encode_cohort(definition)
        except CohortError as exc:
            return web.error(422, str(exc))
        except (OverflowError, UnicodeEncodeError, msgspec.EncodeError) as exc:  # e.g. an integer beyond 64 bits
            return web.error(422, f"the cohort cannot be stored: {exc}")
        async with writes:  # (checked and written as one step: see `writes`)
            before = book.get(definition.cohort_id)
            if cohort_id is None and before is not None:
                return web.error(409, f"cohort {definition.cohort_id!r} exists: PUT /cohorts/{{cohort_id}} replaces it")
            if before is None and len(book) >= MAX_COHORTS:
                return web.error(422, f"there are {len(book)} cohorts, the most a deployment holds: delete one first")
            written = await write_cohort(key, value)
            if isinstance(written, str):
                return web.error(503, written)
            # (Overtaken by the same document, a delete by a delete say, the client's write stands.)
            overtaken = await read_back(definition.cohort_id, written) and book.get(definition.cohort_id) != definition
        if overtaken:
            return web.error(409, f"cohort {definition.cohort_id!r} was written again just after this write, "
                                  "through another worker, and that write stands: GET it")
        return web.json(cohort_to_builtins(definition), status=201 if cohort_id is None else 200)

    async def read_back(cohort_id: str, offset: int) -> bool:
        """Wait (a little) until this worker has read its own write back from the topic, so that the
        client's next request sees it: a cohort just created can be read and deleted at once. True
        when a later write of the cohort (through another worker: this one's are one at a time)
        came after it on the topic, where the last write stands: the client must not be told its
        write stands."""
        deadline = time.monotonic() + READ_BACK_TIMEOUT_S
        while read_offsets.get(cohort_id, -1) < offset and time.monotonic() < deadline:
            await asyncio.sleep(READ_BACK_POLL_S)
        return read_offsets.get(cohort_id, -1) > offset

    async def write_cohort(key: bytes, value: bytes) -> int | str:
        """Send a cohort document and wait until the broker has it: a write that was only buffered
        must not be answered as done. Every worker, this one included, applies it as it reads the
        topic back (the topic stays the one writer of the book). Returns its offset, or why it failed."""
        try:
            delivery = await cohorts_topic.send(key=key, value=value)
            # (Waited for, not cancelled when late: the future is the producer's, and it may still
            # be delivered.)
            await asyncio.wait([delivery], timeout=COHORT_WRITE_TIMEOUT_S)
            if not delivery.done():
                return (f"{cohorts_topic.get_topic_name()} did not confirm the write within "
                        f"{COHORT_WRITE_TIMEOUT_S:g} s (is the broker reachable?); it may still be applied")
            return delivery.result().offset
        except Exception as exc:  # noqa: BLE001 - any failure of the producer is the client's answer
            return f"the write to {cohorts_topic.get_topic_name()} failed: {type(exc).__name__}: {exc}"

    @app.page("/qa/metrics")
    class QaMetrics(faust.web.View):
        async def get(self, request: Any) -> Any:
            return self.json({"metrics": metric_catalog(registry)})

    @app.page("/cohorts")
    class Cohorts(faust.web.View):
        async def get(self, request: Any) -> Any:
            return self.json({"cohorts": [cohort_to_builtins(c) for c in book.all()]})

        async def post(self, request: Any) -> Any:
            return await publish_cohort(self, request, None)

    @app.page("/cohorts/{cohort_id}")
    class Cohort(faust.web.View):
        async def get(self, request: Any, cohort_id: str) -> Any:
            definition = book.get(cohort_id)
            if definition is None:
                return self.notfound(f"no cohort {cohort_id!r}")
            return self.json(cohort_to_builtins(definition))

        async def put(self, request: Any, cohort_id: str) -> Any:
            return await publish_cohort(self, request, cohort_id)

        async def delete(self, request: Any, cohort_id: str) -> Any:
            async with writes:
                before = book.get(cohort_id)
                if before is None:
                    return self.notfound(f"no cohort {cohort_id!r}")
                tombstone = CohortDefinition(cohort_id=cohort_id, deleted=True)
                written = await write_cohort(cohort_id.encode(), encode_cohort(tombstone))
                if isinstance(written, str):
                    return self.error(503, written)
                overtaken = await read_back(cohort_id, written) and book.get(cohort_id) is not None
            if overtaken:
                return self.error(409, f"cohort {cohort_id!r} was written again just after this delete, through "
                                       "another worker, and that write stands: GET it")
            return self.json({"cohort_id": cohort_id, "deleted": True})

    @app.page("/cohorts/{cohort_id}/overview")
    class CohortOverviewView(faust.web.View):
        async def get(self, request: Any, cohort_id: str) -> Any:
            # A defined cohort with no scored call yet has an overview of zeros; an unknown id is a 404
            # (a typo must not read as an empty cohort).
            if book.get(cohort_id) is None and cohort_id not in view.cohorts.cohort_ids():
                return self.notfound(f"no cohort {cohort_id!r}")
            return self.json(view.cohorts.overview(cohort_id))

    @app.page("/runs")
    class Runs(faust.web.View):
        async def get(self, request: Any) -> Any:
            return self.json({"runs": {run_id: len(summary) for run_id, summary in sorted(view.runs.items())}})

    @app.page("/runs/{run_id}/summary")
    class RunSummaryView(faust.web.View):
        async def get(self, request: Any, run_id: str) -> Any:
            summary = view.runs.get(run_id)
            if summary is None:
                return self.notfound(f"no results of run {run_id!r} yet")
            return self.json(summary.summary().to_dict())

    @app.page("/runs/{run_id}/summary.txt")
    class RunSummaryText(faust.web.View):
        async def get(self, request: Any, run_id: str) -> Any:
            summary = view.runs.get(run_id)
            if summary is None:
                return self.notfound(f"no results of run {run_id!r} yet")
            return self.text(render_all_summary(summary.summary()))
