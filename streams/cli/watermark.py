"""`callqa watermark reset --partition N`: bring back a partition whose event time was moved too far ahead
(docs/guides/hostile-input.md)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from streams.cli.args import kafka_options, settings_from


def run(args: argparse.Namespace) -> int:
    from streams.send.watermark_reset import publish_reset

    try:
        event = asyncio.run(publish_reset(settings_from(args), args.partition, args.to_ms))
    except ValueError as exc:
        print(f"callqa watermark reset: {exc}", file=sys.stderr)
        return 2
    print(f"published a watermark reset of partition {args.partition} to event time {event.ts_ms}", file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("watermark", help="reset a partition's time when it was moved too far ahead")
    kafka_options(p)
    p.add_argument("action", choices=["reset"])
    p.add_argument("--partition", type=int, required=True, help="the events topic's partition")
    p.add_argument("--to-ms", type=int, help="the event time (Unix ms) to set it to; default: this machine's clock")
    p.set_defaults(func=run)
