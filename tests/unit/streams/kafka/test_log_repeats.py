"""A message logged over and over (aiokafka's, while a broker is down) comes through once every so
often, saying how many times it came in between."""

from __future__ import annotations

import logging

from streams.kafka import repeated_logs as log_repeats
from streams.kafka.repeated_logs import RepeatsCollapsed, collapse_aiokafka_repeats


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _record(message: str, *args: object, name: str = "aiokafka.conn", level: int = logging.ERROR) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, message, args, None)


def test_a_repeated_message_passes_once_then_once_a_period_with_the_count_held_back():
    clock = Clock()
    repeats = RepeatsCollapsed(every_s=30, clock=clock)
    passed = []
    for second in range(65):
        for _ in range(10):  # ten a second, as aiokafka's retries
            record = _record("Unable connect to node with id %s", 111)
            if repeats.filter(record):
                passed.append((second, record.getMessage()))
        clock.now += 1
    assert passed == [
        (0, "Unable connect to node with id 111"),
        (30, "Unable connect to node with id 111 (and 299 times more in the last 30 s)"),
        (60, "Unable connect to node with id 111 (and 299 times more in the last 30 s)"),
    ]


def test_another_message_another_logger_or_another_level_is_a_message_of_its_own():
    repeats = RepeatsCollapsed(every_s=30, clock=Clock())
    assert repeats.filter(_record("Unable connect to node with id %s", 111))
    assert repeats.filter(_record("Unable connect to node with id %s", 112))
    assert repeats.filter(_record("Unable connect to node with id %s", 111, name="aiokafka.client"))
    assert repeats.filter(_record("Unable connect to node with id %s", 111, level=logging.WARNING))
    assert not repeats.filter(_record("Unable connect to node with id %s", 111))


def test_a_message_that_stopped_coming_passes_again_as_it_was_with_nothing_held_back():
    clock = Clock()
    repeats = RepeatsCollapsed(every_s=30, clock=clock)
    assert repeats.filter(_record("broker down"))
    clock.now += 45
    record = _record("broker down")
    assert repeats.filter(record) and record.getMessage() == "broker down"


def test_messages_not_seen_for_a_period_are_forgotten_once_many_are_remembered(monkeypatch):
    monkeypatch.setattr(log_repeats, "REMEMBERED", 10)
    clock = Clock()
    repeats = RepeatsCollapsed(every_s=30, clock=clock)
    for node in range(10):
        repeats.filter(_record("node %s", node))
    clock.now += 31
    repeats.filter(_record("node %s", 99))
    assert len(repeats._seen) == 1


def test_every_aiokafka_logger_gets_the_filter_once():
    collapse_aiokafka_repeats()
    collapse_aiokafka_repeats()
    # (aiokafka's client logs as "aiokafka" itself.)
    for name in (
        "aiokafka",
        "aiokafka.conn",
        "aiokafka.consumer.fetcher",
        "aiokafka.producer.sender",
        "aiokafka.consumer.group_coordinator",
        "aiokafka.admin.client",
    ):
        assert len([f for f in logging.getLogger(name).filters if isinstance(f, RepeatsCollapsed)]) == 1, name
    assert not [f for f in logging.getLogger("callqa.broker").filters if isinstance(f, RepeatsCollapsed)]
