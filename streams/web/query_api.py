"""The query API over calls: `GET /calls`, `GET /calls/{id}`, `GET /timeseries`, the reviewer's writes
(`POST /calls/{id}/corrections`, `/annotations`), the live feed, `/metrics`, `/openapi.json` and
`/access`. The routes and their query parameters are declared in streams/web/routes.py.

How a worker answers for the whole deployment: every worker reads the whole results topic into its
call index (streams/web/call_index.py), so a call's latest result, the lists and the series are
answered by whichever worker is asked. A call still open lives only in the memory of the worker
whose partition it is: another worker passes `GET /calls/{id}` on to it, and gathers
`GET /calls?state=open` from every worker (streams/web/open_calls.py).
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp.web
import faust
import msgspec
from faust.exceptions import SameNode

from scorers.version_history import version_history
from streams.kafka.clients import retrying
from streams.kafka.topic_reader import follow_topic
from streams.partitioning import partition_for
from streams.web.alert_episodes import AlertEpisodes
from streams.web.call_events import journaled_events
from streams.web.call_index import CallIndex
from streams.web.call_list import DEFAULT_LIMIT, CallFilter, list_calls
from streams.web.corrections import RescoreWrites
from streams.web.live_feed import LiveFeed
from streams.web.open_calls import FORWARDED, gather_open_calls, open_call, open_call_rows, provisional_result
from streams.web.openapi import openapi_document
from streams.web.prometheus import CONTENT_TYPE, CallqaCollector, WorkerHealth, consumer_lag, exposition
from streams.web.query_params import QueryError
from streams.web.routes import json_answer, params_of
from streams.web.series_query import timeseries

logger = logging.getLogger("callqa.api")


def install_query_api(callqa: Any, index: CallIndex, journal: Any, collector: CallqaCollector) -> None:
    app: faust.App = callqa.app
    engine = callqa.live.engine
    settings = callqa.settings
    feed = LiveFeed(index)
    journal_name = journal.name

    def open_call_time(call_id: str) -> int | None:
        call = open_call(engine, call_id)
        return None if call is None else call.last_ts_ms

    writes = RescoreWrites(index, callqa.events_topic, open_call_time)

    def held_here(call_id: str) -> bool:
        partition = partition_for(call_id, settings.partitions)
        return any(
            tp.partition == partition for tp in app.assignor.assigned_actives() if tp.topic == callqa.topics.events
        )

    def bad_query(web: Any, exc: QueryError) -> Any:
        return web.error(400, str(exc))

    @app.page("/calls")
    class Calls(faust.web.View):
        async def get(self, request: Any) -> Any:
            params = params_of(request)
            limit = params.get("limit", DEFAULT_LIMIT)
            if params.get("state") == "open":
                extra = set(params) - {"state", "agent_id", "limit"}
                if extra:
                    return self.error(
                        400, f"query parameter {sorted(extra)[0]!r} does not go with state=open (agent_id and limit do)"
                    )
                own = open_call_rows(engine, params.get("agent_id"), limit)
                if FORWARDED in request.headers:
                    return self.json({"calls": own})
                return self.json(await gather_open_calls(app, journal_name, request, own, limit))
            where = CallFilter(
                agent_id=params.get("agent_id"),
                cohort_id=params.get("cohort_id"),
                run_id=params.get("run_id"),
                metric=params.get("metric"),
                verdict=params.get("verdict"),
                from_ms=params.get("from"),
                to_ms=params.get("to"),
            )
            try:
                return json_answer(list_calls(index, where, limit, params.get("cursor")))
            except QueryError as exc:
                return bad_query(self, exc)

    @app.page("/calls/{call_id}")
    class Call(faust.web.View):
        async def get(self, request: Any, call_id: str) -> Any:
            if params_of(request).get("versions") == "all":
                documents = [msgspec.json.decode(document) for document in index.versions(call_id)]
                if documents:
                    return self.json({"call_id": call_id, "versions": version_history(documents)})
            else:
                call = open_call(engine, call_id)
                if call is not None:
                    return self.json(provisional_result(engine, call))
                document = index.document(call_id)
                if document is not None:  # as published, byte for byte
                    return aiohttp.web.Response(body=document, content_type="application/json")
            forwarded = await to_the_holder(self, request, call_id)
            return forwarded if forwarded is not None else self.notfound(f"no call {call_id!r}")

    async def to_the_holder(web: Any, request: Any, call_id: str) -> Any:
        """The answer of the worker holding the call's partition, when it is another (None: this one,
        or none that answers)."""
        if FORWARDED in request.headers or held_here(call_id):
            return None
        try:  # (passed on with the request's headers: the token included)
            return await app.router.route_req(journal_name, call_id.encode(), web, request)
        except SameNode:
            return None
        except Exception as exc:  # the owner unknown or unreachable: answered as not found
            logger.debug("%s: the worker holding the call did not answer: %s", request.path, exc)
            return None

    @app.page("/calls/{call_id}/events")
    class CallEvents(faust.web.View):
        async def get(self, request: Any, call_id: str) -> Any:
            events = journaled_events(callqa.live.book, journal, call_id)
            if events is not None:
                return json_answer({"call_id": call_id, "events": events})
            forwarded = await to_the_holder(self, request, call_id)
            if forwarded is not None:
                return forwarded
            reason = (
                "its result is kept, its events no longer (held for CALLQA_RETENTION_AFTER_END_S after its end)"
                if call_id in index.calls
                else "no call of that id"
            )
            return self.notfound(f"no events of call {call_id!r}: {reason}")

    @app.page("/calls/{call_id}/corrections")
    class Corrections(faust.web.View):
        async def post(self, request: Any, call_id: str) -> Any:
            return await writes.correct(self, request, call_id)

    @app.page("/calls/{call_id}/annotations")
    class Annotations(faust.web.View):
        async def post(self, request: Any, call_id: str) -> Any:
            return await writes.annotate(self, request, call_id)

    episodes = AlertEpisodes()

    @app.task
    async def read_alerts() -> None:
        await retrying(
            f"reading {callqa.topics.alerts}",
            lambda: follow_topic(callqa, callqa.topics.alerts, episodes.apply),
            logger,
        )

    @app.page("/alerts/episodes")
    class AlertEpisodesView(faust.web.View):
        async def get(self, request: Any) -> Any:
            params = params_of(request)
            return json_answer({"episodes": episodes.newest_first(params.get("state"), params.get("limit", 200))})

    @app.page("/timeseries")
    class Timeseries(faust.web.View):
        async def get(self, request: Any) -> Any:
            try:
                return json_answer(timeseries(index, params_of(request)))
            except QueryError as exc:
                return bad_query(self, exc)

    @app.page("/events/results")
    class ResultEvents(faust.web.View):
        async def get(self, request: Any) -> Any:
            return await feed.stream(request)

    @app.page("/metrics")
    class Metrics(faust.web.View):
        async def get(self, request: Any) -> Any:
            return aiohttp.web.Response(body=exposition(collector), headers={"Content-Type": CONTENT_TYPE})

    document = openapi_document()

    @app.page("/openapi.json")
    class OpenApi(faust.web.View):
        async def get(self, request: Any) -> Any:
            return self.json(document)

    @app.page("/access")
    class Access(faust.web.View):
        async def get(self, request: Any) -> Any:
            return self.json({"token_required": settings.api_token_in_force is not None})


def worker_health(callqa: Any, judge: Any, alerts: Any) -> WorkerHealth:
    """The worker's own series for /metrics, read from where /health reads them."""
    app, live = callqa.app, callqa.live
    engine = live.engine

    def counters() -> dict[str, int]:
        return {**engine.counters.__dict__, "dead_lettered": live.dead_lettered}

    def lag() -> dict[int, int]:
        try:
            return consumer_lag(app.consumer, callqa.topics.events, live.partitions)
        except Exception:  # no consumer yet (starting): no figure
            return {}

    def judge_queue() -> int | None:
        return None if judge is None else judge.counters()["queued"]

    def alert_states() -> list[tuple[str, str, str]]:
        if alerts is None or not alerts.restored:
            return []
        return alerts.engine.open_episodes()

    return WorkerHealth(counters, lambda: len(engine.calls), lag, judge_queue, alert_states)
