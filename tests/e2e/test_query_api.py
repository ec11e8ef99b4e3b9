"""The query API through the embedded broker and real workers: with two workers sharing the partitions,
each answers for every sample call (asked of the worker that does not hold it) exactly the latest
result `callqa replay` gives; `/metrics` (read with prometheus_client's parser) and `/timeseries`
count what the replay counts."""

from __future__ import annotations

import http.client
import json
import tempfile
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from models.wire import JSONL_LOG
from scorers.engine import CallEngine
from streams.files.event_log import read_log
from streams.partitioning import partition_for
from streams.replay.alerts import AlertsFile
from streams.replay.log_replay import replay
from streams.replay.record import record_events_topic
from streams.topics import TopicNames
from streams.web.alert_episodes import AlertEpisodes
from tests.helpers.livekit import latest_by_call, replay_results, send, settings_for, start_worker

pytestmark = pytest.mark.broker

SAMPLE = str(Path(__file__).resolve().parents[2] / "samples" / "calls.jsonl")
RULES = str(Path(__file__).resolve().parents[2] / "samples" / "alert-rules.toml")
PARTITIONS = 4


def get(worker, path: str, token: str | None = None) -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"http://127.0.0.1:{worker.web_port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def get_json(worker, path: str, token: str | None = None) -> dict:
    status, body = get(worker, path, token)
    assert status == 200, (path, status, body[:300])
    return json.loads(body)


def wait_for(predicate, timeout_s: float = 120.0):
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError("condition not met in time")


@pytest.fixture(scope="module")
def deployment(broker):
    """Two workers sharing the partitions, the sample log sent, every result read by both."""
    prefix = f"t-query-api-{id(broker) % 100000}"
    results, _ = replay_results(SAMPLE, PARTITIONS)
    expected = latest_by_call(results)
    env = {"CALLQA_ALERT_RULES_FILE": RULES}
    workers = [start_worker(broker, prefix, PARTITIONS, env=env)]
    try:
        workers.append(start_worker(broker, prefix, PARTITIONS, env=env))
        # (Both in the group, each with some of the partitions, before anything is sent.)
        wait_for(
            lambda: (
                all(w.health()["assigned_partitions"] for w in workers)
                and sorted(p for w in workers for p in w.health()["assigned_partitions"]) == list(range(PARTITIONS))
            )
        )
        send(SAMPLE, settings_for(broker, prefix, PARTITIONS))
        wait_for(lambda: all(_indexed(w) == len(expected) and _results_read(w) >= len(results) for w in workers))
        yield workers, results, expected, prefix
    finally:
        for worker in workers:
            worker.stop()


def _metrics(worker) -> dict[str, list]:
    status, body = get(worker, "/metrics")
    assert status == 200
    return {family.name: family.samples for family in text_string_to_metric_families(body.decode())}


def _indexed(worker) -> int:
    return int(_metrics(worker)["callqa_calls_indexed"][0].value)


def _results_read(worker) -> int:
    return int(
        sum(sample.value for sample in _metrics(worker)["callqa_results"] if sample.name == "callqa_results_total")
    )


def test_every_call_is_its_replayed_latest_result_asked_of_the_worker_that_does_not_hold_it(deployment):
    workers, _, expected, _ = deployment
    holders = [set(w.health()["assigned_partitions"]) for w in workers]
    for call_id, result in expected.items():
        partition = partition_for(call_id, PARTITIONS)
        other = next(w for w, held in zip(workers, holders, strict=True) if partition not in held)
        assert get_json(other, f"/calls/{call_id}") == result, call_id


def test_a_calls_events_come_from_the_journal_of_the_worker_holding_it_whichever_is_asked(deployment):
    workers, _, expected, _ = deployment
    sent: dict[str, list[str]] = {}
    with open(SAMPLE) as log:
        for line in log:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # (the sample holds some broken records on purpose)
            if (
                isinstance(event, dict)
                and event.get("call_id") in expected
                and "event_id" in event
                and event["event_id"] not in sent.setdefault(event["call_id"], [])
            ):
                sent[event["call_id"]].append(event["event_id"])
    for call_id in sorted(expected)[:5]:
        for worker in workers:
            answer = get_json(worker, f"/calls/{call_id}/events")
            ids = [event["event_id"] for event in answer["events"]]
            assert set(sent[call_id]) <= set(ids) and len(ids) == len(set(ids)), call_id
            assert {event["call_id"] for event in answer["events"]} == {call_id}
    assert get(workers[0], "/calls/no-such-call/events")[0] == 404


def test_alert_episodes_are_the_replays_alerts_on_every_worker(deployment, tmp_path):
    workers, _, _, _ = deployment
    sink = AlertsFile(RULES, str(tmp_path / "alerts.jsonl"), partitions=PARTITIONS)
    replay(read_log(SAMPLE), CallEngine(), PARTITIONS, sink.observe)
    sink.end_of_input()
    sink.close()
    expected = AlertEpisodes()
    for line in (tmp_path / "alerts.jsonl").read_bytes().splitlines():
        expected.apply(None, line, 0)
    assert expected.newest_first(), "the sample's rules fire on the sample"
    for worker in workers:
        wait_for(lambda worker=worker: get_json(worker, "/alerts/episodes")["episodes"] == expected.newest_first())
    assert get_json(workers[0], "/alerts/episodes?state=resolved")["episodes"] == expected.newest_first("resolved")


def test_metrics_counters_equal_the_replays_totals(deployment):
    workers, results, expected, _ = deployment
    verdicts = Counter((m["metric"], _verdict(m)) for r in results for m in r["metrics"])
    latest = Counter((m["metric"], _verdict(m)) for r in expected.values() for m in r["metrics"])
    for worker in workers:  # (results are deployment-wide: every worker counts them all)
        families = _metrics(worker)
        counted = Counter()
        for sample in families["callqa_metric_verdicts"]:
            counted[(sample.labels["metric"], sample.labels["verdict"])] += int(sample.value)
        assert counted == verdicts
        calls = Counter()
        for sample in families["callqa_calls"]:
            calls[(sample.labels["metric"], sample.labels["verdict"])] += int(sample.value)
        assert calls == latest
        assert sum(s.value for s in families["callqa_results"] if s.name == "callqa_results_total") == len(results)
        assert {s.name for s in families["callqa_events_applied"]} == {"callqa_events_applied_total"}
        histogram = {
            s.labels["metric"]: s.value
            for s in families["callqa_metric_score"]
            if s.name == "callqa_metric_score_count"
        }
        applied = Counter()
        for (metric, verdict), n in verdicts.items():
            applied[metric] += n if verdict != "na" else 0
        assert histogram == {metric: n for metric, n in applied.items() if n}


def test_timeseries_totals_equal_the_replays_counts(deployment):
    workers, _, expected, _ = deployment
    times = [r["ended_ts_ms"] if r["ended_ts_ms"] is not None else r["event_ts_ms"] for r in expected.values()]
    answer = get_json(workers[0], f"/timeseries?from={min(times)}&to={max(times) + 1}")
    assert answer["totals"]["calls"] == len(expected)
    for series in answer["series"]:
        metric = series["metric"]
        outcomes = [_verdict(m) for r in expected.values() for m in r["metrics"] if m["metric"] == metric]
        assert sum(b["calls"] for b in series["buckets"]) == len(expected)
        assert sum(b["applied"] for b in series["buckets"]) == sum(v != "na" for v in outcomes), metric
        assert sum(b["passed"] for b in series["buckets"]) == outcomes.count("pass"), metric
    # Without a range: the 24 hours up to the newest call, however long ago that was.
    default = get_json(workers[1], "/timeseries?metric=latency")
    assert default["to_ms"] > max(times) and default["to_ms"] - default["from_ms"] <= 24 * 3_600_000 + 120_000


def test_calls_are_listed_newest_first_and_filtered_as_the_replay_says(deployment):
    workers, _, expected, _ = deployment
    failing = {
        c for c, r in expected.items() for m in r["metrics"] if m["metric"] == "latency" and m["passed"] is False
    }
    seen, cursor = [], None
    while True:
        page = get_json(
            workers[1], "/calls?metric=latency&verdict=fail&limit=7" + (f"&cursor={cursor}" if cursor else "")
        )
        seen += page["calls"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert {row["call_id"] for row in seen} == failing and len(seen) == len(failing)
    assert [row["time_ms"] for row in seen] == sorted((row["time_ms"] for row in seen), reverse=True)


def test_an_unknown_or_malformed_query_parameter_is_a_400_naming_it(deployment):
    workers, _, expected, _ = deployment
    some_cohort_call = next(iter(expected))
    for path, name in (
        ("/calls?agent=x", "'agent'"),
        ("/timeseries?step=90", "'step'"),
        ("/timeseries?from=last+week", "'from'"),
        ("/runs?window_s=3600", "'window_s'"),
        (f"/calls/{some_cohort_call}?versions=some", "'versions'"),
    ):
        status, body = get(workers[0], path)
        assert status == 400 and name in json.loads(body)["error"], path


def _verdict(metric: dict) -> str:
    return "na" if metric["score"] is None else "pass" if metric["passed"] else "fail"


def test_open_calls_are_answered_from_the_worker_holding_them_whichever_is_asked(deployment, broker):
    """(Last of the deployment's tests: the call it opens stays open.)"""
    import asyncio

    from streams.send.sender import send_log

    workers, _, _, prefix = deployment
    latest_ts = 0
    with open(SAMPLE) as log:
        for line in log:
            try:
                latest_ts = max(latest_ts, json.loads(line).get("ts_ms", 0))
            except (ValueError, AttributeError, TypeError):
                continue
    call_id = "open-on-one-worker"
    events = [
        {
            "v": 1,
            "event_id": f"{call_id}-{n}",
            "call_id": call_id,
            "ts_ms": latest_ts + 1000 * n,
            "type": kind,
            "data": data,
        }
        for n, (kind, data) in enumerate(
            [("call.started", {"agent_id": "a-open"}), ("turn", {"role": "agent", "text": "Hello there"})]
        )
    ]
    asyncio.run(
        send_log([json.dumps(e).encode() for e in events], settings_for(broker, prefix, PARTITIONS), end_of_input=False)
    )
    holder = next(w for w in workers if partition_for(call_id, PARTITIONS) in w.health()["assigned_partitions"])
    other = next(w for w in workers if w is not holder)
    document = wait_for(
        lambda: (lambda answer: answer[0] == 200 and json.loads(answer[1]))(get(other, f"/calls/{call_id}"))
    )
    assert document["final"] is False and document["call_id"] == call_id
    for worker in workers:
        listed = get_json(worker, "/calls?state=open")
        assert [row["call_id"] for row in listed["calls"]] == [call_id] and listed["workers_unreachable"] == []


API_TOKEN = "t0ken-for-reads"


def test_reviewers_writes_rescore_the_call_and_content_asks_for_the_token(broker, topic_prefix):
    from tests.helpers.logkit import build_log

    log = str(Path(tempfile.mkdtemp()) / "calls.jsonl")
    build_log(log, calls=6)
    results, _ = replay_results(log, PARTITIONS)
    expected = latest_by_call(results)
    worker = start_worker(broker, topic_prefix, PARTITIONS, env={"CALLQA_API_TOKEN": API_TOKEN})
    try:
        send(log, settings_for(broker, topic_prefix, PARTITIONS))
        wait_for(lambda: len(json.loads(get(worker, "/calls?limit=500", API_TOKEN)[1])["calls"]) == len(expected))
        call_id = next(c for c, r in expected.items() if r["version"] == 1)
        # Call content asks for the token; health, metrics and the API's description do not.
        for path in ("/calls", f"/calls/{call_id}", "/timeseries", "/runs"):
            assert get(worker, path)[0] == 401, path
        for path in ("/health", "/metrics", "/openapi.json", "/access"):
            assert get(worker, path)[0] == 200, path
        assert json.loads(get(worker, "/access")[1]) == {"token_required": True}

        assert _post(worker, f"/calls/{call_id}/annotations", {"user_sentiment": "Negative"}, None)[0] == 401
        feed = http.client.HTTPConnection("127.0.0.1", worker.web_port, timeout=30)
        feed.request("GET", "/events/results", headers={"Authorization": f"Bearer {API_TOKEN}"})
        stream = feed.getresponse()
        assert stream.status == 200 and stream.getheader("Content-Type") == "text/event-stream"
        assert stream.readline() == b": connected\n"
        status, answer = _post(worker, f"/calls/{call_id}/annotations", {"user_sentiment": "Negative"}, API_TOKEN)
        assert status == 200 and answer["version"] == 2
        # The live feed brings the new version without asking.
        assert stream.readline() == b"\n" and stream.readline() == b"event: result\n"
        row = json.loads(stream.readline().removeprefix(b"data: "))
        assert (row["call_id"], row["version"]) == (call_id, 2)
        feed.close()
        turns = expected[call_id]["evaluation"]["turns"]
        user_turn = next(i for i, turn in enumerate(turns) if turn["role"] == "user")
        status, answer = _post(
            worker,
            f"/calls/{call_id}/corrections",
            {"turn_index": user_turn, "text": "I need help with my order"},
            API_TOKEN,
        )
        assert status == 200 and answer["version"] == 3
        history = get_json(worker, f"/calls/{call_id}?versions=all", API_TOKEN)["versions"]
        assert [(v["version"], v["cause"]) for v in history] == [(1, "end"), (2, "annotation"), (3, "correction")]
        assert get_json(worker, f"/calls/{call_id}", API_TOKEN) == history[-1]["result"]
        assert _post(worker, f"/calls/{call_id}/annotations", {"user_sentiment": "Furious"}, API_TOKEN)[0] == 422
        assert _post(worker, "/calls/no-such-call/annotations", {"user_sentiment": "Negative"}, API_TOKEN)[0] == 404
    finally:
        worker.stop()
    # The reviewer's events are in the events topic like any other: its replay gives the same versions.
    recorded = str(Path(tempfile.mkdtemp()) / "topic.jsonl")
    settings = settings_for(broker, topic_prefix, PARTITIONS)
    with open(recorded, "wb") as out:
        record_events_topic(settings, TopicNames(topic_prefix).events, out.write, JSONL_LOG)
    replayed = latest_by_call(replay_results(recorded, PARTITIONS)[0])
    assert replayed[call_id] == history[-1]["result"]


def test_an_open_call_answers_its_metrics_so_far_marked_not_final(broker, topic_prefix):
    import asyncio

    from streams.send.sender import send_log

    t0 = 1_759_741_200_000
    events = [
        {
            "v": 1,
            "event_id": "open-1",
            "call_id": "open-call",
            "ts_ms": t0,
            "type": "call.started",
            "data": {"agent_id": "a1"},
        },
        {
            "v": 1,
            "event_id": "open-2",
            "call_id": "open-call",
            "ts_ms": t0 + 1000,
            "type": "turn",
            "data": {"role": "agent", "text": "Hello, how can I help?"},
        },
        {
            "v": 1,
            "event_id": "open-3",
            "call_id": "open-call",
            "ts_ms": t0 + 4000,
            "type": "turn",
            "data": {"role": "user", "text": "My order is late"},
        },
    ]
    worker = start_worker(broker, topic_prefix, PARTITIONS, env={"CALLQA_IDLE_TICK_S": "0"})
    try:
        settings = settings_for(broker, topic_prefix, PARTITIONS)
        asyncio.run(send_log([json.dumps(e).encode() for e in events], settings, end_of_input=False))
        document = wait_for(
            lambda: (lambda answer: answer[0] == 200 and json.loads(answer[1]))(get(worker, "/calls/open-call"))
        )
        assert document["final"] is False and document["version"] == 0 and document["open"]["turns"] == 2
        assert {m["metric"] for m in document["metrics"]} >= {"latency", "wer"}
        listed = get_json(worker, "/calls?state=open")
        assert [row["call_id"] for row in listed["calls"]] == ["open-call"] and listed["calls"][0]["final"] is False
    finally:
        worker.stop()


def _post(worker, path: str, body: dict, token: str | None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(
        f"http://127.0.0.1:{worker.web_port}{path}", method="POST", data=json.dumps(body).encode(), headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
