"""Time to first byte of the agent's services (LLM, TTS, STT), from RTVI `metrics` messages.

Pipecat reports each service's TTFB in seconds, as `data.ttfb` entries `{processor, model?, value}`.
The agent side's values are kept in milliseconds by processor (an entry without one under
UNNAMED_PROCESSOR), for the latency metric's details: where a slow handoff's time went. A value that
is not a finite, non-negative number measures nothing and is left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models.call_state import CallState
from models.events import Rtvi
from scorers.base import Scorer
from scorers.numbers import finite_number

UNNAMED_PROCESSOR = "unnamed"
MS_DECIMALS = 3  # (seconds × 1000 in binary floating point: 0.4 s would read 400.00000000000006 ms)


@dataclass(slots=True)
class TtfbAcc:
    ms_by_processor: dict[str, list[float]] = field(default_factory=dict)


class TimeToFirstByte(Scorer):
    name = "ttfb"
    handles = frozenset({"rtvi"})
    rtvi_messages = frozenset({"metrics"})

    def start(self) -> TtfbAcc:
        return TtfbAcc()

    def update(self, acc: TtfbAcc, event: Rtvi, call: CallState) -> None:
        data = event.data
        message = data.message
        metrics = message.data
        if message.type != "metrics" or data.side != "agent" or not isinstance(metrics, dict):
            return
        entries = metrics.get("ttfb")
        for entry in entries if isinstance(entries, list) else ():
            if not isinstance(entry, dict):
                continue
            seconds = finite_number(entry.get("value"))
            if seconds is None or seconds < 0:
                continue
            processor = entry.get("processor")
            key = processor if isinstance(processor, str) and processor else UNNAMED_PROCESSOR
            acc.ms_by_processor.setdefault(key, []).append(round(seconds * 1000, MS_DECIMALS))
