"""The dashboard's overview loaded in Chromium over the call index of N calls (issue 34: ≤ 1 s with
100,000): from navigation until every metric's chart and the latest failing calls are drawn.

`python -m streams.bench.dashboard_load [--calls N] [--loads 5]` (needs Playwright for Python, the
`test` extra, and Debian's chromium at /usr/bin/chromium or CHROMIUM_PATH)

The index is the query-index bench's (streams/bench/query_index.py: the sample's results under new ids,
40 agents, 24 hours); the page and the routes the overview reads are served by aiohttp with the same
functions the worker's views call. Alerts are left out (no alert engine here): the overview then says
they are not available, which costs it one request that fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import threading
from typing import Any

import aiohttp.web

from scorers.metric_catalog import metric_catalog
from streams.bench.query_index import build_index
from streams.web.api import json_errors
from streams.web.call_index import CallIndex
from streams.web.call_list import CallFilter, list_calls
from streams.web.pages import INDEX_FILE, STATIC_DIR
from streams.web.routes import checked_query, json_answer, params_of
from streams.web.series_query import timeseries

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# The overview is drawn: a chart per metric and the failing calls' table.
DRAWN = "document.querySelectorAll('.metric-card svg').length >= 11 && document.querySelector('.calls-table tbody tr')"


def dashboard_app(index: CallIndex) -> aiohttp.web.Application:
    catalog = {"metrics": metric_catalog()}

    async def page(request: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.Response(text=INDEX_FILE.read_text(encoding="utf-8"), content_type="text/html")

    async def calls(request: aiohttp.web.Request) -> aiohttp.web.Response:
        params = params_of(request)
        where = CallFilter(agent_id=params.get("agent_id"), metric=params.get("metric"), verdict=params.get("verdict"))
        return json_answer(list_calls(index, where, params.get("limit", 50)))

    async def series(request: aiohttp.web.Request) -> aiohttp.web.Response:
        return json_answer(timeseries(index, params_of(request)))

    async def cohorts(request: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.json_response({"cohorts": []})

    async def qa_metrics(request: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.json_response(catalog)

    app = aiohttp.web.Application(middlewares=[json_errors, checked_query])
    app.router.add_get("/", page)
    app.router.add_static("/static/", STATIC_DIR)
    app.router.add_get("/qa/metrics", qa_metrics)
    app.router.add_get("/cohorts", cohorts)
    app.router.add_get("/calls", calls)
    app.router.add_get("/timeseries", series)
    return app


def serve(app: aiohttp.web.Application) -> tuple[int, asyncio.AbstractEventLoop]:
    """Serve `app` on a free port from a thread of its own (the browser is driven from this one)."""
    loop = asyncio.new_event_loop()
    started = threading.Event()
    port: list[int] = []

    async def start() -> None:
        runner = aiohttp.web.AppRunner(app)
        await runner.setup()
        site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port.append(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        started.set()

    threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True).start()
    started.wait()
    return port[0], loop


def load_times(port: int, loads: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    spent = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        for _ in range(loads + 1):  # the first load warms the server's and the browser's caches: left out
            page = browser.new_page(viewport={"width": 1360, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/#/?range=24h")
            page.wait_for_function(DRAWN, timeout=60_000)
            spent.append(page.evaluate("performance.now()"))  # ms since this page's navigation began
            page.close()
        browser.close()
    return spent[1:]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="callqa-dashboard-bench-") as spool_dir:
        index, report = build_index(args.calls, spool_dir)
        port, _ = serve(dashboard_app(index))
        spent = load_times(port, args.loads)
    figures: dict[str, Any] = {
        "calls": report["calls"],
        "loads": len(spent),
        "overview_drawn_ms": {"median": round(statistics.median(spent)), "max": round(max(spent))},
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
