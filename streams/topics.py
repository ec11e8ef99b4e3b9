"""Topic names, all under one prefix so several deployments can share a cluster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# What a compacted topic is given: Kafka keeps the newest document of each key for as long as the
# topic lives. Cohort definitions and alert rules are state, not history: under the default
# retention (a week) a worker started later would read none of them.
COMPACTED: Mapping[str, str] = {"cleanup.policy": "compact"}


@dataclass(frozen=True)
class TopicSpec:
    """How a topic must be created: its partitions, and whether it is compacted."""

    partitions: int
    compacted: bool = False

    @property
    def configs(self) -> dict[str, str]:
        return dict(COMPACTED) if self.compacted else {}


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

    def specs(self, partitions: int) -> dict[str, TopicSpec]:
        """Every topic a worker uses, as it must be created (`partitions`: CALLQA_PARTITIONS)."""
        return {
            self.events: TopicSpec(partitions),
            self.results: TopicSpec(partitions),
            self.deadletter: TopicSpec(1),
            self.cohorts: TopicSpec(1, compacted=True),
            self.alerts: TopicSpec(1),
            self.alert_rules: TopicSpec(1, compacted=True),
            self.alerts_input: TopicSpec(1),
        }

    def only(self, partitions: int, *topics: str) -> dict[str, TopicSpec]:
        """The specs of some of the topics."""
        specs = self.specs(partitions)
        return {topic: specs[topic] for topic in topics}
