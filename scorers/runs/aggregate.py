"""Run-level aggregation: the calls sharing a `run_id`, folded into the all_summary buckets one by one.

Incremental by subtraction: for each call the aggregator keeps the small `ScenarioSignals` it added
(a few flags, two counts, the call's latency samples and token figures). A newer version of the call
subtracts that contribution from the running tallies and adds the new one, so adding a result costs the
size of that one call and never rescans the run. The counts are integers and the judge-score sum is an
exact fraction, so subtracting gives back exactly what adding gave, in any order. `summary()` reads the
tallies; only the pooled latency percentiles need every sample, gathered when the summary is asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from models.events import DEFAULT_MIN_AGENT_TURNS
from models.results import CallResult
from scorers.runs.harness_fold import ScenarioFiles
from scorers.runs.report import AllSummary, DomainSummary, Mean, Rate, SideTokens, StallWarning, TokenUsageSummary
from scorers.runs.signals import Count, ScenarioSignals, read_scenario, split_evaluation
from scorers.stats import latency_stats

# Overall latency figures when nothing was measured in the whole run.
NO_LATENCY = -1


@dataclass(slots=True)
class Bucket:
    passed: int = 0
    total: int = 0

    def add_flag(self, flag: bool | None, sign: int) -> None:
        if flag is not None:
            self.total += sign
            self.passed += sign * flag

    def add_count(self, count: Count, sign: int) -> None:
        self.total += sign * count.total
        self.passed += sign * count.passed

    def rate(self) -> Rate | None:
        return Rate.of(self.passed, self.total)


@dataclass(slots=True)
class Tally:
    """Running sums over a set of scenarios (the whole run, or one domain of it)."""

    scenarios: int = 0
    success: Bucket = field(default_factory=Bucket)
    task_success: Bucket = field(default_factory=Bucket)
    action_match: Bucket = field(default_factory=Bucket)
    db_state_match: Bucket = field(default_factory=Bucket)
    db_state_assertions: Bucket = field(default_factory=Bucket)
    nl_assertions: Bucket = field(default_factory=Bucket)
    judge_passed: Bucket = field(default_factory=Bucket)
    clean_exit: Bucket = field(default_factory=Bucket)
    judge_score_sum: Fraction = Fraction(0)
    judged: int = 0
    # n_calls, prompt, completion of the agent side, then of the user side.
    tokens: list[int] = field(default_factory=lambda: [0] * 6)
    no_conversation: int = 0

    def apply(self, signals: ScenarioSignals, sign: int) -> None:
        """Add (sign = 1) or take back (sign = -1) one scenario's contribution."""
        self.scenarios += sign
        if signals.no_conversation:
            self.no_conversation += sign
        self.success.add_flag(signals.is_successful, sign)
        self.task_success.add_flag(signals.is_task_successful, sign)
        self.action_match.add_flag(signals.is_action_match, sign)
        self.db_state_match.add_flag(signals.db_state_match, sign)
        self.db_state_assertions.add_count(signals.db_state_assertions, sign)
        self.nl_assertions.add_count(signals.nl_assertions, sign)
        self.judge_passed.add_flag(signals.judge_passed, sign)
        self.clean_exit.add_flag(signals.clean_exit, sign)
        if signals.judge_score is not None:
            self.judge_score_sum += sign * Fraction(signals.judge_score)
            self.judged += sign
        for index, figure in enumerate((*signals.tokens[0], *signals.tokens[1])):
            self.tokens[index] += sign * figure

    def judge_score_mean(self) -> Mean | None:
        return Mean(float(self.judge_score_sum / self.judged), self.judged) if self.judged else None

    def token_usage(self) -> TokenUsageSummary | None:
        if not any(self.tokens):
            return None
        return TokenUsageSummary(agent=SideTokens(*self.tokens[:3]), user=SideTokens(*self.tokens[3:]))

    def domain_summary(self, domain: str) -> DomainSummary:
        return DomainSummary(
            domain=domain,
            scenarios=self.scenarios,
            success_rate=self.success.rate(),
            task_success_rate=self.task_success.rate(),
            db_state_success_rate=self.db_state_match.rate(),
            nl_assertion_success_rate=self.nl_assertions.rate(),
            db_state_assertion_success_rate=self.db_state_assertions.rate(),
        )


@dataclass(slots=True)
class _Contribution:
    version: int
    signals: ScenarioSignals
    files: ScenarioFiles  # (the documents themselves, not copies: all_summary.txt prints them per scenario)


def _no_conversation(result: CallResult | Mapping[str, Any]) -> bool:
    return (result.no_conversation if isinstance(result, CallResult) else result.get("no_conversation")) is True


def result_fields(result: CallResult | Mapping[str, Any]) -> tuple[str, int, str | None, Mapping[str, Any]]:
    """call_id, version, run_id and evaluation of a published result (typed, or as decoded JSON)."""
    if isinstance(result, CallResult):
        return result.call_id, result.version, result.run_id, result.evaluation
    evaluation = result.get("evaluation")
    return str(result["call_id"]), int(result.get("version") or 0), result.get("run_id"), evaluation or {}


@dataclass(slots=True)
class RunSummary:
    """The all_summary aggregates of one run, kept up to date as its calls' results arrive."""

    run_id: str | None = None
    # The run-wide floor of agent turns (the harness's --min-agent-turns); None: each scenario's own.
    min_agent_turns: int | None = None
    totals: Tally = field(default_factory=Tally)
    domains: dict[str, Tally] = field(default_factory=dict)
    # Keyed ("call", call_id) for live results and ("file", key) for scenarios loaded from files.
    contributions: dict[tuple[str, str], _Contribution] = field(default_factory=dict)
    stalled: dict[tuple[str, str], tuple[str, int | None]] = field(default_factory=dict)  # name, floor
    files_loaded: int = 0

    def __len__(self) -> int:
        return len(self.contributions)

    def add(self, result: CallResult | Mapping[str, Any]) -> bool:
        """Fold in a call's result; a newer version replaces the call's earlier contribution.

        An older version than the one already counted (a late redelivery) changes nothing: returns False.
        """
        call_id, version, run_id, evaluation = result_fields(result)
        if self.run_id is not None and run_id != self.run_id:
            raise ValueError(f"call {call_id!r} belongs to run {run_id!r}, not {self.run_id!r}")
        known = self.contributions.get(("call", call_id))
        if known is not None and version < known.version:
            return False
        metrics, judge = split_evaluation(evaluation)
        self._put(
            ("call", call_id),
            version,
            ScenarioFiles(metrics, judge),
            fallback_name=call_id,
            no_conversation=_no_conversation(result),
        )
        return True

    def version_of(self, call_id: str) -> int | None:
        """The version of the call's result counted, None when none is."""
        known = self.contributions.get(("call", call_id))
        return known.version if known is not None else None

    def remove_call(self, call_id: str) -> None:
        """Stop counting a call's result (it left the window of the results counted)."""
        known = self.contributions.pop(("call", call_id), None)
        if known is not None:
            self._apply(known.signals, -1)
            self.stalled.pop(("call", call_id), None)

    def add_scenario_files(
        self, metrics_json: Mapping[str, Any], judge_result: Mapping[str, Any] | None = None, *, key: str | None = None
    ) -> None:
        """The resume path: one scenario from its metrics.json and judge_result.json documents.

        `key` names the scenario's directory; loading the same key again replaces it. Without a key each
        call adds a new scenario. NL-assertion verdicts come from judge_result.json, since metrics.json
        holds only their rate.
        """
        if key is None:
            key = f"#{self.files_loaded}"
        self.files_loaded += 1
        judge = judge_result if isinstance(judge_result, Mapping) else None
        self._put(("file", key), 0, ScenarioFiles(metrics_json, judge), fallback_name=key)

    def scenario_files(self) -> dict[tuple[str, str], ScenarioFiles]:
        """The documents counted, keyed as `contributions`."""
        return {key: entry.files for key, entry in self.contributions.items()}

    def _put(
        self,
        key: tuple[str, str],
        version: int,
        files: ScenarioFiles,
        *,
        fallback_name: str,
        no_conversation: bool = False,
    ) -> None:
        signals = read_scenario(files.metrics, files.judge, fallback_name, self.min_agent_turns)
        if no_conversation:  # (the result says so; a harness's metrics.json does not)
            signals = replace(signals, no_conversation=True)
        previous = self.contributions.get(key)
        if previous is not None:
            self._apply(previous.signals, -1)
        self.contributions[key] = _Contribution(version, signals, files)
        self._apply(signals, 1)
        if signals.stalled:
            self.stalled[key] = (signals.scenario_name, signals.floor)
        else:
            self.stalled.pop(key, None)

    def _apply(self, signals: ScenarioSignals, sign: int) -> None:
        self.totals.apply(signals, sign)
        domain = self.domains.setdefault(signals.domain, Tally())
        domain.apply(signals, sign)
        if domain.scenarios == 0:
            del self.domains[signals.domain]

    def summary(self) -> AllSummary:
        totals = self.totals
        samples = [ms for entry in self.contributions.values() for ms in entry.signals.latencies_ms]
        domains: tuple[DomainSummary, ...] = ()
        if len(self.domains) > 1:
            domains = tuple(self.domains[name].domain_summary(name) for name in sorted(self.domains))
        stall_warning = None
        if self.stalled:
            run_floor = DEFAULT_MIN_AGENT_TURNS if self.min_agent_turns is None else self.min_agent_turns
            stalled = sorted((name, run_floor if floor is None else floor) for name, floor in self.stalled.values())
            stall_warning = StallWarning(
                run_floor, tuple(name for name, _ in stalled), tuple(floor for _, floor in stalled)
            )
        return AllSummary(
            run_id=self.run_id,
            scenarios=totals.scenarios,
            success_rate=totals.success.rate(),
            task_success_rate=totals.task_success.rate(),
            action_match_rate=totals.action_match.rate(),
            db_state_success_rate=totals.db_state_match.rate(),
            db_state_assertion_success_rate=totals.db_state_assertions.rate(),
            nl_assertion_success_rate=totals.nl_assertions.rate(),
            judge_score_mean=totals.judge_score_mean(),
            judge_pass_rate=totals.judge_passed.rate(),
            clean_exit_rate=totals.clean_exit.rate(),
            domains=domains,
            overall_latency_stats=latency_stats(samples, empty=NO_LATENCY),
            token_usage=totals.token_usage(),
            stall_warning=stall_warning,
            no_conversation_scenarios=totals.no_conversation,
        )
