"""`callqa tail` against the embedded broker: a topic that does not exist is named, not waited on for
long, when not following."""

from __future__ import annotations

import time

import pytest

from streams.cli.main import main

pytestmark = pytest.mark.broker


def test_tail_without_follow_names_a_missing_topic_within_its_idle_window(broker, topic_prefix):
    started = time.monotonic()
    with pytest.raises(SystemExit) as stopped:
        main(["tail", "results", "--no-follow", "--broker", broker.url, "--topic-prefix", topic_prefix])
    assert f"topic '{topic_prefix}.results' does not exist" in str(stopped.value.code)
    assert time.monotonic() - started < 20  # (it waited 30 s before; the idle window is 3 s)


def test_tail_json_prints_each_document_as_published_and_names_what_is_not_text_apart(broker, topic_prefix, capsys):
    import asyncio

    from streams.bench.kafka import create_topic, produce

    published = b'{"reason":"bad \\u00e9vent","topic":"x.events","partition":0,"offset":7,"original_b64":""}'
    topic = f"{topic_prefix}.deadletter"
    asyncio.run(create_topic(broker.bootstrap, topic, 1))
    asyncio.run(produce(broker.bootstrap, topic, [(b"k", published), (b"k2", b"\xff\xfe")]))
    assert (
        main(["tail", "deadletter", "--json", "--no-follow", "--broker", broker.url, "--topic-prefix", topic_prefix])
        == 0
    )
    printed = capsys.readouterr()
    # Standard output holds the documents alone (for `callqa compare` and the like); the note, standard error.
    assert printed.out.splitlines() == [published.decode()]
    assert "(undecodable record, key=b'k2', 2 bytes)" in printed.err.splitlines()
