"""Every route of the worker's HTTP API, declared once: its methods, query parameters and whether reading
it shows call content (and so needs the API token when one is set).

The declarations check each request's query (streams/web/query_params.py: an unknown or malformed
parameter is a 400 naming it) and write /openapi.json (streams/web/openapi.py); a test checks that
every route the web server serves is declared here, so none is left out of either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp.web
import msgspec

from streams.web.query_params import Param, QueryError, parse_query

FROM = Param("from", "time", "start of the range, inclusive: Unix ms or ISO 8601 (event time)")
TO = Param("to", "time", "end of the range, exclusive: Unix ms or ISO 8601 (event time)")


@dataclass(frozen=True)
class Route:
    path: str  # as the web server declares it (`/calls/{call_id}`)
    methods: tuple[str, ...]
    summary: str
    params: tuple[Param, ...] = ()
    content: bool = True  # reading it shows call content: asks for the token when one is set
    body: str = ""  # what a write takes, in words


ROUTES: tuple[Route, ...] = (
    Route("/", ("GET",), "The web UI (HTML)", content=False),
    Route("/static/{path}", ("GET",), "The web UI's files (CSS, JavaScript)", content=False),
    Route(
        "/health",
        ("GET",),
        "The worker's counters, assignment, broker, judge and webhook; 503 while the broker is unreachable",
        content=False,
    ),
    Route(
        "/metrics", ("GET",), "Prometheus metrics, text exposition format (docs/guides/prometheus.md)", content=False
    ),
    Route("/openapi.json", ("GET",), "This document", content=False),
    Route("/access", ("GET",), "Whether reading call content asks for the API token", content=False),
    Route("/qa/metrics", ("GET",), "Every QA metric with its default threshold, label and judge kind", content=False),
    Route(
        "/cohorts",
        ("GET", "POST"),
        "Cohort definitions; POST adds one (token)",
        content=False,
        body="a cohort document (models/cohorts.py)",
    ),
    Route(
        "/cohorts/{cohort_id}",
        ("GET", "PUT", "DELETE"),
        "One cohort definition; PUT creates or replaces, DELETE removes (token)",
        content=False,
        body="a cohort document (models/cohorts.py)",
    ),
    Route(
        "/cohorts/{cohort_id}/overview",
        ("GET",),
        "Per metric of the cohort: calls where it applied, average score and value, pass rate; "
        "with from/to or window_s, only the calls of that range of event time",
        (FROM, TO, Param("window_s", "seconds", "the window up to the newest result read (instead of from/to)")),
    ),
    Route("/runs", ("GET",), "Evaluation runs with their number of calls"),
    Route("/runs/{run_id}/summary", ("GET",), "A run's summary (JSON)"),
    Route("/runs/{run_id}/summary.txt", ("GET",), "A run's all_summary.txt"),
    Route("/alerts", ("GET",), "The alerts firing and the evaluation's counters", content=False),
    Route("/alerts/rules", ("GET",), "The alert rules in force", content=False),
    Route(
        "/alerts/episodes",
        ("GET",),
        "Alert episodes, latest first, each with its transitions and the calls that drove it",
        (
            Param("state", "choice", "only episodes now in this state", ("pending", "firing", "resolved")),
            Param("limit", "int", "episodes at most", minimum=1, maximum=1000),
        ),
        content=False,
    ),
    Route(
        "/calls",
        ("GET",),
        "Calls matching a filter, newest first, a page at a time (state=open: the calls in progress)",
        (
            Param("agent_id"),
            Param("cohort_id"),
            Param("run_id"),
            Param("metric", description="a QA metric name"),
            Param(
                "verdict", "choice", "the metric's verdict (without metric: fail = any failed)", ("pass", "fail", "na")
            ),
            FROM,
            TO,
            Param("limit", "int", "rows a page", minimum=1, maximum=500),
            Param("cursor", description="next_cursor of the previous page"),
            Param("state", "choice", "closed (default): scored calls; open: calls in progress", ("closed", "open")),
        ),
    ),
    Route(
        "/calls/{call_id}",
        ("GET",),
        "A call's latest result (an open call's so far, final false); versions=all: every version",
        (Param("versions", "choice", "all: every version with what changed and why", ("all",)),),
    ),
    Route(
        "/calls/{call_id}/events",
        ("GET",),
        "A call's events as the wire has them, from the journal of the worker "
        "holding the call (open, or ended within the retention)",
    ),
    Route(
        "/calls/{call_id}/corrections",
        ("POST",),
        "Correct a user turn's transcript (publishes transcript.corrected; token)",
        body='{"turn_index": 3, "text": "...", "original": "..."}',
    ),
    Route(
        "/calls/{call_id}/annotations",
        ("POST",),
        "Set the post-call sentiment (publishes call.annotated; token)",
        body='{"user_sentiment": "Positive|Neutral|Negative|Unknown"}',
    ),
    Route(
        "/timeseries",
        ("GET",),
        "Per bucket of event time: calls, applied, passed, pass rate, mean score",
        (
            Param("metric", description="a QA metric (all when absent)"),
            Param("scope", description="all | agent:<id> | cohort:<id>"),
            FROM,
            TO,
            Param("step", "int", "bucket length in seconds, a multiple of 60", minimum=60),
        ),
    ),
    Route("/events/results", ("GET",), "Server-sent events: a row per new result version read"),
)

BY_PATH: dict[str, Route] = {route.path: route for route in ROUTES}
# Where a request keeps its parsed query (a typed key where aiohttp has them, 3.12 on; a string before).
_RequestKey = getattr(aiohttp.web, "RequestKey", None)
PARAMS: Any = _RequestKey("params", dict) if _RequestKey is not None else "params"


def route_of(request: Any) -> Route | None:
    """The declaration of the route a request matched (None: no route, or one not declared)."""
    info = getattr(request, "match_info", None)
    resource = getattr(getattr(info, "route", None), "resource", None)
    if resource is None:
        return None
    path = resource.canonical
    return BY_PATH.get(path) or (BY_PATH.get("/static/{path}") if path.startswith("/static") else None)


@aiohttp.web.middleware
async def checked_query(request: Any, handler: Any) -> Any:
    """Parse the query of every declared route into `request["params"]`; 400 naming what is wrong."""
    route = route_of(request)
    if route is not None:
        try:
            request[PARAMS] = parse_query(request.query, route.params)
        except QueryError as exc:
            return aiohttp.web.json_response({"error": str(exc)}, status=400)
    return await handler(request)


def params_of(request: Any) -> dict[str, Any]:
    return request.get(PARAMS, {}) if hasattr(request, "get") else {}


def reads_content(request: Any) -> bool:
    """Whether a read shows call content (and so asks for the API token when one is set). A path no
    route serves is not (it is a 404); a route served but not declared here is, to be safe."""
    if request.method == "OPTIONS" or getattr(request.match_info, "http_exception", None) is not None:
        return False
    route = route_of(request)
    return route is None or route.content


def json_answer(value: Any, status: int = 200) -> aiohttp.web.Response:
    """A JSON answer encoded by msgspec: a day's series of every metric is some 3,000 buckets, which the
    standard library's encoder takes several times longer to write."""
    return aiohttp.web.Response(body=msgspec.json.encode(value), status=status, content_type="application/json")
