"""The alert engine's messages are acknowledged once their writes are delivered, in the order they came
(streams/alerts/durable_acks.py)."""

from __future__ import annotations

import asyncio

from streams.alerts.durable_acks import DurableAcks


def test_a_message_is_acknowledged_only_once_its_writes_and_those_before_it_are_delivered():
    async def run() -> list[str]:
        loop = asyncio.get_running_loop()
        acked: list[str] = []
        acks = DurableAcks(acked.append)
        first, second = loop.create_future(), loop.create_future()
        acks.add("m1", [first])
        acks.add("m2", [second])
        acks.add("m3", [])
        second.set_result(None)
        await asyncio.sleep(0)
        assert acked == []  # m2's write is in, but m1's is not: committing m2 would pass m1 by
        first.set_result(None)
        await asyncio.sleep(0)
        return acked

    assert asyncio.run(run()) == ["m1", "m2", "m3"]


def test_a_write_that_fails_stops_the_acknowledgements():
    async def run() -> list[str]:
        loop = asyncio.get_running_loop()
        acked: list[str] = []
        acks = DurableAcks(acked.append)
        failed = loop.create_future()
        acks.add("m1", [failed])
        acks.add("m2", [])
        failed.set_exception(OSError("the broker refused it"))
        await asyncio.sleep(0)
        return acked

    assert asyncio.run(run()) == []
