"""The embedded broker process: it refuses a port something else holds, and dies with its parent."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import pytest

from streams.kafka.embedded_broker import BrokerUnavailable, EmbeddedBroker, free_port
from tests.helpers.paths import REPO


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def test_a_port_something_already_listens_on_is_refused_not_reported_as_this_broker():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(BrokerUnavailable, match=rf"127.0.0.1:{port} is in use"):
            EmbeddedBroker(port=port).start()


def test_the_broker_stops_when_the_process_that_started_it_is_killed():
    port = free_port()
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"""
import time
from streams.kafka.embedded_broker import EmbeddedBroker
EmbeddedBroker(port={port}).start()
print("up", flush=True)
time.sleep(600)
""",
        ],
        stdout=subprocess.PIPE,
        cwd=str(REPO),
    )
    try:
        assert parent.stdout.readline() == b"up\n" and listening(port)
    finally:
        parent.send_signal(signal.SIGKILL)  # no chance to stop its broker itself
        parent.wait()
    deadline = time.monotonic() + 10
    while listening(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not listening(port)
