"""The rules in force: those of the rules file, overridden by the documents of `callqa.alert-rules`.

The file is the deployment's baseline; a document on the topic with the same name replaces a file
rule (or adds a new one), and a delete (`deleted: true`, or an empty value: a compaction tombstone)
removes the rule whichever side defined it. `revision` grows on every change, so the evaluating agent
can tell cheaply whether to hand the engine a new rule set.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from models.alert_rules import AlertRule


@dataclass
class RuleBook:
    file_rules: dict[str, AlertRule] = field(default_factory=dict)
    topic_rules: dict[str, AlertRule | None] = field(default_factory=dict)  # None: deleted on the topic
    revision: int = 0

    @classmethod
    def from_file_rules(cls, rules: Iterable[AlertRule]) -> RuleBook:
        return cls(file_rules={rule.name: rule for rule in rules})

    def apply(self, name: str, rule: AlertRule | None) -> None:
        """A document from the topic: a rule, or None (deleted)."""
        document = None if rule is None or rule.deleted else rule
        if name in self.topic_rules and self.topic_rules[name] == document:
            return
        self.topic_rules[name] = document
        self.revision += 1

    def rules(self) -> list[AlertRule]:
        """Every rule in force (disabled ones included: the engine leaves them out), by name."""
        merged: dict[str, AlertRule | None] = {**self.file_rules, **self.topic_rules}
        return [rule for _, rule in sorted(merged.items()) if rule is not None]
