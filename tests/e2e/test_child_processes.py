"""What a command starts dies with it: a demo, bench or test session killed outright (SIGKILL, or a
closed terminal's SIGHUP) left its workers running, retrying a broker that was gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.broker

STARTS_A_WORKER = textwrap.dedent("""
    import sys, tempfile, time
    from streams.worker.processes import WorkerProcess
    worker = WorkerProcess(sys.argv[1], tempfile.mkdtemp(prefix="callqa-orphan-"),
                           env={"CALLQA_TOPIC_PREFIX": sys.argv[2], "CALLQA_APP_ID": sys.argv[2]}).start()
    worker.wait_ready()
    print(worker.process.pid, flush=True)
    time.sleep(120)
""")


def _gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # (a child of ours that ended: reaped by init, not us; a zombie counts as gone)
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split(") ", 1)[1].startswith("Z"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


def test_a_worker_started_by_a_process_killed_outright_stops_with_it(broker, topic_prefix):
    parent = subprocess.Popen(
        [sys.executable, "-c", STARTS_A_WORKER, broker.url, topic_prefix], stdout=subprocess.PIPE, text=True
    )
    worker_pid = int(parent.stdout.readline())
    try:
        assert not _gone(worker_pid, 0.5)  # (it runs while its parent does)
        parent.kill()
        parent.wait()
        assert _gone(worker_pid, 20), "the worker outlived the process that started it"
    finally:
        try:
            os.kill(worker_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
