"""Topic names, all under one prefix so several deployments can share a cluster."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TopicNames:
    prefix: str = "callqa"

    @property
    def events(self) -> str:
        return f"{self.prefix}.events"

    @property
    def results(self) -> str:
        return f"{self.prefix}.results"

    @property
    def deadletter(self) -> str:
        return f"{self.prefix}.deadletter"

    @property
    def cohorts(self) -> str:
        return f"{self.prefix}.cohorts"

    @property
    def alerts(self) -> str:
        return f"{self.prefix}.alerts"

    @property
    def alert_rules(self) -> str:
        return f"{self.prefix}.alert-rules"
