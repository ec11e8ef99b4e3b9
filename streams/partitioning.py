"""Which partition an event goes to: Kafka's default partitioner on its call_id, as every producer of
the contract uses (a watermark names its own). Shared by replay, which must see the partitions a live
worker sees, and by `callqa send`."""

from __future__ import annotations

from struct import Struct

from models.events import Event, Watermark

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
_WORDS = Struct("<I").iter_unpack  # little-endian 32-bit words, as Kafka's murmur2 reads the key


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2), as an unsigned 32-bit int: the
    same value as aiokafka's `aiokafka.partitioner.murmur2` (tests/test_partitioning.py), kept here so
    that replay and `callqa send` need not import aiokafka (a fifth of a replay's start-up) for it."""
    length = len(data)
    h = 0x9747B28C ^ length
    whole = length & ~3
    if whole:
        for (k,) in _WORDS(data[:whole]):
            k = (k * _M) & _MASK
            k ^= k >> 24
            h = ((h * _M) & _MASK) ^ ((k * _M) & _MASK)
    extra = length & 3
    if extra >= 3:
        h ^= data[whole + 2] << 16
    if extra >= 2:
        h ^= data[whole + 1] << 8
    if extra >= 1:
        h = ((h ^ data[whole]) * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    return h ^ (h >> 15)


def partition_for(call_id: str, partitions: int) -> int:
    """Kafka's default partitioner (murmur2 of the key bytes), as every producer of the contract uses."""
    return (murmur2(call_id.encode()) & 0x7FFFFFFF) % partitions


def partition_of(event: Event, partitions: int) -> int:
    """The partition a live worker saw the event on: a watermark names its own, others go by call_id."""
    if isinstance(event, Watermark) and event.data.partition is not None:
        return event.data.partition % partitions
    return partition_for(event.call_id, partitions)
