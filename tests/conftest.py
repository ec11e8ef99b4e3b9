import tempfile
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def scratch_under_pytest_s_temporary_directory(tmp_path_factory):
    """What the tests and their helpers make with `tempfile` (workers' data directories, brokers'
    logs) goes under this session's pytest directory, which pytest removes after a few sessions,
    instead of piling up in the system's temporary directory."""
    scratch = tmp_path_factory.mktemp("scratch")
    previous, tempfile.tempdir = tempfile.tempdir, str(scratch)
    yield
    tempfile.tempdir = previous


@pytest.fixture(scope="session")
def broker():
    """One embedded Kafka-compatible broker for the whole session, on a free port, over TCP."""
    from streams.kafka.embedded_broker import EmbeddedBroker

    log = Path(tempfile.mkdtemp(prefix="callqa-broker-")) / "broker.log"
    with EmbeddedBroker().start(log_path=str(log)) as running:
        yield running


@pytest.fixture
def topic_prefix(request):
    """A fresh topic namespace per test, so tests sharing the broker never see each other's data."""
    name = "".join(ch if ch.isalnum() else "-" for ch in request.node.name)[:40]
    return f"t-{name}-{id(request) % 100000}"
