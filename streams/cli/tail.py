"""`callqa tail results|deadletter|alerts`: print a topic's records readably, from the beginning.

It reads outside any consumer group and from the first offset: the embedded broker's "latest offset"
answer is wrong (docs/guides/embedded-broker.md#limits-of-the-embedded-broker), so starting "at the end" cannot be
trusted there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any

from streams.cli.args import kafka_options, settings_from
from streams.cli.render import alert_line, dead_letter_line, result_line
from streams.config import Settings
from streams.kafka.topic_reader import read_topic

RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "results": result_line,
    "deadletter": dead_letter_line,
    "alerts": alert_line,
}


def tail(settings: Settings, topic: str, kind: str, follow: bool, raw: bool) -> int:
    render = RENDERERS[kind]

    def show(key: bytes, value: bytes) -> None:
        try:
            # --json: the document as published, byte for byte (workers write it on one line).
            text = value.decode("utf-8") if raw else render(json.loads(value))
        except ValueError:  # (UnicodeDecodeError and JSONDecodeError alike)
            # With --json, standard output holds documents only (`callqa compare` reads it): the
            # note goes to standard error.
            print(f"(undecodable record, key={key!r}, {len(value)} bytes)", file=sys.stderr if raw else sys.stdout)
            return
        print(text, flush=True)

    try:

        def waiting(note: str) -> None:
            print(note, file=sys.stderr, flush=True)

        return asyncio.run(
            read_topic(settings, topic, None if follow else 3.0, show, on_waiting=waiting if follow else None)
        )
    except BrokenPipeError:  # the reader went away (`| head`): not an error
        sys.stderr.close()
        return 0


def run(args: argparse.Namespace) -> int:
    from streams.cli.tail import tail
    from streams.topics import TopicNames

    settings = settings_from(args)
    names = TopicNames(settings.topic_prefix)
    topic = {"results": names.results, "deadletter": names.deadletter, "alerts": names.alerts}[args.topic]
    try:
        tail(settings, topic, args.topic, follow=not args.no_follow, raw=args.json)
    except KeyboardInterrupt:
        pass
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("tail", help="print results, dead letters or alerts readably")
    kafka_options(p)
    p.add_argument("topic", choices=["results", "deadletter", "alerts"])
    p.add_argument("--no-follow", action="store_true", help="stop when no record came for 3 s")
    p.add_argument("--json", action="store_true", help="print the raw JSON documents")
    p.set_defaults(func=run)
