"""`callqa record LOG`: the events topic as it stands, written as a log that `callqa replay` scores."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from models.wire import MSGPACK_LOG
from streams.cli.args import kafka_options, settings_from
from streams.files.event_log import log_format_by_name
from streams.files.output_files import STANDARD_OUTPUT


def run(args: argparse.Namespace) -> int:
    from streams.cli.progress import progress_bar
    from streams.files.output_files import AtomicOutput
    from streams.replay.record import record_events_topic
    from streams.topics import TopicNames

    settings = settings_from(args)
    topic = TopicNames(settings.topic_prefix).events
    format_ = log_format_by_name(args.log)
    bar = progress_bar(total=None, desc="record", unit="message")

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    try:
        with AtomicOutput(args.log) as out:  # (complete or not at all)
            recording = record_events_topic(settings, topic, out.file.write, format_, progress)
    finally:
        bar.close()
    print(
        f"recorded {recording.events} events of {recording.messages} messages from {topic} "
        f"({recording.partitions} partitions) -> {args.log}",
        file=sys.stderr,
    )
    left_out = []
    if recording.undecodable:
        left_out.append(f"{recording.undecodable} undecodable or oversized")
    if recording.strays:
        left_out.append(f"{recording.strays} on another partition than their call's")
    if left_out:
        print(f"left out, as the workers dead-lettered them: {' and '.join(left_out)}", file=sys.stderr)
    if recording.unwritable:
        print(
            f"left out, though the workers applied them: {recording.unwritable} events this log's encoding cannot "
            "hold as they are ("
            + (
                "an integer beyond 64 bits: record to a .jsonl log instead"
                if format_ == MSGPACK_LOG
                else "bytes, NaN or infinity: record to a .msgpack log instead"
            )
            + ")",
            file=sys.stderr,
        )
    for partition, first in sorted(recording.truncated.items()):
        print(
            f"partition {partition} begins at offset {first}: the topic's retention deleted what came before, "
            "so calls begun earlier are scored from what is left",
            file=sys.stderr,
        )
    # (Without the cohorts in force, no cohort verdict would match the workers'.)
    log = "LOG" if args.log == STANDARD_OUTPUT else args.log
    print(
        f"score it: callqa replay {log} --partitions {recording.partitions} --cohorts COHORTS.json "
        f"--out RESULTS.jsonl (COHORTS.json: the cohorts in force, `curl WORKER:6066/cohorts > COHORTS.json`; "
        "no --cohorts when there are none; for the alerts too, add --rules RULES.json --alerts-out ALERTS.jsonl, "
        "RULES.json from "
        "`curl WORKER:6066/alerts/rules`)",
        file=sys.stderr,
    )
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("record", help="write the events topic as a log that replay scores as the workers did")
    kafka_options(p, partitions=False)
    p.add_argument(
        "log", help="the log to write: MessagePack when named *.msgpack, else JSON Lines; - writes standard output"
    )
    p.set_defaults(func=run)
