"""A real Pipecat pipeline with CallqaObserver and no other callqa code, through the embedded broker
and a worker: its call scores as the same call written as events by hand does."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading

import pytest

pytest.importorskip("pipecat")

from callqa.pipecat import CallqaObserver
from streams.partitioning import partition_for
from streams.topics import TopicNames
from tests.helpers.livekit import collect, send, settings_for, start_worker
from tests.helpers.paths import REPO
from tests.helpers.pipecat_bot import run_bot, two_turn_call
from tests.helpers.pipecat_call import hand_written_call

pytestmark = pytest.mark.broker


def observer_for(broker, prefix: str, call_id: str, **fields) -> CallqaObserver:
    return CallqaObserver(
        bootstrap_servers=broker.bootstrap,
        call_id=call_id,
        agent_id="support-bot",
        topic=TopicNames(prefix).events,
        **fields,
    )


def final_results(settings, call_ids: list[str]) -> dict[str, dict]:
    def complete(records: list[dict]) -> bool:
        return all(any(r["call_id"] == c and r["final"] for r in records) for c in call_ids)

    records = collect(settings, TopicNames(settings.topic_prefix).results, complete, 120)
    latest: dict[str, dict] = {}
    for r in records:
        if r["call_id"] in call_ids and r["final"] and r["version"] >= latest.get(r["call_id"], {}).get("version", -1):
            latest[r["call_id"]] = r
    return latest


def scored_part(result: dict) -> dict:
    """What a call's events decide, without the names that differ by call_id."""
    evaluation = {k: v for k, v in result["evaluation"].items() if k not in ("scenario_name", "scenario_directory")}
    return {"metrics": result["metrics"], "evaluation": evaluation, "no_conversation": result.get("no_conversation")}


def test_an_observed_pipeline_scores_as_the_same_call_written_by_hand(broker, topic_prefix, tmp_path):
    settings = settings_for(broker, topic_prefix)
    worker = start_worker(broker, topic_prefix)
    try:
        observer = observer_for(broker, topic_prefix, "pipecat-1")
        asyncio.run(run_bot(two_turn_call(), [observer]))
        log = tmp_path / "hand.jsonl"
        log.write_text("".join(json.dumps(e) + "\n" for e in hand_written_call("hand-1", observer.started_ts_ms)))
        send(str(log), settings)
        results = final_results(settings, ["pipecat-1", "hand-1"])
    finally:
        worker.stop()
    observed, by_hand = results["pipecat-1"], results["hand-1"]
    assert observer.dropped == 0
    assert scored_part(observed) == scored_part(by_hand)
    # (What the comparison covers, spelt out: turns, latency, TTFB, tokens and the tool call.)
    evaluation = observed["evaluation"]
    assert [t["text"] for t in evaluation["turns"]] == [
        "Where is my order 4521?",
        "It shipped and arrives Friday.",
        "Can I change the address?",
        "Sure, what is",
        "Never mind, thanks.",
        "Goodbye!",
    ]
    assert [s["latency_ms"] for s in evaluation["latencies"]] == [800.0, 800.0, 400.0]
    assert evaluation["token_usage"]["agent"] == {"n_calls": 1, "prompt": 120, "completion": 9}
    metrics = {m["metric"]: m for m in observed["metrics"]}
    assert metrics["latency"]["details"]["ttfb"]["OpenAILLMService#0"]["p50"] == 450.0
    assert metrics["tool_call_accuracy"]["details"]["good"] == 1
    assert evaluation["stop_reason"] == "[EXIT]"


def test_a_broker_down_during_the_call_loses_nothing_that_fits_the_buffer(tmp_path):
    """The broker is down for the whole call and comes up while the bot shuts down: the observer
    keeps the call's events (the pipeline ends meanwhile), delivers them once it can, and the call
    scores as it would have."""
    from streams.kafka.embedded_broker import EmbeddedBroker, free_port

    late = EmbeddedBroker(port=free_port())
    prefix = "t-broker-down"
    observer = CallqaObserver(
        bootstrap_servers=late.bootstrap,
        call_id="late-1",
        agent_id="support-bot",
        topic=TopicNames(prefix).events,
        flush_timeout_s=120,
    )
    bot = threading.Thread(target=lambda: asyncio.run(run_bot(two_turn_call(), [observer])))
    bot.start()
    worker = None
    try:
        while not any(e["type"] == "call.ended" for e in observer.undelivered):  # the call is over
            bot.join(0.05)
        assert observer.sent == 0
        late.start(log_path=str(tmp_path / "broker.log"))
        worker = start_worker(late, prefix)
        bot.join()
        settings = settings_for(late, prefix)
        log = tmp_path / "hand.jsonl"
        log.write_text("".join(json.dumps(e) + "\n" for e in hand_written_call("hand-1", observer.started_ts_ms)))
        send(str(log), settings)
        results = final_results(settings, ["late-1", "hand-1"])
    finally:
        bot.join()
        if worker is not None:
            worker.stop()
        late.stop()
    assert (observer.dropped, observer.undelivered) == (0, [])
    assert scored_part(results["late-1"]) == scored_part(results["hand-1"])


# A bot process that speaks the first user turn, makes sure its events are out, says so and hangs on
# (as a bot does mid-call) until it is killed.
DYING_BOT = """
import asyncio, sys
from callqa.pipecat import CallqaObserver
from tests.helpers.pipecat_bot import ScriptedBot, ScriptClock, two_turn_call, worker_for
from pipecat.workers.runner import WorkerRunner

async def main(bootstrap, topic):
    observer = CallqaObserver(bootstrap_servers=bootstrap, call_id="dead-1", agent_id="support-bot", topic=topic,
                              inactivity_timeout_s=1)
    bot = ScriptedBot(ScriptClock(), two_turn_call()[:3])
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker_for(bot, [observer]))
    running = asyncio.create_task(runner.run())
    await bot.done.wait()
    await observer.flush()
    print(observer.started_ts_ms, flush=True)
    await running

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_a_bot_killed_before_its_end_is_swept_and_flagged_as_no_conversation(broker, topic_prefix):
    """The bot's process is killed after the user spoke and before the agent did: no call.ended comes;
    the call is swept for inactivity and flagged as no conversation (a cohort then fails it)."""
    settings = settings_for(broker, topic_prefix)
    worker = start_worker(broker, topic_prefix)
    bot = subprocess.Popen(
        [sys.executable, "-c", DYING_BOT, broker.bootstrap, TopicNames(topic_prefix).events],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        started_ts_ms = int(bot.stdout.readline())
        bot.send_signal(signal.SIGKILL)
        bot.wait()
        # The sweep needs the partition's time to move on: an end-of-input watermark naming the call,
        # as `callqa send` ends a log with.
        send_watermark(settings, "dead-1", started_ts_ms + 10_000)
        result = final_results(settings, ["dead-1"])["dead-1"]
    finally:
        bot.kill()
        worker.stop()
    assert [t["role"] for t in result["evaluation"]["turns"]] == ["user"]
    assert result["evaluation"]["stop_reason"] == "[INACTIVITY_TIMEOUT]"
    assert result["no_conversation"] is True
    metrics = {m["metric"]: m for m in result["metrics"]}
    # Only the user's transcription is measured; what would have found nothing wrong does not apply.
    assert {name for name, m in metrics.items() if m["passed"]} == {"wer"}
    for name in ("hallucination", "overlapping_speech", "naturalness"):
        assert metrics[name]["details"]["reason"] == "The agent did not speak"


def send_watermark(settings, call_id: str, ts_ms: int) -> None:
    partition = partition_for(call_id, settings.partitions)
    event = {
        "v": 1,
        "event_id": f"wm-{call_id}",
        "call_id": "__watermark__",
        "ts_ms": ts_ms,
        "type": "watermark",
        "data": {"end_of_input": True, "partition": partition, "calls": [call_id]},
    }
    asyncio.run(_produce(settings, TopicNames(settings.topic_prefix).events, json.dumps(event).encode(), partition))


async def _produce(settings, topic: str, value: bytes, partition: int) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=settings.broker.split("://", 1)[1])
    await producer.start()
    try:
        await producer.send_and_wait(topic, value, key=b"__watermark__", partition=partition)
    finally:
        await producer.stop()
