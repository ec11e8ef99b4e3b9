"""Start and stop a worker as a child process (for `demo`, tests and benchmarks)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from streams.kafka.embedded_broker import free_port, killed_with_parent


@dataclass
class WorkerProcess:
    broker_url: str
    data_dir: str
    web_port: int = 0
    env: dict[str, str] = field(default_factory=dict)
    log_path: str | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> WorkerProcess:
        if self.web_port == 0:
            self.web_port = free_port()
        env = {
            **os.environ,
            "CALLQA_BROKER": self.broker_url,
            "CALLQA_WEB_PORT": str(self.web_port),
            "CALLQA_DATA_DIR": self.data_dir,
            **self.env,
        }
        os.makedirs(self.data_dir, exist_ok=True)
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # the worker's output
        self.process = subprocess.Popen(
            [sys.executable, "-m", "streams.cli", "worker"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=killed_with_parent,
        )
        return self

    def health(self) -> dict[str, Any] | None:
        """The worker's /health document (also when it answers 503: the brokers do not answer it);
        None when the worker does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/health", timeout=1) as response:
                document: dict[str, Any] = json.loads(response.read())
                return document
        except urllib.error.HTTPError as error:
            try:
                answer: dict[str, Any] = json.loads(error.read())
                return answer
            except ValueError:
                return None
        except (OSError, ValueError):
            return None

    def wait_ready(self, timeout_s: float = 60.0, assigned: bool = False) -> None:
        """Until the worker answers (with `assigned`: until it also owns partitions of the events
        topic, i.e. it has joined its consumer group and will consume at once)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"worker exited with code {self.process.returncode}; see {self.log_path}")
            health = self.health()
            if health is not None and (not assigned or health.get("assigned_partitions")):
                return
            time.sleep(0.2)
        raise RuntimeError(f"worker not ready within {timeout_s:.0f} s; see {self.log_path}")

    def cpu_seconds(self) -> float | None:
        """CPU time the worker has used so far, user and system, all threads (None once it is gone)."""
        if self.process is None or self.process.poll() is not None:
            return None  # (once reaped, its pid may name another process)
        return process_cpu_seconds(self.process.pid)

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, no final commit — what a crash looks like."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self, timeout_s: float = 15.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()

    def __enter__(self) -> WorkerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_seconds(pid: int) -> float | None:
    """utime + stime of a live process, from /proc (None where there is no /proc, or no such process)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count the fields after its last ")".
    fields = stat[stat.rindex(b")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS_PER_S
