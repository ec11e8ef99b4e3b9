"""The run-level summary (the harness's all_summary.txt) as one typed structure, and its JSON form.

Field names are the harness's runner names (`success_rate`, `db_state_assertion_success_rate`, …). A
rate whose bucket is empty is None: left out of all_summary.txt, null in the JSON form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The rates of the all_summary table in the order the file prints them.
RATE_NAMES = (
    "success_rate",
    "task_success_rate",
    "action_match_rate",
    "db_state_success_rate",
    "db_state_assertion_success_rate",
    "nl_assertion_success_rate",
    "judge_pass_rate",
    "clean_exit_rate",
)
# The rates that have a per-domain block (judge score, judge pass, action match and clean exit have none).
DOMAIN_RATE_NAMES = (
    "success_rate",
    "task_success_rate",
    "db_state_success_rate",
    "nl_assertion_success_rate",
    "db_state_assertion_success_rate",
)


@dataclass(frozen=True, slots=True)
class Rate:
    """`passed` out of `total` over the rate's own denominator (scenarios, predicates or assertions)."""

    passed: int
    total: int

    @property
    def value(self) -> float:
        return self.passed / self.total

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "total": self.total, "rate": self.value}

    @classmethod
    def of(cls, passed: int, total: int) -> Rate | None:
        return cls(passed, total) if total > 0 else None


@dataclass(frozen=True, slots=True)
class Mean:
    value: float
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {"mean": self.value, "count": self.count}


@dataclass(frozen=True, slots=True)
class SideTokens:
    n_calls: int = 0
    prompt: int = 0
    completion: int = 0

    @property
    def total(self) -> int:
        """The side's tokens: prompt + completion."""
        return self.prompt + self.completion

    def __add__(self, other: SideTokens) -> SideTokens:
        return SideTokens(self.n_calls + other.n_calls, self.prompt + other.prompt, self.completion + other.completion)

    def to_dict(self) -> dict[str, int]:
        return {"n_calls": self.n_calls, "prompt": self.prompt, "completion": self.completion, "total": self.total}


@dataclass(frozen=True, slots=True)
class TokenUsageSummary:
    agent: SideTokens
    user: SideTokens

    @property
    def run_total(self) -> SideTokens:
        return self.agent + self.user

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent.to_dict(), "user": self.user.to_dict(), "run_total": self.run_total.to_dict()}


@dataclass(frozen=True, slots=True)
class DomainSummary:
    domain: str
    scenarios: int
    success_rate: Rate | None
    task_success_rate: Rate | None
    db_state_success_rate: Rate | None
    nl_assertion_success_rate: Rate | None
    db_state_assertion_success_rate: Rate | None

    def rates(self) -> dict[str, Rate | None]:
        return {name: getattr(self, name) for name in DOMAIN_RATE_NAMES}

    def to_dict(self) -> dict[str, Any]:
        return {"scenarios": self.scenarios} | {name: _rate_dict(rate) for name, rate in self.rates().items()}


@dataclass(frozen=True, slots=True)
class StallWarning:
    """Scenarios whose agent produced fewer LLM responses than the floor: counted as failures."""

    min_agent_turns: int  # the run's floor, for scenarios whose result does not give their own
    scenarios: tuple[str, ...]
    floors: tuple[int, ...] = ()  # each scenario's floor, in step with `scenarios`

    def to_dict(self) -> dict[str, Any]:
        return {"min_agent_turns": self.min_agent_turns, "scenarios": list(self.scenarios), "floors": list(self.floors)}


@dataclass(frozen=True, slots=True)
class AllSummary:
    run_id: str | None
    scenarios: int
    success_rate: Rate | None
    task_success_rate: Rate | None
    action_match_rate: Rate | None
    db_state_success_rate: Rate | None
    db_state_assertion_success_rate: Rate | None
    nl_assertion_success_rate: Rate | None
    judge_score_mean: Mean | None
    judge_pass_rate: Rate | None
    clean_exit_rate: Rate | None
    # Empty unless the run spans more than one domain; sorted by domain.
    domains: tuple[DomainSummary, ...]
    # count, mean_ms, p50_ms, p95_ms, min_ms, max_ms over every latency sample; each -1 when none.
    overall_latency_stats: dict[str, float | int]
    # None when no token events were received (the block is suppressed).
    token_usage: TokenUsageSummary | None
    # None when no scenario stalled.
    stall_warning: StallWarning | None
    # Scenarios whose agent never spoke (scorers/conversation.py): in the JSON form only, for
    # all_summary.txt is the harness's text, byte for byte.
    no_conversation_scenarios: int = 0

    def rates(self) -> dict[str, Rate | None]:
        return {name: getattr(self, name) for name in RATE_NAMES}

    def to_dict(self) -> dict[str, Any]:
        """The JSON form served by the HTTP API and `callqa summary RUN_ID`."""
        document: dict[str, Any] = {"run_id": self.run_id, "scenarios": self.scenarios}
        for name, rate in self.rates().items():
            if name == "judge_pass_rate":  # the mean sits just before the pass rate, as in the file
                mean = self.judge_score_mean
                document["judge_score_mean"] = mean.to_dict() if mean is not None else None
            document[name] = _rate_dict(rate)
        return document | {
            "domains": {domain.domain: domain.to_dict() for domain in self.domains},
            "overall_latency_stats": dict(self.overall_latency_stats),
            "token_usage": self.token_usage.to_dict() if self.token_usage is not None else None,
            "stall_warning": self.stall_warning.to_dict() if self.stall_warning is not None else None,
            "no_conversation_scenarios": self.no_conversation_scenarios,
        }


def _rate_dict(rate: Rate | None) -> dict[str, Any] | None:
    return rate.to_dict() if rate is not None else None
