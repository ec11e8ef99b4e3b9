"""`callqa replay --rules RULES --alerts-out ALERTS`: the alert events of a replay, as JSON Lines.

Each result goes to the alert engine the moment replay produces it, in the order of the log, so the
same log and rules always give the same alert events (the live worker evaluates the same engine, in
the order results reach its single-partition input topic).
"""

from __future__ import annotations

from typing import Any, BinaryIO

import msgspec

from models.alert_rules import load_rules
from scorers.alerting.engine import AlertEngine
from streams.output_files import AtomicOutput

_json = msgspec.json.Encoder()


class AlertsFile:
    def __init__(self, rules_path: str, out_path: str) -> None:
        self.engine = AlertEngine(load_rules(rules_path))
        self.path = out_path
        self.count = 0
        self.output = AtomicOutput(out_path)
        self._out: BinaryIO = self.output.file

    def observe(self, result: Any) -> None:
        for alert in self.engine.observe(result):
            self._out.write(_json.encode(alert))
            self._out.write(b"\n")
            self.count += 1

    def close(self) -> None:
        self.output.commit()

    def discard(self) -> None:
        self.output.discard()


def alerts_file(rules_path: str | None, out_path: str | None) -> AlertsFile | None:
    """The alerts sink of a replay, or None without `--rules`; raises ValueError on a bad rules file."""
    if rules_path is None and out_path is None:
        return None
    if rules_path is None or out_path is None:
        raise ValueError("--rules and --alerts-out go together: the rules to evaluate and where to write the alerts")
    return AlertsFile(rules_path, out_path)
