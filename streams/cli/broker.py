"""`callqa broker`: the embedded broker on its own, until Ctrl-C."""

from __future__ import annotations

import argparse
from typing import Any

from streams.cli.args import port_number


def run(args: argparse.Namespace) -> int:
    import signal
    import time

    from streams.kafka.embedded_broker import EmbeddedBroker

    broker = EmbeddedBroker(port=args.port).start()
    print(f"embedded broker listening: {broker.bootstrap}  (CALLQA_BROKER={broker.url})", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        while broker.process is not None and broker.process.poll() is None:
            time.sleep(0.5)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        broker.stop()


def add_parser(sub: Any) -> None:
    p = sub.add_parser("broker", help="start the embedded broker and print its address")
    p.add_argument("--port", type=port_number, default=9092)
    p.set_defaults(func=run)
