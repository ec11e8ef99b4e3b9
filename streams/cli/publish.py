"""`callqa publish cohorts|rules FILE`: validate cohorts or alert rules and publish each to its compacted topic."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from streams.cli.args import kafka_options, settings_from


def run(args: argparse.Namespace) -> int:
    """Validate a file of cohorts or alert rules and publish each to its compacted topic."""
    import asyncio

    from models.alert_rules import encode_rule, load_rules
    from models.cohorts import encode_cohort
    from scorers.registry import qa_metric_names
    from streams.kafka.clients import ensure_topics, producer
    from streams.topics import TopicNames
    from streams.wiring import cohort_book, load_cohorts

    settings = settings_from(args)
    names = TopicNames(settings.topic_prefix)
    if args.kind == "cohorts":
        book = cohort_book(settings)
        messages = [(d.cohort_id, encode_cohort(d)) for d in load_cohorts(args.file, book)]
        topic = names.cohorts
    else:
        messages = [(rule.name, encode_rule(rule)) for rule in load_rules(args.file, qa_metric_names())]
        topic = names.alert_rules

    async def publish() -> None:
        await ensure_topics(settings, names.only(settings.partitions, topic))
        kafka = producer(settings)
        await kafka.start()
        try:
            for key, value in messages:
                await kafka.send_and_wait(topic, value, key=key.encode())
        finally:
            await kafka.stop()

    asyncio.run(publish())
    print(f"published {len(messages)} {args.kind} to {topic}: {', '.join(k for k, _ in messages)}", file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("publish", help="validate cohorts or alert rules from a file and publish them to their topic")
    kafka_options(p)
    p.add_argument("kind", choices=["cohorts", "rules"])
    p.add_argument("file", help="JSON or TOML")
    p.set_defaults(func=run)
