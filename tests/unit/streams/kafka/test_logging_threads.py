"""Logging is thread-safe: aiokafka logs from its own threads, and the filter that collapses its
repeated complaints (streams/kafka/repeated_logs.py) must never raise inside them."""

from __future__ import annotations

import logging
import threading

from streams.kafka.repeated_logs import REMEMBERED, RepeatsCollapsed


def record(message: str) -> logging.LogRecord:
    return logging.LogRecord("aiokafka", logging.DEBUG, __file__, 1, message, (), None)


class Moment(float):
    """A time that, the first time the filter compares it while forgetting, lets another thread log
    a new message: two threads meeting exactly there, made certain instead of left to chance."""

    meet: threading.Thread | None = None

    def __ge__(self, other: object) -> bool:
        if Moment.meet is not None:
            other_thread, Moment.meet = Moment.meet, None
            other_thread.start()
            other_thread.join(timeout=1.0)  # (with the lock it waits for this thread: let it wait)
        return float(self) >= float(other)  # type: ignore[arg-type]


def test_a_thread_logging_while_the_filter_forgets_old_messages_neither_crashes_it_nor_is_lost():
    now = [0.0]
    repeats = RepeatsCollapsed(every_s=30.0, clock=lambda: Moment(now[0]))
    for n in range(REMEMBERED):
        assert repeats.filter(record(f"message {n}"))
    errors: list[BaseException] = []

    def other_thread_logs() -> None:
        try:
            repeats.filter(record("from the producer's thread"))
        except BaseException as exc:  # what the other thread met is the finding
            errors.append(exc)

    other = Moment.meet = threading.Thread(target=other_thread_logs)
    now[0] = 100.0
    assert repeats.filter(record("a new message, past the remembered limit"))  # forgets the old ones
    other.join()
    assert errors == []
    assert len(repeats._seen) == 2  # the old ones forgotten, both new ones kept
