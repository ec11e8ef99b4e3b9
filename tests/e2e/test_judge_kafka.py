"""Live, through the embedded broker: the worker asks the judge off the hot path, the answer comes
back through callqa.events as a judge.result, and the call is re-scored from it (version 2). The
events topic then replays, without judge or network, to the same results."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from streams.kafka.topic_reader import read_topic
from streams.topics import TopicNames
from tests.helpers.eventkit import T0
from tests.helpers.fake_llm_server import FakeLlm
from tests.helpers.judgekit import API_KEY, EVALUATION_ANSWER, QA_ANSWER, judged_call
from tests.helpers.livekit import (
    collect,
    latest_by_call,
    replay_results,
    send,
    settings_for,
    start_worker,
)

pytestmark = pytest.mark.broker
CALLS = ["k0", "k1", "k2"]


def test_the_worker_judges_each_ended_call_and_the_events_topic_replays_to_the_same_results(
    broker, topic_prefix, tmp_path
):
    log = tmp_path / "calls.jsonl"
    events = [e for n, call_id in enumerate(CALLS) for e in judged_call(call_id, start=T0 + n * 100)]
    log.write_text("\n".join(msgspec.json.encode(e).decode() for e in events) + "\n")
    settings = settings_for(broker, topic_prefix)
    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER) as fake:
        worker = start_worker(
            broker,
            topic_prefix,
            env={"OPENAI_API_KEY": API_KEY, "OPENAI_BASE_URL": fake.base_url, "CALLQA_JUDGE_TIMEOUT_S": "5"},
        )
        try:
            send(str(log), settings)
            live = collect(
                settings,
                TopicNames(topic_prefix).results,
                lambda rows: all(latest_by_call(rows).get(c, {}).get("version", 0) >= 2 for c in CALLS),
                25,
            )
            judge_counters = worker.health()["judge"]
        finally:
            worker.stop()
    assert judge_counters == {"queued": 0, "in_flight": 0, "published": len(CALLS), "dropped": 0}
    latest = latest_by_call(live)
    assert {c: latest[c]["version"] for c in CALLS} == dict.fromkeys(CALLS, 2)
    assert {
        m["details"]["judge"]
        for c in CALLS
        for m in latest[c]["metrics"]
        if m["metric"] in ("hallucination", "kb_recall", "naturalness", "tool_call_accuracy", "transition_accuracy")
    } == {"llm"}
    assert {latest[c]["evaluation"]["judge_score"] for c in CALLS} == {0.8}

    records: list[bytes] = []
    asyncio.run(read_topic(settings, TopicNames(topic_prefix).events, 2.0, lambda k, v: records.append(v)))
    recorded = tmp_path / "recorded.msgpack"
    recorded.write_bytes(b"".join(records))
    replayed, _ = replay_results(str(recorded))
    assert latest_by_call(replayed) == latest


def test_stopping_with_judge_requests_in_flight_loses_them_quietly(broker, topic_prefix, tmp_path):
    """The requests are cancelled before Faust stops its producer: no traceback for each, one line."""
    log = tmp_path / "calls.jsonl"
    events = [e for n, call_id in enumerate(CALLS) for e in judged_call(call_id, start=T0 + n * 100)]
    log.write_text("\n".join(msgspec.json.encode(e).decode() for e in events) + "\n")
    settings = settings_for(broker, topic_prefix)
    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER, mode="slow", delay_s=30.0) as fake:
        worker = start_worker(
            broker,
            topic_prefix,
            env={"OPENAI_API_KEY": API_KEY, "OPENAI_BASE_URL": fake.base_url, "CALLQA_JUDGE_TIMEOUT_S": "60"},
        )
        try:
            send(str(log), settings)
            collect(
                settings, TopicNames(topic_prefix).results, lambda rows: len(latest_by_call(rows)) == len(CALLS), 25
            )
        finally:
            worker.stop()
    with open(worker.log_path, encoding="utf-8", errors="replace") as worker_log:
        text = worker_log.read()
    assert "not published" not in text and "Traceback" not in text
    assert "judge: stopped with" in text and "in flight; those calls keep their heuristic results" in text
