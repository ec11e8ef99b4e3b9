"""What one scenario contributes to its run's summary, read from its metrics.json and judge_result.json.

The same reader serves a live result (its `evaluation` document, with the judge's answer under
`judge_result`) and a scenario loaded back from exported files, so both give the same summary. Each
signal counts only when its key is present and well-typed: an older metrics.json missing a field simply
contributes nothing to that bucket. A stalled scenario (`insufficient_agent_turns`) is a counted failure
in the composite rates and is skipped in every per-signal bucket; its latencies and tokens still count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scorers.numbers import finite_number
from scorers.runs.stalls import stall_floor

# The scenario-name prefix before the first "__" is the domain bucket of the per-domain breakdowns.
DOMAIN_SEPARATOR = "__"
JUDGE_RESULT_KEY = "judge_result"
DB_STATE_DIFF_KEY = "db_state_diff"  # (exported as its own file, as judge_result)
TOKEN_SIDES = ("agent", "user")
TOKEN_FIELDS = ("n_calls", "prompt", "completion")
CLEAN_EXIT = "clean_exit"


@dataclass(frozen=True, slots=True)
class Count:
    """Passed out of total, e.g. a scenario's 2 of 3 predicates; (0, 0) counts nothing."""

    passed: int = 0
    total: int = 0


NOTHING = Count()


@dataclass(frozen=True, slots=True)
class ScenarioSignals:
    """Everything one scenario adds to the run's buckets; None = not counted in that bucket."""

    scenario_name: str
    stalled: bool
    # The floor of agent turns a stalled scenario fell short of (None: not stalled, or not said, as
    # in the harness's own metrics.json, whose runner has one floor for the run).
    floor: int | None
    is_successful: bool | None
    is_task_successful: bool | None
    is_action_match: bool | None
    db_state_match: bool | None
    db_state_assertions: Count
    nl_assertions: Count
    judge_score: float | None
    judge_passed: bool | None
    clean_exit: bool | None
    latencies_ms: tuple[float, ...]
    # (n_calls, prompt, completion) for the agent and then the user side.
    tokens: tuple[tuple[int, int, int], tuple[int, int, int]]
    # The agent never spoke (the result's `no_conversation`; a harness's metrics.json does not say).
    no_conversation: bool = False

    @property
    def domain(self) -> str:
        return domain_of(self.scenario_name)


def domain_of(scenario_name: str) -> str:
    return scenario_name.split(DOMAIN_SEPARATOR, 1)[0]


def split_evaluation(evaluation: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A result's `evaluation` as the two files: metrics.json (without the judge) and judge_result.json."""
    metrics = {key: value for key, value in evaluation.items() if key not in (JUDGE_RESULT_KEY, DB_STATE_DIFF_KEY)}
    judge = evaluation.get(JUDGE_RESULT_KEY)
    return metrics, judge if isinstance(judge, dict) else None


def _bool(document: Mapping[str, Any], key: str) -> bool | None:
    value = document.get(key)
    return value if isinstance(value, bool) else None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float))  # (a bool too, as the harness's isinstance check)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _verdict_count(verdicts: Any) -> Count | None:
    """One predicate or assertion per verdict entry; it passes only on `passed: true`."""
    if not isinstance(verdicts, list):
        return None
    entries = [entry for entry in verdicts if isinstance(entry, dict)]
    return Count(sum(1 for entry in entries if entry.get("passed") is True), len(entries))


def db_state_assertions(metrics: Mapping[str, Any]) -> Count:
    return _verdict_count(metrics.get("db_state_assertion_verdicts")) or NOTHING


def nl_assertions(judge: Mapping[str, Any] | None) -> Count:
    """From judge_result.json's verdict list, since metrics.json holds only the rate (the harness reads
    nothing else: a judge result with only the pass count counts nothing)."""
    if judge is None:
        return NOTHING
    return _verdict_count(judge.get("nl_assertion_verdicts")) or NOTHING


def latencies_ms(metrics: Mapping[str, Any]) -> tuple[float, ...]:
    samples = metrics.get("latencies")
    if not isinstance(samples, list):
        return ()
    values = (finite_number(sample.get("latency_ms")) for sample in samples if isinstance(sample, dict))
    return tuple(value for value in values if value is not None)


def token_usage(metrics: Mapping[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    usage = metrics.get("token_usage")
    usage = usage if isinstance(usage, dict) else {}

    def side(name: str) -> tuple[int, int, int]:
        figures = usage.get(name)
        figures = figures if isinstance(figures, dict) else {}
        n_calls, prompt, completion = (_count(figures.get(field)) or 0 for field in TOKEN_FIELDS)
        return n_calls, prompt, completion

    agent, user = (side(name) for name in TOKEN_SIDES)
    return agent, user


def task_success(metrics: Mapping[str, Any]) -> bool:
    """As the harness reads it back: no failed signal but `clean_exit` in `success_breakdown`."""
    breakdown = metrics.get("success_breakdown")
    failed = breakdown.get("failed") if isinstance(breakdown, dict) else None
    return not [name for name in failed or [] if name != CLEAN_EXIT]


def read_scenario(
    metrics: Mapping[str, Any], judge: Mapping[str, Any] | None, fallback_name: str, min_agent_turns: int | None = None
) -> ScenarioSignals:
    """One scenario's signals from its metrics.json document and (when a judge ran) judge_result.json.

    `min_agent_turns`: the run-wide floor of agent turns, or None for the scenario's own
    (`scorers.runs.stalls`)."""
    name = metrics.get("scenario_name")
    name = name if isinstance(name, str) else fallback_name
    floor = stall_floor(metrics, min_agent_turns)
    latencies, tokens = latencies_ms(metrics), token_usage(metrics)
    if floor is not None:
        # The runner forces a stalled scenario to fail and keeps it out of every per-signal bucket.
        return ScenarioSignals(
            scenario_name=name,
            stalled=True,
            floor=floor,
            is_successful=False,
            is_task_successful=False,
            is_action_match=None,
            db_state_match=None,
            db_state_assertions=NOTHING,
            nl_assertions=NOTHING,
            judge_score=None,
            judge_passed=None,
            clean_exit=None,
            latencies_ms=latencies,
            tokens=tokens,
        )
    is_successful = _bool(metrics, "is_successful")
    return ScenarioSignals(
        scenario_name=name,
        stalled=False,
        floor=None,
        is_successful=is_successful,
        # Same set of scenarios as the success rate: only where is_successful is a bool.
        is_task_successful=task_success(metrics) if is_successful is not None else None,
        is_action_match=_bool(metrics, "is_action_match"),
        db_state_match=_bool(metrics, "db_state_match"),
        db_state_assertions=db_state_assertions(metrics),
        # Only beside a numeric pass rate in metrics.json, as the harness reads them back.
        nl_assertions=nl_assertions(judge) if _number(metrics.get("nl_assertion_pass_rate")) else NOTHING,
        judge_score=finite_number(metrics.get("judge_score")),
        judge_passed=_bool(metrics, "judge_passed"),
        clean_exit=_bool(metrics, "clean_exit"),
        latencies_ms=latencies,
        tokens=tokens,
    )
