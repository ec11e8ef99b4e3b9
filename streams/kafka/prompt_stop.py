"""A worker stops within seconds of SIGTERM, its brokers gone or not.

A supervisor stops a worker with SIGTERM and kills it after a grace period (30 s on Kubernetes).
With every broker gone, Faust's stop waited on the broker at four places, each for a minute or for
ever; the worker was then killed instead of stopping (no harm to what it scored: the journal is
crash-safe, and what was not committed is delivered again, but the stop was not clean and took the
whole grace period). Each place gets `STOP_STEP_TIMEOUT_S` and then goes on without the broker:

1. **The consumer's last commit** (`PromptStopConsumer.on_stop`): Faust's consumer commits what was
   acknowledged since its last commit, after flushing the producer; aiokafka looks for the group's
   coordinator until the consumer is closed, which comes after. A commit cut short may not reach the
   broker: what was read since the previous commit then comes again, and the journal skips what it
   applied. (Cut short, it never commits without its flush: the flush comes first.)
2. **The consumer's thread** (`PromptStopConsumerThread`): it stops by stopping aiokafka's consumer.
   With the broker gone, a fetch is sleeping out its retry backoff; the fetcher's close cancels and
   awaits it, the `CancelledError` escapes `AIOKafkaConsumer.stop` (as in aiokafka#647) and ends the
   thread's loop before it reports itself stopped, and the worker waited for mode's 60-second child
   timeout (64 s from SIGTERM to exit). When aiokafka's stop fails or runs out of time, the thread
   closes what is left itself (`close_consumer_without_broker`): no group to leave, no offset to
   commit.
3. **The application's flush** (`PromptStopApp._producer_flush`) and 4. **the producer's stop**
   (`PromptStopProducer.on_stop`): aiokafka retries a send to a broker that does not answer until
   its request timeout (Faust sets 20 minutes). What is dropped there (results, dead letters, journal
   segments) was made by messages that were not committed (the commit flushes first, and is
   abandoned with it), so they are delivered again and make it again.

The commit's own flush stays unbounded: a commit must never go on without what it covers.

Each replaces or wraps a method of Faust or aiokafka; `tests/test_prompt_stop.py` pins their
source.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import faust
from aiokafka.consumer.group_coordinator import GroupCoordinator
from faust.transport.drivers import aiokafka as faust_aiokafka

from streams.kafka.clients import (
    READ_COMMITTED,
    close_producer_without_broker,
    ended_within,
)

logger = logging.getLogger("callqa.broker")

# Long enough for a reachable broker to answer (a LeaveGroup, a commit, a flush take milliseconds),
# short enough that the four steps together (and Faust's own two seconds of gathering its tasks) stay
# well within a supervisor's grace period. A step cut short while the broker still answers only
# costs work done again: what it dropped was not committed.
STOP_STEP_TIMEOUT_S = 3.0


async def within_stop_timeout(step: Any, what: str, consequence: str) -> bool:
    """Run `step`; False (and a warning) when it did not end within `STOP_STEP_TIMEOUT_S` and was
    cancelled."""
    ended = await ended_within(step, STOP_STEP_TIMEOUT_S)
    if ended is None:
        logger.warning("%s did not end within %g s (no broker answers?): %s", what, STOP_STEP_TIMEOUT_S, consequence)
        return False
    ended.result()
    return True


class PromptStopApp(faust.App):
    """Faust's application whose stop does not wait on a producer that cannot deliver (3. above)."""

    async def _producer_flush(self, logger: Any) -> None:
        await within_stop_timeout(
            super()._producer_flush(logger),
            "the producer's flush at stop",
            "what it holds is made again when its messages are delivered again",
        )


# Table writes (journal segments, the alert engine's keys) that may wait in the producer's buffer
# before the stream that finds it fuller must stop until that many went out: Faust's 100 was passed by
# every burst of a worker (40 calls ending: the alert engine writes some six keys a result), each time
# a WARNING and a 12-25 ms stop. Not far more: a stream stopped for a full buffer waits until as many
# have been sent, and a stop flushes the buffer within its few seconds.
PRODUCER_BUFFER_MAX_MESSAGES = 1_000


class PromptStopProducer(faust_aiokafka.Producer):
    """Faust's aiokafka producer whose stop does not wait on a broker that is gone (4. above), with a
    buffer that holds a burst of sends."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.buffer.max_messages = PRODUCER_BUFFER_MAX_MESSAGES

    async def on_stop(self) -> None:
        producer = self._producer
        stopped = await within_stop_timeout(
            super().on_stop(), "the producer's stop", "dropping what it holds; its messages were not committed"
        )
        if not stopped and producer is not None:
            await close_producer_without_broker(producer)


class PromptStopConsumer(faust_aiokafka.Consumer):
    """Faust's aiokafka consumer whose last commit and thread do not wait on a broker that is gone
    (1. and 2. above)."""

    def _new_consumer_thread(self) -> faust_aiokafka.AIOKafkaConsumerThread:
        return PromptStopConsumerThread(self, loop=self.loop, beacon=self.beacon)

    async def on_stop(self) -> None:
        await within_stop_timeout(
            super().on_stop(),
            "the consumer's last commit",
            "what was read since the previous one comes again (the journal skips it)",
        )


class PromptStopConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    """Faust's consumer thread whose stop does not wait on a broker that is gone (2. above)."""

    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # Events of a transactional producer count once committed, as `callqa record` and every reader
        # of callqa's own read them: Faust reads uncommitted unless it runs transactions itself, and
        # would score an aborted transaction's events. (Read when the consumer starts and builds its
        # fetcher, aiokafka 0.14, pinned; a producer without transactions is read as before.)
        consumer._isolation_level = READ_COMMITTED
        return consumer

    async def on_thread_stop(self) -> None:
        # Faust's own first step: the thread's method queue (QueueServiceThread.on_thread_stop).
        await super(faust_aiokafka.AIOKafkaConsumerThread, self).on_thread_stop()
        consumer = self._consumer
        if consumer is None:
            return
        stopped = await ended_within(consumer.stop(), STOP_STEP_TIMEOUT_S)
        if stopped is None:
            failure = f"did not stop within {STOP_STEP_TIMEOUT_S:g} s"
        elif stopped.cancelled():
            failure = "stopped with CancelledError"
        elif stopped.exception() is not None:
            failure = f"stopped with {stopped.exception()!r}"
        else:
            return
        logger.warning("the Kafka consumer %s (no broker answers?): closing its connections without it", failure)
        await close_consumer_without_broker(consumer)


async def close_consumer_without_broker(consumer: Any) -> None:
    """What `AIOKafkaConsumer.stop` does besides talking to the broker, for a stop that failed or was
    cut short: the group coordinator's background tasks, the fetcher's tasks (their cancellation
    swallowed, unlike `Fetcher.close`), its waiters, and the connections."""
    coordinator = consumer._coordinator
    tasks = []
    if isinstance(coordinator, GroupCoordinator):  # (a consumer with no group has nothing running)
        tasks.append(coordinator._coordination_task)
        await coordinator._stop_heartbeat_task()
        await coordinator._stop_commit_offsets_refresh_task()
    fetcher = consumer._fetcher
    if fetcher is not None:
        tasks += [fetcher._fetch_task, *fetcher._pending_tasks]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    if fetcher is not None:
        for waiter in list(fetcher._fetch_waiters):
            fetcher._notify(waiter)
    await consumer._client.close()
