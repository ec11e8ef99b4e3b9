"""A run's scenarios folded into verdict lists exactly as the harness's `RunAggregator.add_scenario` folds
them on its resume path, so that all_summary.txt can be written with the harness's own arithmetic.

Each signal counts only when its key is present and well-typed. Task success is read from
`success_breakdown.failed` (every failed signal but `clean_exit`), not from `is_task_successful`.
NL-assertion verdicts come from judge_result.json, and only when metrics.json has a numeric
`nl_assertion_pass_rate`. A stalled scenario is a counted failure in the two composite lists, is
skipped in every per-signal list, and still adds its tokens.
Which scenario stalled: `scorers.runs.stalls`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from scorers.runs.signals import CLEAN_EXIT, TOKEN_FIELDS, TOKEN_SIDES, domain_of, task_success
from scorers.runs.stalls import stall_floor


@dataclass(frozen=True, slots=True)
class ScenarioFiles:
    """One scenario as the harness reads it back: its metrics.json and, when judged, judge_result.json."""

    metrics: Mapping[str, Any]
    judge: Mapping[str, Any] | None = None

    @property
    def name(self) -> str:
        name = self.metrics.get("scenario_name")
        return name if isinstance(name, str) else "?"


@dataclass(slots=True)
class Verdicts:
    """The harness's bucket lists, for the whole run or one domain (a list stays empty when unused)."""

    success: list[bool] = field(default_factory=list)
    task_success: list[bool] = field(default_factory=list)
    action_match: list[bool] = field(default_factory=list)
    judge_score: list[float] = field(default_factory=list)
    judge_pass: list[bool] = field(default_factory=list)
    db_state: list[bool] = field(default_factory=list)
    nl_assertion: list[bool] = field(default_factory=list)
    db_state_assertion: list[bool] = field(default_factory=list)
    clean_exit: list[bool] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Stalled:
    scenario_name: str
    floor: int  # the floor of agent LLM responses it fell short of


@dataclass(slots=True)
class RunFold:
    run: Verdicts = field(default_factory=Verdicts)
    domains: dict[str, Verdicts] = field(default_factory=dict)
    stalled: list[Stalled] = field(default_factory=list)
    tokens: dict[str, dict[str, int]] = field(
        default_factory=lambda: {side: dict.fromkeys(TOKEN_FIELDS, 0) for side in TOKEN_SIDES}
    )

    def domains_with(self, bucket: str) -> dict[str, list[Any]]:
        """Domain → its list for `bucket`, for the domains that put anything in it (sorted by domain)."""
        lists = {name: getattr(verdicts, bucket) for name, verdicts in sorted(self.domains.items())}
        return {name: values for name, values in lists.items() if values}


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float))  # (bool included, as the harness's isinstance check does)


def _add_tokens(fold: RunFold, metrics: Mapping[str, Any]) -> None:
    usage = metrics.get("token_usage") or {}
    for side in TOKEN_SIDES:
        figures = usage.get(side) or {}
        for key in TOKEN_FIELDS:
            value = figures.get(key, 0)
            fold.tokens[side][key] += value if isinstance(value, int) else 0


def _put(fold: RunFold, domain: str, bucket: str, value: Any) -> None:
    getattr(fold.run, bucket).append(value)
    getattr(fold.domains.setdefault(domain, Verdicts()), bucket).append(value)


def add_scenario(fold: RunFold, scenario: ScenarioFiles, min_agent_turns: int | None) -> None:
    metrics = scenario.metrics
    domain = domain_of(scenario.name)
    floor = stall_floor(metrics, min_agent_turns)
    if floor is not None:
        fold.stalled.append(Stalled(scenario.name, floor))
        _put(fold, domain, "success", False)
        _put(fold, domain, "task_success", False)
        _add_tokens(fold, metrics)
        return
    for bucket, key in (("action_match", "is_action_match"),):
        if isinstance(metrics.get(key), bool):
            _put(fold, domain, bucket, metrics[key])
    if _is_number(score := metrics.get("judge_score")):
        _put(fold, domain, "judge_score", float(score))
    for bucket, key in (("judge_pass", "judge_passed"), ("db_state", "db_state_match"), ("clean_exit", CLEAN_EXIT)):
        if isinstance(metrics.get(key), bool):
            _put(fold, domain, bucket, metrics[key])
    if _is_number(metrics.get("nl_assertion_pass_rate")) and scenario.judge is not None:
        for verdict in scenario.judge.get("nl_assertion_verdicts") or []:
            _put(fold, domain, "nl_assertion", bool(verdict.get("passed")))
    for verdict in metrics.get("db_state_assertion_verdicts") or []:
        _put(fold, domain, "db_state_assertion", bool(verdict.get("passed")))
    if isinstance(metrics.get("is_successful"), bool):
        _put(fold, domain, "success", metrics["is_successful"])
        _put(fold, domain, "task_success", task_success(metrics))
    _add_tokens(fold, metrics)


def fold_run(scenarios: Iterable[ScenarioFiles], min_agent_turns: int | None) -> RunFold:
    fold = RunFold()
    for scenario in scenarios:
        add_scenario(fold, scenario, min_agent_turns)
    return fold
