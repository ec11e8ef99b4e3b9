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

    @property
    def alerts_input(self) -> str:
        """Results reduced to what alerting reads, on one partition: one evaluator per deployment."""
        return f"{self.prefix}.alerts-input"

    def partition_counts(self, partitions: int) -> dict[str, int]:
        """Every topic a worker uses, with the partitions it must have."""
        return {self.events: partitions, self.results: partitions, self.deadletter: 1, self.cohorts: 1,
                self.alerts: 1, self.alert_rules: 1, self.alerts_input: 1}
