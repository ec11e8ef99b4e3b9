"""Which partition an event goes to: Kafka's default partitioner on its call_id, as every producer of
the contract uses (a watermark names its own). Shared by replay, which must see the partitions a live
worker sees, and by `callqa send`."""

from __future__ import annotations

from aiokafka.partitioner import murmur2

from models.events import Event, Watermark


def partition_for(call_id: str, partitions: int) -> int:
    """Kafka's default partitioner (murmur2 of the key bytes), as every producer of the contract uses."""
    return (murmur2(call_id.encode()) & 0x7FFFFFFF) % partitions


def partition_of(event: Event, partitions: int) -> int:
    """The partition a live worker saw the event on: a watermark names its own, others go by call_id."""
    if isinstance(event, Watermark) and event.data.partition is not None:
        return event.data.partition % partitions
    return partition_for(event.call_id, partitions)
