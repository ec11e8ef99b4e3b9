"""`callqa worker` and `callqa up`: a scoring worker, alone or with an embedded broker of its own."""

from __future__ import annotations

import argparse
import errno
import os
import signal
import socket
import sys
import tempfile
from typing import Any

from streams.cli.args import kafka_options, port_number, settings_from
from streams.config import Settings

# Addresses that listen everywhere and name no host (CALLQA_WEB_HOST must name one).
WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})
# Names that mean "this machine" to whoever uses them: another worker's, not this one's.
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def _refuse_a_taken_web_port(settings: Settings) -> None:
    """The HTTP API's address, tried before the worker starts: Faust would find it taken only once
    running, and stop with a page of traceback."""
    if settings.web_port == 0:
        return
    host = settings.web_listen_host
    try:
        infos = socket.getaddrinfo(host, settings.web_port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        return  # (a host name not resolvable here: left to the web server to say)
    for family, kind, _, _, address in infos:  # (the web server binds every address the name has)
        with socket.socket(family, kind) as probe:
            # As asyncio's server binds: reusing a port in TIME_WAIT, IPv6 apart from IPv4.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                host, port = str(address[0]), settings.web_port  # (the address asked for)
                shown = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
                if exc.errno == errno.EADDRINUSE:
                    raise ValueError(
                        f"the HTTP API's port {shown} is in use: another worker may run there; give "
                        "it a free port (--web-port, or CALLQA_WEB_PORT)"
                    ) from None
                raise ValueError(
                    f"the HTTP API cannot listen on {shown} ({exc.strerror}): set CALLQA_WEB_BIND to an "
                    "address of this machine (0.0.0.0 for all)"
                ) from None


def _run_worker(settings: Settings) -> int:
    import asyncio

    import faust

    from streams.kafka.clients import ensure_topics
    from streams.kafka.repeated_logs import collapse_aiokafka_repeats
    from streams.topics import TopicNames
    from streams.tuning import tune_gc
    from streams.worker.app import create_app
    from streams.worker.former_app_id import refuse_a_moved_group

    # Checked before anything is created: Faust would fail on it later, with a traceback.
    try:
        os.makedirs(settings.data_dir, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=settings.data_dir, prefix=".callqa-write-check-")
        probe.close()
    except OSError as exc:
        raise ValueError(
            f"data_dir {settings.data_dir!r} (CALLQA_DATA_DIR) cannot be written: {exc.strerror or exc}"
        ) from None
    _refuse_a_taken_web_port(settings)
    # Create every topic with its partition count before Faust subscribes (see ensure_topics).
    asyncio.run(
        ensure_topics(settings, TopicNames(settings.topic_prefix).specs(settings.partitions), check_partitions=True)
    )
    asyncio.run(refuse_a_moved_group(settings))
    if settings.web_host in WILDCARD_ADDRESSES:
        print(
            f"callqa: CALLQA_WEB_HOST={settings.web_host} names no worker: another worker asked for "
            f"GET /alerts cannot pass it on to this one; set CALLQA_WEB_HOST to this worker's host name "
            f"and CALLQA_WEB_BIND={settings.web_host}",
            file=sys.stderr,
            flush=True,
        )
    elif settings.web_bind in WILDCARD_ADDRESSES and settings.web_host in LOOPBACK_NAMES:
        print(
            f"callqa: CALLQA_WEB_BIND={settings.web_bind} with CALLQA_WEB_HOST={settings.web_host}: another "
            f"worker asked for GET /alerts would pass it on to its own loopback, not to this worker; set "
            f"CALLQA_WEB_HOST to this worker's host name",
            file=sys.stderr,
            flush=True,
        )
    if not settings.api_token_in_force and settings.web_listen_host not in LOOPBACK_NAMES:
        print(
            f"callqa: the HTTP API listens on {settings.web_listen_host} with no CALLQA_API_TOKEN: "
            "whoever reaches it can read the calls' transcripts and create, change and delete cohorts; set "
            "CALLQA_API_TOKEN to ask reads of call content and writes for it",
            file=sys.stderr,
            flush=True,
        )
    callqa = create_app(settings)
    tune_gc()
    collapse_aiokafka_repeats()
    worker = faust.Worker(callqa.app, loglevel=settings.log_level, quiet=True)
    # At log levels from WARNING up Faust keeps a spinner that turns the root logger to DEBUG, and
    # the debug records of every send then cost ~15 % of a worker (measured with py-spy).
    worker.spinner = None
    # A closed terminal's SIGHUP stops the worker as SIGTERM does, its offsets committed and its journal
    # written, where its default would end the process at once; one ignored at start (nohup) stays so.
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, _stop_as_on_sigterm)
    worker.execute_from_commandline()
    return 0


def _stop_as_on_sigterm(signum: int, frame: Any) -> None:
    signal.raise_signal(signal.SIGTERM)  # (the worker's own SIGTERM handler stops it)


def cmd_worker(args: argparse.Namespace) -> int:
    return _run_worker(settings_from(args))


def cmd_up(args: argparse.Namespace) -> int:
    from streams.kafka.embedded_broker import EmbeddedBroker

    settings = settings_from(args)
    if settings.web_port == args.port:
        raise ValueError(f"the broker and the HTTP API cannot share port {args.port}: give --web-port another")
    _refuse_a_taken_web_port(settings)  # (before a broker is started, only to be stopped)
    with EmbeddedBroker(port=args.port).start() as broker:
        print(f"embedded broker listening: {broker.bootstrap}  (CALLQA_BROKER={broker.url})", flush=True)
        settings = settings_from(args).with_overrides(broker=broker.url)
        try:
            return _run_worker(settings)
        except KeyboardInterrupt:
            return 0


def add_parser(sub: Any) -> None:
    web_port_help = "the HTTP API's port (default: CALLQA_WEB_PORT, else 6066)"
    p = sub.add_parser("worker", help="run a scoring worker")
    kafka_options(p)
    p.add_argument("--web-port", type=port_number, help=web_port_help)
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("up", help="embedded broker + worker in one command (Ctrl-C stops both)")
    kafka_options(p, broker=False)
    p.add_argument("--port", type=port_number, default=9092, help="the embedded broker's port (default 9092)")
    p.add_argument("--web-port", type=port_number, help=web_port_help)
    p.set_defaults(func=cmd_up)
