"""`callqa send LOG`: publish a recorded event log to the events topic, with progress."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from models.wire import MAX_ITEMS_DEAD_LETTERED
from streams.cli.args import (
    LOG_HELP,
    count_records,
    kafka_options,
    log_as_file,
    settings_from,
)
from streams.files.event_log import read_log


def run(args: argparse.Namespace) -> int:
    import asyncio

    from streams.cli.progress import progress_bar
    from streams.kafka.repeated_logs import collapse_aiokafka_repeats
    from streams.send.sender import send_log

    collapse_aiokafka_repeats()
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {args.batch_size}")
    settings = settings_from(args)
    with log_as_file(args.log) as log:
        total = count_records(log)
        bar = progress_bar(total=total, desc="send", unit="record")
        handed_over = 0

        def sent_one(size: int) -> None:
            nonlocal handed_over
            handed_over += 1
            bar.update(1)

        try:
            report = asyncio.run(
                send_log(
                    read_log(log),
                    settings,
                    batch_size=args.batch_size,
                    end_of_input=not args.keep_open,
                    on_record=sent_one,
                )
            )
        except KeyboardInterrupt:
            bar.close()
            from streams.send.acknowledgements import AGAIN

            print(
                f"callqa: stopped after reading {handed_over:,}{f' of {total:,}' if total else ''} records of the "
                f"log, with no word that all it sent arrived; to finish, {AGAIN}",
                file=sys.stderr,
            )
            raise
        bar.close()
    print(
        f"sent {report.records} records ({report.events} events) as {report.messages} messages to "
        f"{settings.topic_prefix}.events",
        file=sys.stderr,
    )
    if report.refused:
        print(
            f"{report.refused} records over CALLQA_MAX_MESSAGE_BYTES ({settings.max_message_bytes}) were not sent: "
            f"dead-lettered to {settings.topic_prefix}.deadletter, as the worker refuses such messages",
            file=sys.stderr,
        )
    if report.rest_refused:
        print(
            f"{report.rest_refused} batch records held more than {MAX_ITEMS_DEAD_LETTERED:,} bad items: the rest of "
            f"each were dead-lettered to {settings.topic_prefix}.deadletter in one letter, as the worker does",
            file=sys.stderr,
        )
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("send", help="publish a .jsonl or .msgpack event log, batching per partition in its order")
    kafka_options(p)
    p.add_argument("log", help=LOG_HELP)
    p.add_argument(
        "--batch-size",
        type=int,
        default=50,
        help="events a message holds at most (the next events of one partition, in the log's order; default 50)",
    )
    p.add_argument("--keep-open", action="store_true", help="do not send the end-of-input watermark")
    p.set_defaults(func=run)
