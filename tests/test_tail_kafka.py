"""`callqa tail` against the embedded broker: a topic that does not exist is named, not waited on for
long, when not following."""

from __future__ import annotations

import time

import pytest

from streams.cli import main

pytestmark = pytest.mark.broker


def test_tail_without_follow_names_a_missing_topic_within_its_idle_window(broker, topic_prefix):
    started = time.monotonic()
    with pytest.raises(SystemExit) as stopped:
        main(["tail", "results", "--no-follow", "--broker", broker.url, "--topic-prefix", topic_prefix])
    assert f"topic '{topic_prefix}.results' does not exist" in str(stopped.value.code)
    assert time.monotonic() - started < 20  # (it waited 30 s before; the idle window is 3 s)
