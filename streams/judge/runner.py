"""The live worker's judge: off the hot path, its answer sent back into `callqa.events`.

`install_judge(callqa)` adds a result hook. For the first result of an ended call (version 1) with no
judge answer recorded, the hook builds the call's judge requests from its state right away (the state
may be forgotten later) and queues them; it never waits for the model. A few background tasks take
requests from the queue, call the judge (streams/judge/client.py) and publish its `judge.result`
event to the events topic with the call's id as key; the worker folds it like any other event and
publishes the call's result again (version + 1).

The queue is bounded (`judge_queue_size`): when it is full the call is not judged and keeps its
heuristic result — the agent is never slowed down for the judge. Requests still queued when a worker
stops are lost the same way; `callqa replay --judge` can judge those calls from the log later.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from models.call_state import CallState
from models.results import CallResult
from models.wire import encode_event
from scorers.judge.requests import JudgeRequests, build_requests
from streams.judge.client import JudgeClient

if TYPE_CHECKING:
    from streams.worker.app import CallqaApp

logger = logging.getLogger("callqa.judge")
# A full queue is said once per this many calls it turns away.
DROPS_PER_WARNING = 100


class JudgeRunner:
    def __init__(self, callqa: CallqaApp) -> None:
        self.callqa = callqa
        self.settings = callqa.settings
        self.client = JudgeClient(self.settings)  # built here: its setup is too slow for the hot path
        self.queue: asyncio.Queue[JudgeRequests] | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.published = 0
        self.dropped = 0
        self.in_flight = 0

    async def on_result(self, result: CallResult, call: CallState) -> None:
        """The result hook: queue the call for the judge when it needs one; never blocks."""
        if result.version != 1 or not result.final or call.judge is not None:
            return
        requests = build_requests(call, self.callqa.live.engine.cohorts, self.callqa.settings.judge_response_format)
        if requests is None:
            return
        self._start()
        assert self.queue is not None
        try:
            self.queue.put_nowait(requests)
        except asyncio.QueueFull:
            self.dropped += 1
            # (the first, then one in so many: a backlog drops thousands)
            if (self.dropped - 1) % DROPS_PER_WARNING == 0:
                logger.warning(
                    "judge queue full (%s calls): call %s keeps its heuristic result (%s calls so far; "
                    "/health counts them)",
                    self.queue.maxsize,
                    call.call_id,
                    self.dropped,
                )

    def counters(self) -> dict[str, int]:
        """For /health: calls waiting for the judge, being judged, answered (published), and left to
        their heuristics because the queue was full."""
        return {
            "queued": 0 if self.queue is None else self.queue.qsize(),
            "in_flight": self.in_flight,
            "published": self.published,
            "dropped": self.dropped,
        }

    def _start(self) -> None:
        """Start the queue and the background tasks in the running loop, on first use."""
        if self.queue is not None:
            return
        self.queue = asyncio.Queue(maxsize=max(1, self.settings.judge_queue_size))
        self.tasks = [
            asyncio.create_task(self._work(), name=f"callqa-judge-{i}")
            for i in range(max(1, self.settings.judge_concurrency))
        ]

    async def _work(self) -> None:
        assert self.queue is not None
        while True:
            requests = await self.queue.get()
            self.in_flight += 1
            try:
                if self._answered(requests.call_id):
                    continue  # the log carried the call's recorded answer after its end: nothing to ask
                event = await self.client.judge(requests)
                await self.callqa.events_topic.send(key=event.call_id.encode(), value=encode_event(event))
                self.published += 1
            except Exception:  # a failed publish loses one judge answer, never the worker
                logger.exception("judge result for call %s not published", requests.call_id)
            finally:
                self.in_flight -= 1
                self.queue.task_done()

    def _answered(self, call_id: str) -> bool:
        call = self.callqa.live.engine.calls.get(call_id)
        return call is not None and call.judge is not None

    async def drain(self) -> None:
        """Wait until every queued call has been judged and published."""
        if self.queue is not None:
            await self.queue.join()

    async def stop(self) -> None:
        """Cancel the judge requests queued and in flight (their calls keep the heuristic results)."""
        waiting, in_flight = (self.queue.qsize() if self.queue is not None else 0), self.in_flight
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.tasks = []
        await self.client.aclose()
        if waiting or in_flight:
            logger.info(
                "judge: stopped with %s requests queued and %s in flight; those calls keep their heuristic results",
                waiting,
                in_flight,
            )


def install_judge(callqa: CallqaApp) -> JudgeRunner:
    runner = JudgeRunner(callqa)
    callqa.result_hooks.append(runner.on_result)
    return runner
