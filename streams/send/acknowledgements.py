"""The broker's acknowledgements of what a producer sent, for `callqa send`.

aiokafka's `send` hands back a future per message and fails it only later: a producer that never
looks at them reports a log sent whole when the broker refused part of it or went away. And with the
broker gone, a send waits for room in the producer's buffer as each retry frees some, and the
producer's stop waits for batches it cannot deliver: `callqa send` hung (still running three minutes
after its broker was killed), and would then have said it had sent everything. `Acknowledgements` keeps the
futures, raises at the first message the broker did not take, and gives up when the broker has
acknowledged nothing for `stall_s` while messages wait for it. (The sender also gives its producer
`stall_s` as aiokafka's request timeout, after which aiokafka fails a batch it could not deliver and
stops waiting for room in its buffer.)
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from aiokafka.errors import KafkaError

# How long `send` waits for a broker that acknowledges nothing before it gives up: well past a healthy
# broker's pauses (a leader election, a long flush), well short of "for ever".
STALL_TIMEOUT_S = 30.0
# The settled deliveries are looked at (and dropped) every so many sends or so often, whichever comes
# first: a refusal or a stall then ends the send within moments, also when the broker's slowness has
# slowed the sends down.
SETTLE_EVERY = 1024
SETTLE_EVERY_S = 0.5

# (Soon: while no input comes, the worker's idle clock moves the partitions' time on and ends the calls
# left open by their inactivity; their events sent later are refused as coming after the end.)
AGAIN = (
    "send the log again soon: the worker skips the events it already has (by event_id); after a pause "
    "longer than the calls' inactivity timeout, the calls it left open will have been ended"
)


class NotAcknowledged(KafkaError):
    """The broker did not take what was sent: some messages may be missing from the topic."""


@dataclass
class Acknowledgements:
    stall_s: float = STALL_TIMEOUT_S
    confirmed: int = 0
    pending: list[asyncio.Future[Any]] = field(default_factory=list)
    # The last acknowledgement, or the first send since everything was acknowledged if later: a stall
    # is time with messages waiting and no acknowledgement.
    waiting_since: float = field(default_factory=time.monotonic)
    settled_at: float = field(default_factory=time.monotonic)

    def add(self, delivery: asyncio.Future[Any]) -> None:
        now = time.monotonic()
        if not self.pending:
            self.waiting_since = now
        self.pending.append(delivery)
        if len(self.pending) >= SETTLE_EVERY or now - self.settled_at >= SETTLE_EVERY_S:
            self._settle(now)

    def time_left(self) -> float:
        """How long the next send may wait for the producer (for room in its buffer, for metadata)
        before the broker counts as stalled: what is left of the stall time while messages wait, the
        whole of it when none do."""
        return self._left(time.monotonic()) if self.pending else self.stall_s

    def stalled(self) -> NotAcknowledged:
        """The failure of a send that waited out the stall time (counting first what the broker
        acknowledged before it stopped)."""
        waiting = [delivery for delivery in self.pending if not _acknowledged(delivery)]
        self.confirmed += len(self.pending) - len(waiting)
        self.pending = waiting
        return self._stall(len(waiting))

    def abandon(self) -> None:
        """The send failed: the deliveries still waiting are given up on, and their failures, which
        come later, are looked at (asyncio would print each as an error never retrieved)."""
        for delivery in self.pending:
            delivery.add_done_callback(_retrieved)
        self.pending = []

    async def wait_all(self) -> None:
        """Until the broker has acknowledged every message sent so far; NotAcknowledged when it
        refused one or acknowledged nothing for `stall_s`."""
        while self.pending:
            await asyncio.wait(self.pending, timeout=self._left(time.monotonic()), return_when=asyncio.FIRST_COMPLETED)
            self._settle(now=time.monotonic())

    def _left(self, now: float) -> float:
        return max(0.0, self.waiting_since + self.stall_s - now)

    def _settle(self, now: float) -> None:
        self.settled_at = now
        waiting = [delivery for delivery in self.pending if not delivery.done()]
        refused = [
            delivery
            for delivery in self.pending
            if delivery.done() and (delivery.cancelled() or delivery.exception() is not None)
        ]
        taken = len(self.pending) - len(waiting) - len(refused)
        self.confirmed += taken
        self.pending = waiting
        if taken:
            self.waiting_since = now
        stalled = bool(waiting) and not self._left(now)
        if refused or stalled:
            for delivery in waiting:  # (given up on: their failures, coming later, are known already)
                delivery.add_done_callback(_retrieved)
        if refused:
            first = refused[0]
            error = "cancelled" if first.cancelled() else repr(first.exception())
            raise NotAcknowledged(
                f"the broker did not take {_messages(len(refused))} (the first: {error}); "
                f"{self._counts(len(waiting) + len(refused))}; {AGAIN}"
            )
        if stalled:
            raise self._stall(len(waiting))

    def _stall(self, unconfirmed: int) -> NotAcknowledged:
        return NotAcknowledged(
            f"the broker acknowledged nothing for {self.stall_s:g} s; {self._counts(unconfirmed)}; {AGAIN}"
        )

    def _counts(self, unconfirmed: int) -> str:
        return f"{_messages(self.confirmed)} confirmed, {unconfirmed:,} not"


def _messages(count: int) -> str:
    return f"{count:,} message" if count == 1 else f"{count:,} messages"


def _acknowledged(delivery: asyncio.Future[Any]) -> bool:
    return delivery.done() and not delivery.cancelled() and delivery.exception() is None


def _retrieved(delivery: asyncio.Future[Any]) -> None:
    if not delivery.cancelled():
        delivery.exception()
