"""`callqa replay --rules RULES --alerts-out ALERTS`: the alert events of a replay, as JSON Lines.

Results go to the alert engine in event-time order (scorers/alerting/ordering.py: each held until the
event times seen are the allowed lateness past it, the rest at the end of the log), as the live worker
feeds them, so the same log and rules always give the same alert events, and the worker gives them
too when its results arrive less than that lateness out of order. Like the worker, replay counts the
event times per partition of the results topic (a result goes to its call's partition): a log that
is several producers' logs one after the other is in order within each partition, not as a whole.
"""

from __future__ import annotations

from typing import Any, BinaryIO

import msgspec

from models.alert_rules import load_rules
from scorers.alerting.engine import AlertEngine
from scorers.alerting.ordering import EventTimeOrder, observe_in_order, release_in_order
from scorers.inactivity import DEFAULT_ALLOWED_LATENESS_MS
from scorers.registry import qa_metric_names
from scorers.watermarks import DEFAULT_MAX_LEAP_MS
from streams.files.output_files import AtomicOutput
from streams.partitioning import partition_for

_json = msgspec.json.Encoder()


class AlertsFile:
    def __init__(
        self,
        rules_path: str,
        out_path: str,
        lateness_ms: int = DEFAULT_ALLOWED_LATENESS_MS,
        partitions: int = 1,
        max_leap_ms: int = DEFAULT_MAX_LEAP_MS,
    ) -> None:
        self.engine = AlertEngine(load_rules(rules_path, qa_metric_names()), max_leap_ms)
        self.partitions = partitions
        self.order = EventTimeOrder(lateness_ms, sources=partitions, max_leap_ms=max_leap_ms)
        self.path = out_path
        self.count = 0
        self.output = AtomicOutput(out_path)
        self._out: BinaryIO = self.output.file

    def observe(self, result: Any) -> None:
        self._write(observe_in_order(self.engine, self.order, result, self._partition_of))

    def _partition_of(self, call_id: str) -> int:
        return partition_for(call_id, self.partitions)

    def end_of_input(self) -> None:
        """The log is read: what is still held is counted, in order (as a quiet input is live)."""
        self._write(release_in_order(self.engine, self.order))

    def _write(self, alerts: list[dict[str, Any]]) -> None:
        for alert in alerts:
            self._out.write(_json.encode(alert))
            self._out.write(b"\n")
            self.count += 1

    def close(self) -> None:
        self.output.commit()

    def discard(self) -> None:
        self.output.discard()


def alerts_file(
    rules_path: str | None,
    out_path: str | None,
    lateness_ms: int = DEFAULT_ALLOWED_LATENESS_MS,
    partitions: int = 1,
    max_leap_ms: int = DEFAULT_MAX_LEAP_MS,
) -> AlertsFile | None:
    """The alerts sink of a replay, or None without `--rules`; raises ValueError on a bad rules file."""
    if rules_path is None and out_path is None:
        return None
    if rules_path is None or out_path is None:
        raise ValueError("--rules and --alerts-out go together: the rules to evaluate and where to write the alerts")
    return AlertsFile(rules_path, out_path, lateness_ms, partitions, max_leap_ms)
