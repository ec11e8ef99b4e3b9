"""Automatic retry provenance: one reason per discarded attempt (`attempt.discarded`), in order.

The one accumulator a discarded attempt leaves as it was (scorers/fold.py starts the others over)."""

from __future__ import annotations

from dataclasses import dataclass, field

from models.call_state import CallState
from models.events import AttemptDiscarded
from scorers.base import Scorer


@dataclass(slots=True)
class RetriesAcc:
    reasons: list[str] = field(default_factory=list)


class Retries(Scorer):
    name = "retries"
    handles = frozenset({"attempt.discarded"})
    spans_attempts = True

    def start(self) -> RetriesAcc:
        return RetriesAcc()

    def update(self, acc: RetriesAcc, event: AttemptDiscarded, call: CallState) -> None:
        acc.reasons.append(event.data.reason)
