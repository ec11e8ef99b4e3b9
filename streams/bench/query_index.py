"""The call index's figures (issue 34): with N calls (default 100,000) in the results topic, what the
index costs a worker per result read, the memory it adds per call, and how fast `GET /calls/{id}`,
`GET /timeseries` over 24 hours and `GET /calls` answer.

`python -m streams.bench.query_index [--calls N] [--out REPORT.json]`

The results are the sample log's, replayed, copied under new call ids, 40 agents and times spread over
24 hours of event time; each is encoded as the worker publishes it and handed to the index as the
worker's results reader hands it (decoded once, for the view and the index). The routes are served over
HTTP by aiohttp with the worker's own middlewares (query check, token check, JSON errors) and the same
functions the worker's views call; requests are made one at a time over one kept-alive connection.
What the index costs scoring: its CPU time per result, against the worker's CPU time per call
(the index reads results in the worker's process, on its event loop).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import aiohttp
import aiohttp.web
import msgspec

from models.results import CallResult
from scorers.engine import CallEngine
from streams.files.event_log import read_log
from streams.replay.log_replay import replay
from streams.tuning import tune_gc
from streams.web.api import json_errors, write_token_check
from streams.web.call_index import CallIndex
from streams.web.call_list import CallFilter, list_calls
from streams.web.prometheus import watch_index
from streams.web.routes import checked_query, json_answer, params_of, reads_content
from streams.web.series_query import timeseries

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "calls.jsonl"
DAY_MS = 86_400_000
T0 = 1_759_741_200_000
AGENTS = 40


def sample_results() -> list[CallResult]:
    results: list[CallResult] = []
    replay(read_log(str(SAMPLE)), CallEngine(), 4, results.append)
    return results


def documents(templates: list[CallResult], calls: int, seed: int = 7):
    """(document bytes, decoded result) of `calls` results, one per call, over 24 hours."""
    rng = random.Random(seed)
    encode = msgspec.json.encode
    decode = msgspec.json.Decoder(CallResult).decode
    for number in range(calls):
        template = templates[number % len(templates)]
        ended = T0 + (number * DAY_MS) // calls
        copy = msgspec.structs.replace(
            template,
            call_id=f"bench-{number:07d}",
            agent_id=f"agent-{rng.randrange(AGENTS)}",
            ended_ts_ms=ended,
            event_ts_ms=ended,
            version=1,
        )
        raw = encode(copy)
        yield raw, decode(raw)


def build_index(calls: int, spool_dir: str) -> tuple[CallIndex, dict[str, Any]]:
    templates = sample_results()
    names = [m.metric for m in templates[0].metrics]
    size = sum(len(msgspec.json.encode(t)) for t in templates) / len(templates)
    gc.collect()
    tracemalloc.start()
    index = CallIndex(names, spool_dir=spool_dir)
    watch_index(index, 50)
    before = tracemalloc.get_traced_memory()[0]
    for raw, result in documents(templates, calls):
        index.add(raw, result)
    gc.collect()
    memory = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    # The CPU time per result, untraced (tracemalloc slows every allocation).
    timed = CallIndex(names, spool_dir=spool_dir)
    watch_index(timed, 50)
    pairs = list(documents(templates, min(calls, 20_000), seed=8))
    started = time.process_time()
    for raw, result in pairs:
        timed.add(raw, result)
    per_result_us = (time.process_time() - started) / len(pairs) * 1e6
    timed.spool.close()
    return index, {
        "calls": calls,
        "document_bytes_mean": round(size),
        "index_bytes_per_call": round(memory / calls),
        "index_cpu_us_per_result": round(per_result_us, 1),
        "spool_bytes": index.spool.size,
    }


def web_app(index: CallIndex) -> aiohttp.web.Application:
    async def call(request: aiohttp.web.Request) -> aiohttp.web.Response:
        document = index.document(request.match_info["call_id"])
        if document is None:
            return aiohttp.web.json_response({"error": "no call"}, status=404)
        return aiohttp.web.Response(body=document, content_type="application/json")

    async def series(request: aiohttp.web.Request) -> aiohttp.web.Response:
        return json_answer(timeseries(index, params_of(request)))

    async def calls(request: aiohttp.web.Request) -> aiohttp.web.Response:
        params = params_of(request)
        return json_answer(list_calls(index, CallFilter(agent_id=params.get("agent_id")), params.get("limit", 50)))

    app = aiohttp.web.Application(middlewares=[json_errors, write_token_check(None, reads_content), checked_query])
    app.router.add_get("/calls/{call_id}", call)
    app.router.add_get("/timeseries", series)
    app.router.add_get("/calls", calls)
    return app


async def latencies(index: CallIndex, requests: int) -> dict[str, Any]:
    runner = aiohttp.web.AppRunner(web_app(index))
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    base = f"http://127.0.0.1:{port}"
    ids = list(index.calls)
    rng = random.Random(3)
    figures: dict[str, Any] = {}
    try:
        async with aiohttp.ClientSession() as session:

            async def timed(path: str, times: int) -> list[float]:
                spent = []
                for _ in range(times):
                    started = time.perf_counter()
                    async with session.get(base + path() if callable(path) else base + path) as response:
                        await response.read()
                        assert response.status == 200, (path, response.status)
                    spent.append((time.perf_counter() - started) * 1000)
                return sorted(spent)

            call_ms = await timed(lambda: f"/calls/{rng.choice(ids)}", requests)  # type: ignore[arg-type]
            figures["get_call_ms"] = _summary(call_ms)
            figures["timeseries_24h_all_metrics_ms"] = _summary(await timed("/timeseries", 50))
            figures["timeseries_24h_one_agent_one_metric_ms"] = _summary(
                await timed("/timeseries?scope=agent:agent-1&metric=latency", 50)
            )
            figures["list_calls_newest_50_ms"] = _summary(await timed("/calls?limit=50", 20))
            figures["list_calls_one_agent_50_ms"] = _summary(await timed("/calls?agent_id=agent-1&limit=50", 20))
    finally:
        await runner.cleanup()
    return figures


def _summary(sorted_ms: list[float]) -> dict[str, float]:
    def at(q: float) -> float:
        return round(sorted_ms[min(len(sorted_ms) - 1, int(q * len(sorted_ms)))], 2)

    return {"requests": len(sorted_ms), "p50": at(0.5), "p99": at(0.99), "max": round(sorted_ms[-1], 2)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=2_000)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    tune_gc()  # (the collector's thresholds a worker runs with)
    with tempfile.TemporaryDirectory(prefix="callqa-index-bench-") as spool_dir:
        index, report = build_index(args.calls, spool_dir)
        report.update(asyncio.run(latencies(index, args.requests)))
        index.spool.close()
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
