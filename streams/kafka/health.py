"""Whether the worker can reach its Kafka brokers, for `/health`.

Faust and aiokafka retry a lost broker for ever and say so only in the log: a worker cut off from
Kafka kept answering `"status": "ok"` while it scored nothing. A task asks the cluster for its
metadata at start and every `broker_probe_s` seconds, over a client of its own with the worker's
connection settings, and `/health` reports the outcome: unreachable once the last
`FAILURES_BEFORE_UNREACHABLE` probes failed (one lost answer is not an outage), with the error and
how long since the broker last answered, and HTTP 503 so that a load balancer or an orchestrator's
readiness check sees it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from aiokafka.client import AIOKafkaClient
from aiokafka.errors import KafkaError

from streams.kafka.clients import connection_options

logger = logging.getLogger("callqa.worker")

PROBE_TIMEOUT_S = 4.0
FAILURES_BEFORE_UNREACHABLE = 2


@dataclass
class BrokerHealth:
    """What the probes found so far (times from `time.monotonic()`)."""

    last_answer_at: float | None = None
    failures_in_a_row: int = 0
    last_error: str | None = None
    probes: int = 0

    def answered(self, now: float) -> None:
        if self.failures_in_a_row >= FAILURES_BEFORE_UNREACHABLE:
            logger.warning("the Kafka brokers answer again")
        self.last_answer_at, self.failures_in_a_row, self.last_error = now, 0, None
        self.probes += 1

    def failed(self, error: str) -> None:
        self.failures_in_a_row += 1
        self.last_error = error
        self.probes += 1
        if self.failures_in_a_row == FAILURES_BEFORE_UNREACHABLE:
            logger.error("the Kafka brokers do not answer: %s", error)

    @property
    def reachable(self) -> bool | None:
        """None until the first probe has answered or failed."""
        if self.probes == 0:
            return None
        return self.failures_in_a_row < FAILURES_BEFORE_UNREACHABLE

    def document(self, now: float) -> dict[str, Any]:
        return {
            "reachable": self.reachable,
            "last_answer_s_ago": None if self.last_answer_at is None else round(now - self.last_answer_at, 1),
            "failed_probes_in_a_row": self.failures_in_a_row,
            "last_error": self.last_error,
        }


def describe(error: BaseException) -> str:
    if isinstance(error, asyncio.TimeoutError):
        return f"no answer within {PROBE_TIMEOUT_S:g} s"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


@dataclass
class BrokerProbe:
    """Asks the cluster for its metadata: the cheapest request every broker answers."""

    options: dict[str, Any]
    health: BrokerHealth
    _client: AIOKafkaClient | None = None
    _bootstrapped: bool = False

    async def probe(self) -> None:
        try:
            await asyncio.wait_for(self._ask(), PROBE_TIMEOUT_S)
        except (TimeoutError, KafkaError, OSError) as exc:
            self.health.failed(describe(exc))
        except Exception as exc:  # anything else must not end the probing task
            logger.exception("the broker probe failed unexpectedly")
            self.health.failed(describe(exc))
        else:
            self.health.answered(time.monotonic())

    async def _ask(self) -> None:
        if self._client is None:
            self._client = AIOKafkaClient(request_timeout_ms=int(PROBE_TIMEOUT_S * 1000), **self.options)
        if not self._bootstrapped:
            await self._client.bootstrap()  # raises when no bootstrap server answers
            self._bootstrapped = True
            return
        await self._client.fetch_all_metadata()  # raises when no known broker answers

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


def install_broker_probe(callqa: Any) -> BrokerHealth:
    health = BrokerHealth()
    probe = BrokerProbe(connection_options(callqa.settings), health)
    interval = callqa.settings.broker_probe_s

    @callqa.app.task
    async def probe_brokers() -> None:
        # (A task rather than a timer: a timer's first round comes one interval after the start.)
        while True:
            await probe.probe()
            await asyncio.sleep(interval)

    @callqa.app.on_before_shutdown.connect
    async def close_probe(sender: Any, **kwargs: Any) -> None:
        await probe.close()

    return health
