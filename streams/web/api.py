"""The worker's HTTP API and the background readers that keep its views current.

- `GET /qa/metrics` — every metric with its default threshold, label and judge kind.
- `GET /cohorts`, `POST /cohorts`, `GET|PUT|DELETE /cohorts/{id}` — cohort definitions. Writes go to
  the compacted `callqa.cohorts` topic (so every worker, and any later replay of that topic, sees the
  same configuration); each worker applies the topic to its CohortBook as it reads it
  (streams/web/cohort_writes.py).
- `GET /cohorts/{id}/overview` — per metric: calls where it applied, average score and value, pass rate
  (`?from=&to=` or `?window_s=`: over the calls of that range of event time, from the call index).
- The query API over calls, `/metrics` and `/openapi.json`: streams/web/query_api.py.
- `GET /runs`, `GET /runs/{id}/summary` (JSON), `GET /runs/{id}/summary.txt` (all_summary.txt).

Every worker reads the whole results and cohorts topics outside the consumer group, so any worker can
answer for every partition.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from typing import Any

import aiohttp.web
import faust
import msgspec

from models.cohorts import cohort_to_builtins
from models.results import CallResult
from scorers.cohorts import CohortBook
from scorers.metric_catalog import metric_catalog
from scorers.runs import summary_text
from streams.kafka.clients import retrying
from streams.kafka.topic_reader import follow_topic
from streams.web.call_index import CallIndex
from streams.web.cohort_writes import CohortWrites
from streams.web.pages import install_pages
from streams.web.query_params import QueryError
from streams.web.results_view import ResultsView
from streams.web.routes import params_of
from streams.web.series_query import windowed_overview


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


READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def write_token_check(token: str | None, reads_content: Callable[[Any], bool] = lambda request: False) -> Any:
    """A middleware asking for `Authorization: Bearer <token>` (`Settings.api_token_in_force`) every
    request that is not a read, and every read of call content (`reads_content(request)`: transcripts
    are personal data); with no token, none is asked."""
    expected = token.encode("utf-8", "surrogateescape") if token else b""  # (as the environment gave its bytes)

    @aiohttp.web.middleware
    async def check(request: Any, handler: Any) -> Any:
        if expected and (request.method not in READ_METHODS or reads_content(request)):
            scheme, _, given = request.headers.get("Authorization", "").partition(" ")
            # (A header's bytes that are no UTF-8 come as surrogates: compared as the bytes they were.)
            given_bytes = given.strip().encode("utf-8", "surrogateescape")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given_bytes, expected):
                return aiohttp.web.json_response(
                    {
                        "error": f"{request.method} {request.path} needs the API token: Authorization: Bearer "
                        "<CALLQA_API_TOKEN>"
                    },
                    status=401,
                    headers={"WWW-Authenticate": 'Bearer realm="callqa"'},
                )
        return await handler(request)

    return check


def _kept_headers(exc: Any) -> dict[str, str]:
    """The headers an error must keep (405 names the methods the path takes)."""
    return {name: value for name, value in exc.headers.items() if name.lower() == "allow"}


logger = logging.getLogger("callqa.api")


def install_api(callqa: Any, book: CohortBook, view: ResultsView, index: CallIndex) -> None:
    app: faust.App = callqa.app
    names = callqa.topics
    registry = callqa.live.engine.registry
    writes = CohortWrites(book, app.topic(names.cohorts, key_type=bytes, value_type=bytes, partitions=1))
    install_pages(app)  # the web UI at `/` (streams/web/pages.py)

    # The view reads every result the workers publish, straight into the typed result: it reads it
    # typed, and decoding to dicts first, to be converted after, did the work twice.
    decode_result = msgspec.json.Decoder(CallResult).decode

    def apply_result(key: bytes | None, value: bytes | None, offset: int) -> None:
        if value:
            result = decode_result(value)
            view.add(result)
            index.add(value, result)

    @app.task
    async def read_cohorts() -> None:
        def caught_up() -> None:
            logger.info("%s read: %d cohorts", names.cohorts, len(book.all()))
            callqa.cohorts_read.set()

        await retrying(
            f"reading {names.cohorts}",
            lambda: follow_topic(callqa, names.cohorts, writes.apply, on_caught_up=caught_up),
            logger,
        )

    @app.task
    async def read_results() -> None:
        await retrying(f"reading {names.results}", lambda: follow_topic(callqa, names.results, apply_result), logger)

    @app.page("/qa/metrics")
    class QaMetrics(faust.web.View):
        async def get(self, request: Any) -> Any:
            return self.json({"metrics": metric_catalog(registry)})

    @app.page("/cohorts")
    class Cohorts(faust.web.View):
        async def get(self, request: Any) -> Any:
            return self.json({"cohorts": [cohort_to_builtins(c) for c in book.all()]})

        async def post(self, request: Any) -> Any:
            return await writes.publish(self, request, None)

    @app.page("/cohorts/{cohort_id}")
    class Cohort(faust.web.View):
        async def get(self, request: Any, cohort_id: str) -> Any:
            definition = book.get(cohort_id)
            if definition is None:
                return self.notfound(f"no cohort {cohort_id!r}")
            return self.json(cohort_to_builtins(definition))

        async def put(self, request: Any, cohort_id: str) -> Any:
            return await writes.publish(self, request, cohort_id)

        async def delete(self, request: Any, cohort_id: str) -> Any:
            return await writes.delete(self, cohort_id)

    @app.page("/cohorts/{cohort_id}/overview")
    class CohortOverviewView(faust.web.View):
        async def get(self, request: Any, cohort_id: str) -> Any:
            # A defined cohort with no scored call yet has an overview of zeros; an unknown id is a 404
            # (a typo must not read as an empty cohort).
            if book.get(cohort_id) is None and cohort_id not in view.cohorts.cohort_ids():
                return self.notfound(f"no cohort {cohort_id!r}")
            params = params_of(request)
            if not params:
                return self.json(view.cohorts.overview(cohort_id))
            try:
                return self.json(windowed_overview(index, cohort_id, params))
            except QueryError as exc:
                return self.error(400, str(exc))

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
            return self.text(summary_text(summary))
