"""The live worker's judge hook: queued off the hot path, published back as an event, never blocking."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

from models.events import JudgeResult, JudgeResultData
from models.wire import decode_message
from scorers.engine import CallEngine
from streams.judge.runner import JudgeRunner, install_judge
from tests.helpers.eventkit import run_call
from tests.helpers.fake_llm_server import FakeLlm
from tests.helpers.judgekit import EVALUATION_ANSWER, QA_ANSWER, judged_call, settings
from tests.helpers.qa_kit import metric


class Topic:
    def __init__(self) -> None:
        self.sent: list[tuple[bytes, bytes]] = []

    async def send(self, key: bytes, value: bytes) -> None:
        self.sent.append((key, value))


def worker_with_judge(base_url: str, **options):
    engine = CallEngine()
    callqa = SimpleNamespace(
        settings=settings(base_url, **options),
        live=SimpleNamespace(engine=engine),
        events_topic=Topic(),
        result_hooks=[],
    )
    runner = install_judge(callqa)
    return callqa, engine, runner


def test_the_hook_returns_at_once_and_the_answer_is_published_to_the_events_topic():
    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER, mode="slow", delay_s=0.5) as fake:
        callqa, engine, runner = worker_with_judge(fake.base_url)
        _, (result,) = run_call(judged_call(), engine)
        (hook,) = callqa.result_hooks

        async def scenario():
            started = time.monotonic()
            await hook(result, engine.calls["c1"])
            returned_after = time.monotonic() - started
            await runner.drain()
            await runner.stop()
            return returned_after

        returned_after = asyncio.run(scenario())
    assert returned_after < 0.1  # the server takes 0.5 s to answer
    ((key, value),) = callqa.events_topic.sent
    (judge_event,) = decode_message(value).events
    assert key == b"c1" and isinstance(judge_event, JudgeResult) and judge_event.event_id == "c1:judge"
    rescored = engine.process(judge_event).result
    assert rescored.version == 2 and metric(rescored, "kb_recall").details["judge"] == "llm"


def test_only_the_first_result_of_a_call_without_an_answer_is_judged():
    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER) as fake:
        callqa, engine, runner = worker_with_judge(fake.base_url)
        _, (first,) = run_call(judged_call(), engine)

        async def scenario():
            await runner.on_result(first, engine.calls["c1"])
            await runner.drain()
            ((_, value),) = callqa.events_topic.sent
            second = engine.process(decode_message(value).events[0]).result
            await runner.on_result(second, engine.calls["c1"])  # version 2: already judged
            await runner.drain()
            await runner.stop()

        asyncio.run(scenario())
    assert len(callqa.events_topic.sent) == 1
    assert len(fake.requests) == 2  # one QA and one evaluation request


def test_a_full_queue_drops_the_call_instead_of_waiting():
    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER) as fake:
        callqa, engine, runner = worker_with_judge(fake.base_url, judge_queue_size=1, judge_concurrency=1)
        firsts = [run_call(judged_call(f"c{n}"), engine)[1][0] for n in range(3)]

        async def scenario():
            # No await in between yields to the judge's task: the queue of one fills at once.
            for result in firsts:
                await runner.on_result(result, engine.calls[result.call_id])
            await runner.drain()
            await runner.stop()

        asyncio.run(scenario())
    assert (runner.dropped, runner.published) == (2, 1)
    assert [key for key, _ in callqa.events_topic.sent] == [b"c0"]


def is_judge_hook(hook) -> bool:
    return isinstance(getattr(hook, "__self__", None), JudgeRunner)


def test_the_worker_installs_the_judge_only_when_a_key_is_set(tmp_path):
    from streams.config import Settings
    from streams.worker.app import create_app

    without = create_app(Settings(data_dir=str(tmp_path / "a"), app_id="judge-off"))
    with_key = create_app(
        Settings(
            data_dir=str(tmp_path / "b"),
            app_id="judge-on",
            openai_api_key="sk-x",
            openai_base_url="http://127.0.0.1:9/v1",
        )
    )
    assert not any(is_judge_hook(h) for h in without.result_hooks)
    assert sum(is_judge_hook(h) for h in with_key.result_hooks) == 1


def test_a_call_whose_recorded_answer_arrives_while_it_waits_in_the_queue_is_not_asked_again():
    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER) as fake:
        callqa, engine, runner = worker_with_judge(fake.base_url)
        _, (first,) = run_call(judged_call(), engine)

        async def scenario():
            await runner.on_result(first, engine.calls["c1"])  # queued on the version-1 result…
            # …and the log's own judge.result (recorded by `callqa replay --judge --record`) comes next.
            engine.process(
                JudgeResult(
                    event_id="c1:recorded", call_id="c1", ts_ms=first.event_ts_ms + 1, data=JudgeResultData(qa=None)
                )
            )
            await runner.drain()
            await runner.stop()

        asyncio.run(scenario())
    assert fake.requests == [] and callqa.events_topic.sent == []
