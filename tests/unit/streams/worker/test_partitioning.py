"""streams.partitioning's murmur2 is Kafka's, as aiokafka computes it."""

from __future__ import annotations

import random

from aiokafka.partitioner import murmur2 as aiokafka_murmur2

from streams.partitioning import murmur2, partition_for


def test_murmur2_equals_aiokafka_on_every_length_and_random_bytes() -> None:
    rng = random.Random(11)
    keys = [b"", b"a", b"ab", b"abc", b"abcd", b"call-0001", "caf\u00e9-\u4e2d".encode()]
    keys += [bytes(rng.randrange(256) for _ in range(rng.randrange(80))) for _ in range(5000)]
    keys += [bytes([255] * n) for n in range(12)] + [bytes(n) for n in range(12)]
    for key in keys:
        assert murmur2(key) == aiokafka_murmur2(key), key


def test_partition_for_is_kafkas_default_partitioner() -> None:
    for n in range(2000):
        call_id = f"call-{n:05d}"
        for partitions in (1, 3, 4, 12):
            assert partition_for(call_id, partitions) == (aiokafka_murmur2(call_id.encode()) & 0x7FFFFFFF) % partitions
