"""Every workaround for the embedded broker (Tansu 0.6) and Faust's consumer hot path, in one place.

Two transports, registered with Faust in pyproject.toml. `tansu://` (`EmbeddedBrokerTransport`) has
every fix below. A `kafka://` URL (Apache Kafka, or any other cluster) is given to Faust as
`callqa-kafka://` (`faust_broker_url`), whose transport (`DirectHandoffTransport`) has the fixes to
Faust's hot path, which hold for any broker (3. to 5.), and none of the embedded broker's (1. and
2.). `aiokafka://` keeps Faust's stock transport, with only the fixes installed through settings (6.
and 7.). Both of callqa's transports also stop promptly when their brokers are gone
(streams/kafka/prompt_stop.py).

The embedded broker's:

1. **ListOffsets "latest" is wrong on this broker**: it answers the first offset of the last record
   batch + 1, so Faust's table recovery (which stops at `highwaters() - 1`) misses the last changelog
   records and a restarted worker loses state. Fetch responses carry the true high watermark, so
   `_highwaters` takes the larger of the ListOffsets answer and the high watermark of a one-byte Fetch
   at that offset. It only runs at recovery. If the probe fails we log a warning and keep the
   ListOffsets answer: never a silent fallback.
2. **Fetch wait**: Faust's worker consumer asks for `fetch_max_wait_ms=1500`, and this broker holds a
   fetch long after data arrives (a message produced 50 ms into a 500 ms fetch is delivered after
   ~200 ms; after ~5 ms with a 10 ms wait). The worker's consumer waits `FETCH_MAX_WAIT_MS` instead:
   results follow their events within milliseconds, at the price of a few idle fetches a second.

Faust's hot path, for any broker:

3. **Per-message hand-off**: Faust's `_drain_messages` wraps every message's callback in
   `wait_first(callback, suspend_flow.wait())` — several tasks and an `asyncio.wait` per message,
   about half of a worker's time. While flow is not suspended we await the callback directly, and keep
   the original path for when it is (during a rebalance). `getmany` reads a partition's high
   watermark once per fetched batch rather than once per record.
4. **Direct delivery**: even with 3., a message that goes through Faust's conductor and an agent's
   stream (key/value schema decode, an Event, the channel queue, the stream iterator, sensors) costs
   ~150 µs, several times what scoring a single event costs. A topic registered with
   `deliver_directly(app, topic, handler)` has its messages handed from the consumer loop straight
   to `handler(message)`; the handler acknowledges the messages itself (5.). While flow is suspended
   (a rebalance) its messages are not delivered: the seek that ends every rebalance delivers them
   again from the committed offset, as Faust's own path does. A table written from such a handler
   needs the stream's current event to find the partition: `current_event_for(app, message)`
   provides one for the duration of the write. Faust's own bookkeeping of messages in flight (the
   conductor's tracking, which a graceful stop waits on, and the monitor's per-message sensors) does
   not see them: the handler acknowledges each message once what it changed is safe
   (streams/worker/message_flow.py), and what is unacknowledged at a stop or a crash is delivered again
   from the committed offset.
5. **Acknowledging in bulk**: `Message.ack` → `ConsumerMessage.on_final_ack` → `Consumer.ack` takes
   Faust's re-entrant `ack_lock` three times and wakes the commit waiter for every message (1.07 µs
   a message). A journal segment acknowledges every message it covers at once:
   `DirectHandoffConsumer.ack_all` does the same bookkeeping for the lot under one hold of the lock
   and wakes the waiter once (0.31 µs a message).

And two installed through Faust's settings (`Monitor`, `ConsumerScheduler`), so on every transport,
Faust's stock one included:

6. **A lean monitor**: Faust's default Monitor sensor does bookkeeping for every message and every
   stream event (timings, per-topic and per-stream counters, `str(stream)` lookups), about a fifth of
   a worker's time per message (py-spy). `LeanMonitor` keeps the counters and skips the
   per-message timings; the time a partition's records were last taken up, which Faust's check for
   stuck streams reads, it sets once per fetched batch.
7. **Record order**: Faust's default scheduler hands out a fetch's records round-robin over topics,
   then over partitions, through a generator per topic and one per partition (0.29 µs a record).
   `InterleavedScheduler` deals the same fetch round-robin over its partitions, whatever their
   topic, from one generator (0.07 µs); on one topic the order is Faust's. Each partition's order is
   kept, which is all that Kafka orders.

All of them replace or stand in for methods of Faust or aiokafka classes, so
`tests/test_broker_fixes.py` pins the source of what they replace: an upgrade of Faust or aiokafka
that changes it fails that test instead of failing silently.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from time import monotonic
from typing import (
    Any,
    cast,
)
from weakref import WeakKeyDictionary

from aiokafka.protocol.fetch import FetchRequest
from faust import streams as faust_streams
from faust.sensors import Monitor
from faust.transport.consumer import CONSUMER_FETCHING
from faust.transport.drivers import aiokafka as faust_aiokafka
from faust.types import TP, Message
from faust.types.transports import SchedulingStrategyT
from faust.types.tuples import ack_lock
from faust.utils.urls import urllist
from mode import Service, ServiceT
from mode.utils.futures import notify

from streams.kafka.prompt_stop import (
    PromptStopConsumer,
    PromptStopConsumerThread,
    PromptStopProducer,
)

logger = logging.getLogger("callqa.broker")

READ_UNCOMMITTED = 0
# Tansu answers a Fetch with max_wait_time 0 slowly or not at all; 1 ms is enough.
PROBE_MAX_WAIT_MS = 1


async def probe_high_watermarks(client: Any, offsets: Mapping[TP, int]) -> dict[TP, int]:
    """High watermark of each partition, read from a one-byte Fetch at the given offset."""
    return {tp: high for tp, (high, _) in (await probe_ends(client, offsets)).items()}


async def probe_ends(client: Any, offsets: Mapping[TP, int]) -> dict[TP, tuple[int, int]]:
    """(high watermark, last stable offset) of each partition, read from a one-byte Fetch at the given
    offset (the stable offset -1 where the response has none: Fetch before version 4)."""
    by_node: dict[int, dict[str, list[tuple[int, int, int]]]] = defaultdict(lambda: defaultdict(list))
    for tp, offset in offsets.items():
        node = client.cluster.leader_for_partition(tp)
        if node is None or node < 0:
            raise RuntimeError(f"no leader known for {tp}")
        by_node[node][tp.topic].append((tp.partition, max(int(offset), 0), 1))
    found: dict[TP, tuple[int, int]] = {}
    for node, topics in by_node.items():
        request = FetchRequest(PROBE_MAX_WAIT_MS, 1, 1, READ_UNCOMMITTED, list(topics.items()))
        response = await client.send(node, request)
        for topic, partitions in response.topics:
            for partition in partitions:
                number, error_code, high_watermark = partition[0], partition[1], partition[2]
                if error_code != 0:
                    raise RuntimeError(f"fetch probe of {topic}[{number}] failed with error code {error_code}")
                stable = int(partition[3]) if len(partition) > 4 else -1
                found[TP(topic, number)] = (int(high_watermark), stable)
    return found


async def verified_end_offsets(consumer: Any, partitions: Iterable[Any]) -> dict[Any, int]:
    """Where each partition ends now for a started aiokafka consumer that reads committed records: the
    broker's "latest offset" answer checked against a fetch's (the embedded broker answers the first
    offset of the last batch + 1, which would leave the rest of that batch unread), and never past an
    open transaction, which such a consumer cannot read beyond until it ends."""
    reported = await consumer.end_offsets(list(partitions))
    probed = await probe_ends(consumer._client, reported)
    ends = {}
    for tp, end in reported.items():
        high, stable = probed.get(tp, (end, -1))
        ends[tp] = max(end, high) if stable < 0 else stable
    return ends


# How long the worker's fetches may wait on this broker (see 2. above); Faust asks for 1500 ms.
FETCH_MAX_WAIT_MS = 10


class VerifiedHighwaterConsumerThread(PromptStopConsumerThread):
    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # Read when the consumer starts and builds its fetcher (aiokafka 0.14, pinned).
        consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS
        return consumer

    async def _highwaters(self, partitions: list[TP]) -> Mapping[TP, int]:
        reported = dict(await super()._highwaters(partitions))
        if not reported or self.consumer.in_transaction:
            return reported
        try:
            probed = await probe_high_watermarks(self._ensure_consumer()._client, reported)
        except Exception as exc:  # any failure: keep the broker's answer, loudly
            logger.warning("high-watermark probe failed (%r); table recovery may miss the last records", exc)
            return reported
        corrected = {tp: max(end, probed.get(tp, end)) for tp, end in reported.items()}
        for tp, end in corrected.items():
            if end != reported[tp]:
                logger.info("ListOffsets reported %s for %s, fetch says %s: using %s", reported[tp], tp, end, end)
        return corrected


class DirectHandoffConsumer(PromptStopConsumer):
    """Faust's aiokafka consumer with the hot-path fixes (3., 4. and 5.) and a prompt stop
    (streams/kafka/prompt_stop.py): for any broker."""

    def ack_all(self, messages: Iterable[Message]) -> None:
        """`message.ack(self)` for each message, under one hold of Faust's ack lock (see 5. above):
        Message.ack's reference count, then ConsumerMessage.on_final_ack's Consumer.ack, inline."""
        acks_enabled_for = self.app.topics.acks_enabled_for
        committed_offsets, acked_indexes, acked = self._committed_offset, self._acked_index, self._acked
        counted = 0
        with ack_lock:
            try:
                for message in messages:
                    if message.acked:
                        continue
                    message.refcount = max(message.refcount - 1, 0)
                    if message.refcount:
                        continue  # still held by a stream
                    message.acked = True
                    if not acks_enabled_for(message.topic):
                        continue
                    tp, offset = message.tp, message.offset
                    committed = committed_offsets[tp]
                    if committed is None or offset >= committed:
                        acked_index = acked_indexes[tp]
                        if offset not in acked_index:
                            self._unacked_messages.discard(message)
                            acked_index.add(offset)
                            acked[tp].append(offset)
                            counted += 1
            finally:
                self._n_acked += counted
                notify(self._waiting_for_ack)

    async def getmany(self, timeout: float) -> AsyncIterator[tuple[TP, Any]]:  # pragma: no cover - end to end
        # Same as faust.transport.consumer.Consumer.getmany, but a partition's high watermark is read
        # (and reported to the monitor) once per fetched batch instead of once per record: it comes
        # from the fetch response, so it cannot change within the batch (see 3. above).
        records, active_partitions = await self._wait_next_records(timeout)
        generation_id = self.app.consumer_generation_id
        if records is None or self.should_stop:
            return

        records_it = self.scheduler.iterate(records)
        to_message = self._to_message  # localize
        tracked: set[TP] = set()
        if self.flow_active:
            for tp, record in records_it:
                if not self.flow_active:
                    break
                new_generation_id = self.app.consumer_generation_id
                if new_generation_id != generation_id:
                    self.log.dev(
                        "Generation id changed from %r to %r. Cancelling getmany.", generation_id, new_generation_id
                    )
                    break
                if active_partitions is None or tp in active_partitions or tp in self._buffered_partitions:
                    if tp not in tracked:
                        tracked.add(tp)
                        self.app.monitor.track_tp_end_offset(tp, self.highwater(tp))
                    yield tp, to_message(tp, record)
        else:
            self.log.dev("getmany called while flow not active. Seek back to committed offsets.")
            try:
                await self.perform_seek()
            except Exception as ex:
                self.log.warning(f"exception performing seek when flow not active {ex}")

    async def _drain_messages(self, fetcher: ServiceT) -> None:  # pragma: no cover - exercised end to end
        # Same loop as faust.transport.consumer.Consumer._drain_messages, but the callback is awaited
        # directly while flow is not suspended, and topics delivered directly skip it (see the module
        # docstring, 3. and 4.).
        direct = _DIRECT_HANDLERS.get(self.app, {})
        callback = self.callback
        getmany = self.getmany
        consumer_should_stop = cast(Service, self)._stopped.is_set
        fetcher_should_stop = cast(Service, fetcher)._stopped.is_set
        get_read_offset = self._read_offset.__getitem__
        set_read_offset = self._read_offset.__setitem__
        set_flag = self.diag.set_flag
        unset_flag = self.diag.unset_flag
        commit_every = self._commit_every
        acks_enabled_for = self.app.topics.acks_enabled_for
        flow_suspended = self.suspend_flow.is_set
        yield_every = 100
        num_since_yield = 0
        try:
            while not (consumer_should_stop() or fetcher_should_stop()):
                set_flag(CONSUMER_FETCHING)
                ait = cast("AsyncIterator[tuple[TP, Message]]", getmany(timeout=1.0))
                await self.sleep(0)
                if not self.should_stop:
                    async for tp, message in ait:
                        num_since_yield += 1
                        if num_since_yield > yield_every:
                            await asyncio.sleep(0)
                            num_since_yield = 0
                        offset = message.offset
                        r_offset = get_read_offset(tp)
                        if r_offset is None or offset >= r_offset:
                            gap = offset - (r_offset or 0)
                            if gap > 1 and r_offset and acks_enabled_for(message.topic):
                                await self._add_gap(tp, r_offset + 1, offset)
                            if commit_every is not None and self._n_acked >= commit_every:
                                self._n_acked = 0
                                await self.commit()
                            handler = direct.get(tp.topic)
                            if handler is not None:
                                if not flow_suspended():
                                    await handler(message)
                            elif flow_suspended():
                                await self.wait_first(callback(message), self.suspend_flow.wait())
                            else:
                                await callback(message)
                            set_read_offset(tp, offset)
                    unset_flag(CONSUMER_FETCHING)
        except self.consumer_stopped_errors:
            if self.transport.app.should_stop:
                self.log.info("Broker stopped consumer, shutting down...")
                return
            raise
        except asyncio.CancelledError:
            if self.transport.app.should_stop:
                self.log.info("Consumer shutting down for user cancel.")
                return
            raise
        except Exception as exc:
            self.log.exception("Drain messages raised: %r", exc)
            raise
        finally:
            unset_flag(CONSUMER_FETCHING)


DirectHandler = Callable[[Message], Awaitable[Any]]
_DIRECT_HANDLERS: WeakKeyDictionary[Any, dict[str, DirectHandler]] = WeakKeyDictionary()


def deliver_directly(app: Any, topic: str, handler: DirectHandler) -> None:
    """Hand `topic`'s messages to `handler` straight from the consumer loop (see 4. above). The
    `tansu://` and `callqa-kafka://` transports do; on Faust's own the topic's agent receives them
    through its stream, so the agent must handle them the same way."""
    _DIRECT_HANDLERS.setdefault(app, {})[topic] = handler


@contextmanager
def current_event_for(app: Any, message: Message) -> Iterator[None]:
    """Make `message` the stream's current event while a table is written for it (see 4. above);
    nothing to do inside an agent's stream, which has one."""
    if faust_streams.current_event() is not None:
        yield
        return
    event = app.create_event(message.key, message.value, message.headers, message)
    token = faust_streams._current_event.set(weakref.ref(event))
    try:
        yield
    finally:
        faust_streams._current_event.reset(token)


class EmbeddedBrokerConsumer(DirectHandoffConsumer):
    """The hot-path fixes, and the embedded broker's (1. and 2.) in the consumer's thread."""

    def _new_consumer_thread(self) -> VerifiedHighwaterConsumerThread:
        return VerifiedHighwaterConsumerThread(self, loop=self.loop, beacon=self.beacon)


class DirectHandoffTransport(faust_aiokafka.Transport):
    """The aiokafka transport with the hot-path fixes; URL scheme `callqa-kafka://` (a worker's
    `kafka://`, see `faust_broker_url`)."""

    Consumer = DirectHandoffConsumer
    Producer = PromptStopProducer


class EmbeddedBrokerTransport(DirectHandoffTransport):
    """The aiokafka transport with every fix above; URL scheme `tansu://`."""

    Consumer = EmbeddedBrokerConsumer


DIRECT_HANDOFF_SCHEME = "callqa-kafka"
_KAFKA_SCHEME = "kafka"


def faust_broker_url(url: str) -> str:
    """The broker URL as the worker hands it to Faust: a `kafka` one (Faust's default scheme, so a
    host list without any scheme too, read as Faust reads it) goes to the hot-path transport. The
    scheme is callqa's own, not a replacement for Faust's `kafka` (which other Faust apps in the same
    environment, the benchmark's naive agent among them, keep)."""
    if not url.strip():
        return url
    urls = urllist(url.strip(), default_scheme=_KAFKA_SCHEME)
    if urls[0].scheme != _KAFKA_SCHEME:  # Faust's transport is the first URL's
        return url
    return ";".join(str(u.with_scheme(DIRECT_HANDOFF_SCHEME)) if u.scheme == _KAFKA_SCHEME else str(u) for u in urls)


class InterleavedScheduler(SchedulingStrategyT):
    """A fetch's records round-robin over its partitions, from one generator (see 7. above)."""

    def iterate(self, records: Mapping[TP, list[Any]]) -> Iterator[tuple[TP, Any]]:
        batches = [(tp, batch) for tp, batch in records.items() if batch]
        if len(batches) == 1:  # the common case on a quiet or lightly loaded topic
            tp, batch = batches[0]
            return ((tp, record) for record in batch)
        return self._interleaved(batches)

    @staticmethod
    def _interleaved(batches: list[tuple[TP, list[Any]]]) -> Iterator[tuple[TP, Any]]:
        # (No batches at all: a fetch that came back empty, its wait ran out.)
        for index in range(max((len(batch) for _, batch in batches), default=0)):
            for tp, batch in batches:
                if index < len(batch):
                    yield tp, batch[index]


class LeanMonitor(Monitor):
    """Faust's Monitor without its per-message and per-event bookkeeping (see 6. above). Counts stay;
    what goes: timings per message and per event, per-topic/per-stream counters, send timings."""

    def on_message_in(self, tp: TP, offset: int, message: Any) -> None:
        self.messages_received_total += 1
        self.tp_read_offsets[tp] = offset

    def on_stream_event_in(self, tp: TP, offset: int, stream: Any, event: Any) -> None:
        self.events_total += 1
        return None

    def track_tp_end_offset(self, tp: TP, offset: int) -> None:
        # Called as a fetched batch's first record of `tp` is handed out (DirectHandoffConsumer.getmany):
        # it also stands for the time a stream last took an event of `tp`, which Faust's own sensor set
        # per stream event and its consumer's slow-processing check reads. Unset (direct delivery
        # bypasses the streams, and this monitor their sensor), every partition with a lag was
        # reported at ERROR as "not started processing" five minutes into a worker's life. A handler
        # that hangs still holds the next fetch back, so a stuck partition is still reported.
        self.tp_end_offsets[tp] = offset
        self.stream_inbound_time[tp] = monotonic()

    def on_stream_event_out(self, tp: TP, offset: int, stream: Any, event: Any, state: Any = None) -> None:
        pass

    def on_message_out(self, tp: TP, offset: int, message: Any) -> None:
        pass

    def on_table_get(self, table: Any, key: Any) -> None:
        pass

    def on_table_set(self, table: Any, key: Any, value: Any) -> None:
        pass

    def on_send_initiated(self, producer: Any, topic: str, message: Any, keysize: int, valsize: int) -> None:
        return None

    def on_send_completed(self, producer: Any, state: Any, metadata: Any) -> None:
        pass
