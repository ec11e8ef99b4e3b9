"""Logs read from a stream and results written to one: `-`, pipes, process substitutions,
/dev/stdout. A stream can be read only once, while a replay reads its log several times."""

from __future__ import annotations

import os
import subprocess
import sys

import msgspec
import pytest

from models.wire import encode_event
from streams.cli.main import main
from tests.helpers.eventkit import event
from tests.helpers.paths import REPO

ROOT = REPO
SAMPLE_LOG = ROOT / "samples" / "calls.jsonl"


def callqa(*argv: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "streams.cli", *argv],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="module")
def expected(tmp_path_factory) -> bytes:
    out = tmp_path_factory.mktemp("expected") / "results.jsonl"
    assert main(["replay", str(SAMPLE_LOG), "--out", str(out), "--jobs", "1"]) == 0
    return out.read_bytes()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_log_on_standard_input_replays_as_the_file_does_into_standard_output(expected, jobs):
    done = callqa("replay", "-", "--out", "-", "--jobs", jobs, stdin=SAMPLE_LOG.read_bytes())
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
    assert b"replayed 14688 records" in done.stderr  # the summary goes to standard error, never among the results


def test_a_pipe_named_as_a_path_and_a_msgpack_log_on_one_are_read_whole(tmp_path, expected):
    # `callqa replay <(zcat log.gz)`: the log is a pipe under a /dev/fd name.
    done = subprocess.run(
        [
            "bash",
            "-c",
            '"$0" -m streams.cli replay <(cat "$1") --out /dev/stdout --jobs 2 | cat',
            sys.executable,
            str(SAMPLE_LOG),
        ],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
    records = b"".join(encode_event(event("call.started", {"agent_id": "a"}, call_id=f"c{i}")) for i in range(3))
    done = callqa("replay", "/dev/stdin", "--out", "-", "--jobs", "1", stdin=records)
    assert done.returncode == 0, done.stderr
    assert b"replayed 3 records: 3 events" in done.stderr and b"3 results for 3 calls" in done.stderr


def test_standard_output_can_take_one_output_only(tmp_path):
    done = callqa("replay", str(SAMPLE_LOG), "--out", "-", "--deadletter", "-")
    assert done.returncode == 2 and b"--deadletter - is the same file as --out" in done.stderr


def test_replay_refuses_records_above_the_message_size_setting_as_the_worker_does(tmp_path):
    log = tmp_path / "log.jsonl"
    events = [
        event("call.started", {"agent_id": "a"}, call_id="c1"),
        event("turn", {"role": "user", "text": "word " * 300_000}, call_id="c1"),
    ]  # a 1.5 MB record
    log.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in events))
    for limit, dead in (("1048576", b"1 dead-lettered"), ("5000000", b"0 dead-lettered")):
        done = callqa(
            "replay",
            str(log),
            "--out",
            str(tmp_path / "o.jsonl"),
            "--jobs",
            "1",
            env={"CALLQA_MAX_MESSAGE_BYTES": limit},
        )
        assert done.returncode == 0 and dead in done.stderr, (limit, done.stderr)


@pytest.mark.broker
def test_send_publishes_every_record_of_a_log_on_standard_input(broker, topic_prefix):
    import asyncio

    from models.events import Watermark
    from models.wire import decode_message
    from streams.kafka.topic_reader import read_topic
    from streams.topics import TopicNames
    from tests.helpers.livekit import settings_for

    events = [event("call.started", {"agent_id": "a"}, call_id=f"c{i}", event_id=f"e{i}") for i in range(3)]
    done = callqa(
        "send",
        "-",
        "--broker",
        broker.url,
        "--topic-prefix",
        topic_prefix,
        "--batch-size",
        "1",
        stdin=b"".join(msgspec.json.encode(e) + b"\n" for e in events),
    )
    assert done.returncode == 0, done.stderr
    assert b"sent 3 records (3 events)" in done.stderr
    sent: list[str] = []

    def keep(key: bytes, value: bytes) -> None:
        sent.extend(e.event_id for e in decode_message(value).events if not isinstance(e, Watermark))

    asyncio.run(
        read_topic(
            settings_for(broker, topic_prefix),
            TopicNames(topic_prefix).events,
            None,
            keep,
            until=lambda: len(sent) >= 3,
            timeout_s=60,
        )
    )
    assert sorted(sent) == ["e0", "e1", "e2"]
