"""Transition accuracy (heuristic): whether a conversation flow moved between nodes sensibly.

Each `node.transition` event is one transition `from → to`; a missing `from` is the previous
transition's `to` (unknown for the first). A transition is bad when it goes from a node to itself, or
when it enters a node that transitions have already entered twice (the 3rd and later entries are bad).
Every transition into a node counts as an entry, a self-transition included; the node the flow starts
in is not entered by a transition and is not counted. A transition that is both is reported once, as a
self-transition.

Value: good ÷ all transitions, rounded to 4 decimals; score: the unrounded share × 100.
`details.problems` lists every bad transition as `{index, from, to, problem}` (index 0-based over the
call's transitions). An LLM judge's answer, when there is one, replaces this result (a later layer).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from models.call_state import CallState
from models.events import NodeTransition
from models.results import MetricResult
from scorers.qa.base import QaMetric

NO_NODE_TRANSITIONS = "No node transitions"
VALUE_DECIMALS = 4
MAX_GOOD_ENTRIES = 2

SELF_TRANSITION = "transitions to itself"
REPEATED_ENTRY = "entered more than twice"


@dataclass(slots=True)
class TransitionAcc:
    transitions: int = 0
    entries: dict[str, int] = field(default_factory=dict)
    last_to: str | None = None
    problems: list[dict[str, Any]] = field(default_factory=list)


class TransitionAccuracy(QaMetric):
    name = "transition_accuracy"
    label = "Transition accuracy"
    value_meaning = "Share of good transitions (0 to 1)"
    default_threshold = 80
    judge_kind = "llm"
    handles = frozenset({"node.transition"})

    def start(self) -> TransitionAcc:
        return TransitionAcc()

    def update(self, acc: TransitionAcc, event: NodeTransition, call: CallState) -> None:
        to = event.data.to
        from_ = event.data.from_ if event.data.from_ is not None else acc.last_to
        entries = acc.entries[to] = acc.entries.get(to, 0) + 1
        problem = None
        if from_ == to:
            problem = SELF_TRANSITION
        elif entries > MAX_GOOD_ENTRIES:
            problem = REPEATED_ENTRY
        if problem is not None:
            acc.problems.append({"index": acc.transitions, "from": from_, "to": to, "problem": problem})
        acc.transitions += 1
        acc.last_to = to

    def finalize(self, acc: TransitionAcc, call: CallState) -> MetricResult:
        if acc.transitions == 0:
            return self.not_applicable(NO_NODE_TRANSITIONS)
        share = (acc.transitions - len(acc.problems)) / acc.transitions
        return self.scored(
            round(share, VALUE_DECIMALS),
            share * 100,
            total=acc.transitions,
            good=acc.transitions - len(acc.problems),
            problems=[dict(p) for p in acc.problems],
        )
