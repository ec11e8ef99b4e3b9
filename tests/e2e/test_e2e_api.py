"""The worker's HTTP API against a live worker on the embedded broker: cohorts defined over HTTP score
the calls that follow, and overviews and run summaries equal those computed from replay."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from scorers.cohort_overview import CohortOverview
from scorers.cohorts import CohortBook
from scorers.engine import CallEngine
from scorers.runs import RunSummary, summary_text
from streams.files.event_log import read_log
from streams.replay.log_replay import replay
from tests.helpers.livekit import (
    collect_results,
    latest_by_call,
    send,
    settings_for,
    start_worker,
)
from tests.helpers.logkit import build_log

pytestmark = pytest.mark.broker

COHORT = {
    "cohort_id": "support",
    "name": "Support line",
    "metrics": [{"metric": "latency", "weight": 2, "threshold": 70}, {"metric": "wer"}, {"metric": "sentiment"}],
}


API_TOKEN = "t0ken-for-writes"


def http(
    worker,
    method: str,
    path: str,
    body: dict | bytes | None = None,
    headers: dict[str, str] | None = None,
    token: str | None = API_TOKEN,
) -> tuple[int, dict | str]:
    """A request to the worker's API, with the API token (a worker that asks for none ignores it)."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    authorization = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(
        f"http://127.0.0.1:{worker.web_port}{path}",
        method=method,
        data=data,
        headers={"Content-Type": "application/json", **authorization, **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read().decode()
            status = response.status
    except urllib.error.HTTPError as error:
        raw, status = error.read().decode(), error.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw


def wait_for(predicate, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("condition not met in time")


def test_cohorts_over_http_score_the_calls_and_views_match_replay(broker, topic_prefix, tmp_path):
    log = str(tmp_path / "calls.jsonl")
    build_log(log, calls=40)
    book = CohortBook()
    book.apply(COHORT)
    expected_results: list[dict] = []
    replay(
        read_log(log),
        CallEngine(cohorts=book),
        4,
        lambda r: expected_results.append(json.loads(__import__("msgspec").json.encode(r))),
    )
    expected = latest_by_call(expected_results)

    worker = start_worker(broker, topic_prefix, env={"CALLQA_API_TOKEN": API_TOKEN})
    try:
        # The API (cohort writes included) listens on CALLQA_WEB_HOST only, 127.0.0.1 by default:
        # another loopback address, which a wildcard bind would answer, is refused.
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.2", worker.web_port), timeout=5).close()
        status, catalog = http(worker, "GET", "/qa/metrics", token=None)  # reads need no token
        assert status == 200 and [m["metric"] for m in catalog["metrics"]][:3] == ["hallucination", "kb_recall", "wer"]
        # Writes need the API token: without it, or with another, nothing is written.
        for token in (None, "t0ken-for-write", API_TOKEN + "s"):
            for method, path in (("POST", "/cohorts"), ("PUT", "/cohorts/support"), ("DELETE", "/cohorts/support")):
                status, body = http(worker, method, path, COHORT if method != "DELETE" else None, token=token)
                assert status == 401 and "needs the API token" in body["error"], (method, token)
        status, body = http(worker, "POST", "/cohorts", COHORT, headers={"Authorization": f"Basic {API_TOKEN}"})
        assert status == 401
        assert http(worker, "GET", "/cohorts", token=None)[1] == {"cohorts": []}

        status, body = http(
            worker, "POST", "/cohorts", {"cohort_id": "x", "name": "X", "metrics": [{"metric": "empathy"}]}
        )
        assert status == 422 and "empathy" in body["error"]
        nan = {
            "cohort_id": "n",
            "name": "N",
            "criteria": [{"name": "r", "field": "agent_id", "op": "lt", "value": float("nan")}],
        }
        assert http(worker, "POST", "/cohorts", nan)[0] == 400  # NaN is not JSON
        assert http(worker, "POST", "/cohorts", b'{"cohort_id": ' + b"[" * 5000)[0] == 400  # nested too deeply
        huge = {
            "cohort_id": "h",
            "name": "H",
            "criteria": [{"name": "r", "field": "agent_id", "op": "eq", "value": 10**30}],
        }
        status, body = http(worker, "POST", "/cohorts", huge)
        assert status == 422 and "cannot be stored" in body["error"]

        assert http(worker, "GET", "/cohorts/no-such-cohort/overview")[0] == 404
        # The web server's own errors are JSON as well
        status, body = http(worker, "GET", "/no/such/path")
        assert status == 404 and isinstance(body, dict) and body["error"]
        status, body = http(worker, "PATCH", "/cohorts")
        assert status == 405 and isinstance(body, dict) and body["error"]
        status, body = http(worker, "POST", "/cohorts", b"{" + b" " * (2 * 1024 * 1024) + b"}")
        assert status == 413 and isinstance(body, dict) and "body size" in body["error"]
        status, body = http(
            worker, "POST", "/cohorts", b'{"cohort_id": "z", "name": "Z"}', {"Content-Encoding": "gzip"}
        )
        assert status == 400 and body["error"].startswith(
            "the body cannot be read: it is not what its Content-Encoding (gzip) says"
        )
        status, body = http(worker, "GET", "/cohorts")  # (the worker still answers)
        assert status == 200 and isinstance(body, dict)
        with open(worker.log_path) as worker_log:  # (the web server read the bad body again and logged a traceback)
            assert "Unhandled exception" not in worker_log.read()
        deep = {
            "cohort_id": "d",
            "name": "D",
            "criteria": [{"name": "r", "field": "agent_id", "op": "eq", "value": None}],
        }
        deep["criteria"][0]["value"] = json.loads("[" * 500 + "]" * 500)
        status, body = http(worker, "POST", "/cohorts", deep)
        assert status == 422 and "`criteria[0].value`: is nested more than 8 levels deep" in body["error"]
        status, body = http(worker, "POST", "/cohorts", {**COHORT, "cohort_id": "big", "name": "N" * 900_000})
        assert status == 422 and "`name` is 900000 characters long, more than 200" in body["error"]
        status, body = http(worker, "PUT", "/cohorts/x", {"name": "X", "deleted": True})
        assert status == 422 and "DELETE" in body["error"]
        assert http(worker, "GET", "/cohorts")[0] == 200 and http(worker, "GET", "/cohorts/d")[0] == 404
        for escaped in ("%FF", "%ED%A0%80"):  # not UTF-8, and a lone surrogate
            status, body = http(worker, "PUT", f"/cohorts/{escaped}", {"name": "X"})
            assert status == 400 and "percent-encoded UTF-8" in body["error"]
        assert http(worker, "PUT", "/cohorts/caf%C3%A9%2Fx", {"name": "Café"})[1]["cohort_id"] == "café/x"
        assert http(worker, "DELETE", "/cohorts/caf%C3%A9%2Fx")[0] == 200
        wait_for(lambda: worker.health()["cohorts_read"])  # (scoring waits for it too)
        status, created = http(worker, "POST", "/cohorts", COHORT)
        assert status == 201 and created["cohort_id"] == "support"
        assert http(worker, "GET", "/cohorts/support")[0] == 200  # read back before the answer
        status, body = http(worker, "POST", "/cohorts", COHORT)
        assert status == 409 and "PUT" in body["error"]
        assert http(worker, "PUT", "/cohorts/brief", {"name": "Brief"})[0] == 201  # created
        assert http(worker, "PUT", "/cohorts/brief", {"name": "Brief 2"})[0] == 200  # replaced
        assert http(worker, "DELETE", "/cohorts/brief")[0] == 200  # at once: no 404 for a write just made
        assert http(worker, "GET", "/cohorts/brief")[0] == 404
        # Eight clients create one cohort at once: one is told it did, the others that it exists.
        with ThreadPoolExecutor(8) as pool:
            answers = list(
                pool.map(
                    lambda i: http(worker, "POST", "/cohorts", {**COHORT, "cohort_id": "race", "name": f"writer {i}"}),
                    range(8),
                )
            )
        assert sorted(status for status, _ in answers) == [201] + [409] * 7
        [winner] = [body["name"] for status, body in answers if status == 201]
        assert http(worker, "GET", "/cohorts/race")[1]["name"] == winner
        assert http(worker, "PUT", "/cohorts/race", {"cohort_id": None, "name": "null id"})[1]["cohort_id"] == "race"
        assert http(worker, "DELETE", "/cohorts/race")[0] == 200

        settings = settings_for(broker, topic_prefix)
        send(log, settings)
        live = latest_by_call(collect_results(settings, expected))
        assert live == expected
        assert all(r["cohorts"] and r["cohorts"][0]["cohort_id"] == "support" for r in live.values())

        want_overview = CohortOverview.recompute(expected.values()).overview("support")
        overview = wait_for(lambda: (o := http(worker, "GET", "/cohorts/support/overview")[1]) == want_overview and o)
        assert overview["calls"] == len(expected)

        want_summary = RunSummary(run_id="run-e2e")
        for result in expected.values():
            want_summary.add(result)
        summary = wait_for(
            lambda: (
                (s := http(worker, "GET", "/runs/run-e2e/summary"))[0] == 200
                and s[1] == want_summary.summary().to_dict()
                and s[1]
            )
        )
        assert summary["scenarios"] == len(expected)
        status, text = http(worker, "GET", "/runs/run-e2e/summary.txt")
        assert status == 200 and text == summary_text(want_summary)  # (the text `callqa summary` prints)
        assert http(worker, "GET", "/runs/nope/summary")[0] == 404
    finally:
        worker.stop()


def test_a_cohort_write_the_broker_cannot_take_is_answered_503_not_201(tmp_path, topic_prefix):
    from streams.kafka.embedded_broker import EmbeddedBroker

    own = EmbeddedBroker().start(log_path=str(tmp_path / "broker.log"))  # this test stops it
    try:
        worker = start_worker(own, topic_prefix)
        try:
            status, _ = http(worker, "POST", "/cohorts", COHORT)
            assert status == 201  # confirmed by the broker
            own.stop()
            status, body = http(worker, "POST", "/cohorts", dict(COHORT, cohort_id="later"))
            assert status == 503 and "did not confirm the write" in body["error"]
        finally:
            worker.stop()
    finally:
        own.stop()
