"""`callqa send` reports a log sent only when the broker acknowledged all of it: a refused message or
a broker that acknowledges nothing ends it with an error saying what to do, within a bounded time."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import tempfile
import time

import pytest

from streams.bench.workload import Workload
from streams.config import Settings
from streams.files.event_log import read_log
from streams.kafka.embedded_broker import EmbeddedBroker
from streams.send.acknowledgements import Acknowledgements, NotAcknowledged
from streams.send.sender import send_log


async def _delivered(value: object = None) -> asyncio.Future:
    future = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future


def test_deliveries_all_acknowledged_are_counted():
    async def run() -> int:
        acknowledgements = Acknowledgements(stall_s=1)
        for _ in range(3000):  # (past a settling every 1,024)
            acknowledgements.add(await _delivered())
        await acknowledgements.wait_all()
        return acknowledgements.confirmed

    assert asyncio.run(run()) == 3000


def test_a_stalled_send_counts_what_was_acknowledged_before_the_broker_stopped():
    async def run() -> str:
        acknowledgements = Acknowledgements(stall_s=1)
        for _ in range(5):
            acknowledgements.add(await _delivered())
        for _ in range(2):
            acknowledgements.add(asyncio.get_running_loop().create_future())  # never acknowledged
        return str(acknowledgements.stalled())

    assert "5 messages confirmed, 2 not" in asyncio.run(run())


def test_a_refused_message_ends_the_send_saying_what_was_confirmed_and_what_to_do():
    async def run() -> None:
        acknowledgements = Acknowledgements(stall_s=1)
        acknowledgements.add(await _delivered())
        refused = asyncio.get_running_loop().create_future()
        refused.set_exception(RuntimeError("record too large"))
        acknowledgements.add(refused)
        await acknowledgements.wait_all()

    with pytest.raises(NotAcknowledged) as raised:
        asyncio.run(run())
    message = str(raised.value)
    assert "did not take 1 message (the first: RuntimeError('record too large'))" in message
    assert "1 message confirmed, 1 not" in message and "send the log again" in message


def test_a_broker_that_acknowledges_nothing_ends_the_wait_after_the_stall_time():
    async def run() -> float:
        acknowledgements = Acknowledgements(stall_s=0.2)
        acknowledgements.add(await _delivered())
        acknowledgements.add(asyncio.get_running_loop().create_future())  # never acknowledged
        started = time.monotonic()
        with pytest.raises(NotAcknowledged, match=r"acknowledged nothing for 0\.2 s; 1 message confirmed, 1 not"):
            await acknowledgements.wait_all()
        return time.monotonic() - started

    assert 0.15 < asyncio.run(run()) < 5


def test_the_stall_time_counts_from_the_first_send_waiting_not_from_an_idle_start():
    async def run() -> int:
        acknowledgements = Acknowledgements(stall_s=0.1)
        await asyncio.sleep(0.3)  # (reading a slow input before the first record)
        pending = asyncio.get_running_loop().create_future()
        acknowledgements.add(pending)
        asyncio.get_running_loop().call_later(0.02, pending.set_result, None)
        await acknowledgements.wait_all()
        return acknowledgements.confirmed

    assert asyncio.run(run()) == 1


def send_while_the_broker_fails(topic_prefix: str, fail, match: str) -> tuple[int, float]:
    """Send a log of 300 calls to a broker of its own, calling `fail(broker)` after 10,000 records;
    the send must fail with NotAcknowledged matching `match`. Returns the records read and the time
    the send took."""
    own = EmbeddedBroker().start(log_path=tempfile.mkdtemp(prefix="callqa-broker-") + "/broker.log")
    log = os.path.join(tempfile.mkdtemp(prefix="callqa-log-"), "calls.msgpack")
    with open(log, "wb") as handle:
        handle.write(b"".join(Workload(calls=300, turns=13).records()))
    settings = Settings(broker=own.url, topic_prefix=topic_prefix, app_id=topic_prefix)
    read = [0]

    def fail_midway(size: int) -> None:
        read[0] += 1
        if read[0] == 10_000:
            fail(own)

    started = time.monotonic()
    try:
        with pytest.raises(NotAcknowledged, match=match):
            asyncio.run(send_log(read_log(log), settings, on_record=fail_midway, stall_s=3))
        return read[0], time.monotonic() - started
    finally:
        if own.process is not None and own.process.poll() is None:
            os.kill(own.process.pid, signal.SIGCONT)  # (a stopped broker must run to stop)
        own.stop()


@pytest.mark.broker
def test_a_send_whose_broker_dies_midway_fails_within_its_stall_time(topic_prefix):
    # Before, it went on for ever (still running three minutes after the broker was killed), and
    # its futures' failures were never looked at.
    read, elapsed = send_while_the_broker_fails(
        topic_prefix, lambda broker: os.killpg(broker.process.pid, signal.SIGKILL), "send the log again"
    )
    assert read >= 10_000 and elapsed < 60


@pytest.mark.broker
def test_a_send_whose_broker_stops_answering_fails_once_within_its_stall_time_and_quietly(topic_prefix, caplog):
    # A broker that is up but answers nothing (here: stopped): each of the producer's waits (for room
    # in its buffer, for metadata, for its stop) took the whole stall time in turn (91 s for 30 s),
    # and the deliveries given up on were printed as errors never retrieved.
    import gc

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        _, elapsed = send_while_the_broker_fails(
            topic_prefix,
            lambda broker: os.kill(broker.process.pid, signal.SIGSTOP),
            "the broker acknowledged nothing for 3 s",
        )
        gc.collect()
    assert elapsed < 4 * 3  # the stall time once (and the start), the producer closed without a flush
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


def test_a_cancellation_that_comes_as_a_send_completes_is_not_lost():
    """Ctrl-C: `asyncio.run` cancels the send once. With `asyncio.wait_for` (Python 3.11), a cancellation
    arriving as the awaited send completed was dropped and the rest of the log sent."""
    from streams.send.sender import within

    async def race() -> str:
        acknowledged = asyncio.get_running_loop().create_future()
        sending = asyncio.ensure_future(within(acknowledged, 30))
        await asyncio.sleep(0)  # (the send is waiting)
        acknowledged.set_result("delivered")
        sending.cancel()  # (the Ctrl-C, in the same turn of the loop)
        try:
            return await sending
        except asyncio.CancelledError:
            return "cancelled"

    assert asyncio.run(race()) == "cancelled"

    async def slow() -> None:
        await within(asyncio.sleep(5), 0.05)

    with pytest.raises(TimeoutError):
        asyncio.run(slow())
