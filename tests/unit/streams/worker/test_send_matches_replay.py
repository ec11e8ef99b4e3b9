"""What `callqa send` publishes, scored by the live worker, gives exactly what `callqa replay` gives
for the same log, whatever the batch size: results, dead letters and inactivity sweeps, on logs made
to sit on the edges (`logkit.edge_log`). Modelled without Kafka: each
partition's messages go through `LiveScorer` in the order sent, and what the worker records in the
events topic (its sweeps' ends) comes back after them, as it would."""

from __future__ import annotations

import collections
import random

import msgspec
import pytest

from scorers.engine import CallEngine
from streams.replay.log_replay import replay
from streams.worker.live_scorer import LiveScorer
from tests.helpers.logkit import edge_log, sent


def engine(settings: dict) -> CallEngine:
    return CallEngine(**settings)


def replayed(log: list[bytes], partitions: int, settings: dict) -> tuple[dict, collections.Counter]:
    results: dict[str, list[bytes]] = {}
    dead: collections.Counter = collections.Counter()
    replay(
        log,
        engine(settings),
        partitions,
        lambda r: results.setdefault(r.call_id, []).append(msgspec.json.encode(r)),
        on_dead_letter=lambda rejected, index: dead.update([(rejected.event_id, rejected.reason)]),
    )
    return results, dead


def sent_and_scored(
    log: list[bytes], partitions: int, batch_size: int, settings: dict
) -> tuple[dict, collections.Counter]:
    topic = {
        partition: collections.deque(messages) for partition, messages in sent(log, partitions, batch_size).items()
    }
    live = LiveScorer(engine(settings), topic_partitions=partitions)
    results: dict[str, list[bytes]] = {}
    dead: collections.Counter = collections.Counter()
    for partition, queue in topic.items():
        offset = 0
        while queue:
            out = live.handle(queue.popleft(), "callqa.events", partition, offset)
            offset += 1
            for result in out.results:
                results.setdefault(result.call_id, []).append(msgspec.json.encode(result))
            dead.update((letter.event_id, letter.reason) for letter in out.dead_letters)
            for event in out.recorded_events:  # recorded in the events topic, keyed by its call
                queue.append(msgspec.msgpack.encode(event))
    return results, dead


SETTINGS = [
    {"allowed_lateness_ms": 0, "retention_after_end_ms": 0},
    {"allowed_lateness_ms": 600, "retention_after_end_ms": 2_000},
    {"allowed_lateness_ms": 2_000, "retention_after_end_ms": 86_400_000},
]


@pytest.mark.parametrize("settings", SETTINGS, ids=["no-lateness-no-retention", "short", "defaults-retention"])
@pytest.mark.parametrize("partitions", [1, 3])
def test_a_sent_log_scores_live_exactly_as_replay_scores_it_at_every_batch_size(settings, partitions):
    rng = random.Random(f"{partitions}:{settings}")
    swept = 0
    for _ in range(25):
        log = edge_log(rng)
        expected = replayed(log, partitions, settings)
        swept += sum(b"INACTIVITY" in line for lines in expected[0].values() for line in lines)
        for batch_size in (1, 4, 50):
            assert sent_and_scored(log, partitions, batch_size, settings) == expected, (batch_size, log)
    assert swept > 10  # the logs do reach the sweep's edges
