"""The `callqa` command line: the parser of every command, and how a command's failure is told.

Each command lives in a module of its own beside this one (`send.py`, `replay.py`, …), which adds its
parser (`add_parser`) and runs it; what several share is in `args.py`."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from streams.cli import bench, broker, compare, demo, publish, record, replay, runs, send, tail, watermark, worker
from streams.files.output_files import STOP_SIGNALS, Terminated
from streams.kafka.embedded_broker import BrokerUnavailable

COMMANDS = (broker, worker, send, replay, record, tail, runs, compare, publish, watermark, demo, bench)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="callqa", description="Streaming quality scorer for voice-agent calls.")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def _broker_hint(exc: Exception) -> str:
    """What to do about a broker that could not be reached at all."""
    from aiokafka.errors import KafkaConnectionError

    if not isinstance(exc, KafkaConnectionError):
        return ""
    return (
        "; is the broker running there? `callqa broker` (or `callqa up`) starts the embedded one, and "
        "--broker or CALLQA_BROKER names another"
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.func not in (worker.cmd_worker, worker.cmd_up):  # (the worker's own shutdown handles its signals)
        # SIGTERM, and a closed terminal's SIGHUP (whose default would end it at once, its outputs and
        # children left), stop a command as Ctrl-C does.
        for signum in STOP_SIGNALS[1:]:
            signal.signal(signum, _terminate)
    try:
        return args.func(args) or 0
    except KeyboardInterrupt as exc:
        # Ctrl-C: what a command writes is complete or not there at all (streams/files/output_files.py).
        terminated = isinstance(exc, Terminated)
        print(f"callqa: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        return 143 if terminated else 130
    except BrokenPipeError:
        # The reader of the output went away (`callqa summary … | head`): nothing is wrong and nothing
        # more can be said. Python would report the failing flush at exit, so stdout goes nowhere now.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (
        ValueError,
        OSError,
        BrokerUnavailable,
    ) as exc:  # configuration, input and file errors: one clear line, no traceback
        print(f"callqa: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        from aiokafka.errors import KafkaError

        if isinstance(exc, KafkaError):  # an unreachable or failing broker
            print(f"callqa: Kafka: {exc}{_broker_hint(exc)}", file=sys.stderr)
            return 3
        raise


if __name__ == "__main__":
    sys.exit(main())
