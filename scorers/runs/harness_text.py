"""all_summary.txt as the harness writes it, byte for byte, from a run's scenarios in directory order.

The file: totals, one block per scenario, the pooled latency statistics, the stall warning, the
composite and per-signal rates, token usage, then the per-domain blocks (only when the run spans more
than one domain). Figures are computed with the harness's own arithmetic (list sums in scenario order,
`sum / len * 100`), since a different order of float operations can change a printed digit.

The one line that differs: how to retry stalled scenarios names callqa's way, not the harness's
`--resume <TIMESTAMP>`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby
from typing import Any

from scorers.runs.harness_fold import RunFold, ScenarioFiles, Stalled, Verdicts, fold_run
from scorers.runs.run_files import pooled_latencies_ms

RULE = "=" * 80
SUBRULE = "-" * 80
# callqa scores calls and does not place them: a stalled scenario is retried by running its call again
# and scoring the new call. Callers may name their own command.
DEFAULT_RETRY_COMMAND = "callqa replay <event log of the calls run again>"
STALLED_MARK = "  [COUNTED AS FAILURE: insufficient agent turns / stalled — excluded from per-signal rates]"


def _rate(values: Sequence[bool | float]) -> float:
    return sum(values) / len(values)


def _scenario_block(metrics: Mapping[str, Any]) -> list[str]:
    lines = [f"\n====== {metrics.get('scenario_name')} ======:", f"  Is successful: {metrics.get('is_successful')}"]
    if "is_task_successful" in metrics:
        lines.append(f"  Is task-successful (excl. clean_exit): {metrics['is_task_successful']}")
    lines.append(f"    Action-list match: {metrics.get('is_action_match')}")
    if "db_state_match" in metrics:
        lines.append(f"    DB-state match: {metrics['db_state_match']}")
    if (rate := metrics.get("db_state_assertion_pass_rate")) is not None and "db_state_assertion_pass_rate" in metrics:
        lines.append(f"    DB-state-assertion pass rate: {rate * 100:.2f}%")
    if (rate := metrics.get("nl_assertion_pass_rate")) is not None:
        lines.append(f"    NL-assertion pass rate: {rate * 100:.2f}%")
    if (score := metrics.get("judge_score")) is not None:
        lines.append(f"    Judge score: {score:.2f}")
    if "judge_passed" in metrics:
        lines.append(f"    Judge passed: {metrics['judge_passed']}")
    failed = (metrics.get("success_breakdown") or {}).get("failed") or []
    if failed:
        lines.append(f"    Failed signals: {', '.join(failed)}")
    turns = metrics.get("total_turns", 0)
    lines.append(f"  Turns: {turns}")
    if metrics.get("insufficient_agent_turns"):
        lines.append(STALLED_MARK)
    duration = metrics.get("scenario_duration", 0.0)
    lines.append(f"  Duration: {duration:.1f}s")
    if duration > 0:
        lines.append(f"  Turns/min: {turns / (duration / 60):.1f}")
    stats = metrics.get("latency_stats") or {}
    count = stats.get("count", 0)
    lines.append(f"  Latency Measurements: {count}")
    if count > 0:
        for label, key in (
            ("Mean", "mean_ms"),
            ("P50", "p50_ms"),
            ("P95", "p95_ms"),
            ("Min", "min_ms"),
            ("Max", "max_ms"),
        ):
            lines.append(f"    {label}: {stats[key]:.1f}ms")
    return lines


def _overall_latency(scenarios: Sequence[ScenarioFiles]) -> list[str]:
    ordered = sorted(pooled_latencies_ms(scenario.metrics for scenario in scenarios))
    n = len(ordered)
    # Each figure is -1 when nothing was measured; the count is then 0.
    figures = (sum(ordered) / n, ordered[n // 2], ordered[int(n * 0.95)], ordered[0], ordered[-1]) if n else (-1,) * 5
    lines = ["\n\nOverall Latency Statistics:", SUBRULE, f"  Total Measurements: {n}"]
    for label, value in zip(("Mean", "P50", "P95", "Min", "Max"), figures, strict=True):
        lines.append(f"  {label}: {value:.1f}ms")
    return lines


def _stall_warning(stalled: Sequence[Stalled], retry_command: str) -> list[str]:
    """The harness's warning; scenarios with different floors of their own get one warning per floor."""
    lines: list[str] = []
    by_floor = sorted(stalled, key=lambda entry: entry.floor)  # (stable: scenario order within a floor)
    for index, (floor, group) in enumerate(groupby(by_floor, key=lambda entry: entry.floor)):
        names = [entry.scenario_name for entry in group]
        lines += [
            ("" if index else "\n\n") + f"WARNING: {len(names)} scenario(s) had fewer than {floor} agent turn(s) "
            "(likely stalled LLM / server hang) and were counted as failures.",
            f"Stalled scenarios: {', '.join(names)}",
        ]
    lines.append(f"Run them again and score the new calls ({retry_command}) to retry them.")
    return lines


def _composite_rates(run: Verdicts) -> list[str]:
    if not run.success:
        return ["\n\nOverall Success Rate: N/A (no scenarios had any applicable signal)"]
    lines = [
        f"\n\nOverall Success Rate: {_rate(run.success) * 100:.2f}% ({sum(run.success)}/{len(run.success)} "
        "scenarios — strict conjunction across all applicable signals)"
    ]
    if run.task_success:
        lines.append(
            f"Task Success Rate (excl. clean_exit): {_rate(run.task_success) * 100:.2f}% "
            f"({sum(run.task_success)}/{len(run.task_success)} scenarios)"
        )
    return lines


# (label padded as the harness pads it, bucket, unit); the clean-exit label is not padded in the harness.
_SIGNAL_LINES = (
    ("Action-list match:           ", "action_match", "scenarios"),
    ("DB-State match:              ", "db_state", "scenarios"),
    ("DB-State-Assertion pass:     ", "db_state_assertion", "predicates"),
    ("NL-Assertion pass:           ", "nl_assertion", "assertions"),
    ("Judge score mean:            ", "judge_score", None),
    ("Judge passed (>= threshold): ", "judge_pass", "scenarios"),
    ("Clean exit: ", "clean_exit", "scenarios"),
)


def _signal_rates(run: Verdicts) -> list[str]:
    lines = ["\nPer-signal pass rates:"]
    for label, bucket, unit in _SIGNAL_LINES:
        values = getattr(run, bucket)
        if not values:
            continue
        if unit is None:
            lines.append(f"  {label}{_rate(values):.3f} (across {len(values)} scenarios)")
        else:
            lines.append(f"  {label}{_rate(values) * 100:6.2f}% ({sum(values)}/{len(values)} {unit})")
    return lines


def _token_usage(tokens: Mapping[str, Mapping[str, int]]) -> list[str]:
    if tokens["agent"]["n_calls"] + tokens["user"]["n_calls"] <= 0:
        return []  # (no token events: the block is left out)
    lines = ["\n\nToken Usage:", SUBRULE]
    grand_total = 0
    for side in ("agent", "user"):
        figures = tokens[side]
        side_total = figures["prompt"] + figures["completion"]
        grand_total += side_total
        lines.append(
            f"  {side}: {figures['n_calls']} call(s), prompt={figures['prompt']:,}, "
            f"completion={figures['completion']:,}, total={side_total:,}"
        )
    lines.append(f"  Run total: {grand_total:,} tokens")
    return lines


# (heading, bucket, whether the passed count prints with `:g` as the harness's first two blocks do)
_DOMAIN_BLOCKS = (
    ("Per-Domain Success Rate:", "success", True),
    ("Per-Domain Task Success Rate (excl. clean_exit):", "task_success", True),
    ("Per-Domain DB-State Match Rate:", "db_state", False),
    ("Per-Domain NL-Assertion Pass Rate:", "nl_assertion", False),
    ("Per-Domain DB-State-Assertion Pass Rate:", "db_state_assertion", False),
)


def _domain_blocks(fold: RunFold) -> list[str]:
    lines: list[str] = []
    for index, (heading, bucket, general) in enumerate(_DOMAIN_BLOCKS):
        domains = fold.domains_with(bucket)
        if len(domains) <= 1:
            continue  # (one domain would repeat the run's rate)
        lines += [("\n\n" if index == 0 else "\n") + heading, SUBRULE]
        for domain, values in domains.items():
            passed = format(sum(values), "g") if general else str(sum(values))
            lines.append(f"  {domain}: {_rate(values) * 100:.2f}% ({passed}/{len(values)})")
    return lines


def render_harness_summary(
    scenarios: Sequence[ScenarioFiles],
    *,
    min_agent_turns: int | None = None,
    retry_command: str = DEFAULT_RETRY_COMMAND,
) -> str:
    """The all_summary.txt of these scenarios (in the order given: the run's directory order).

    `min_agent_turns`: the run-wide floor (the harness's flag), or None for each scenario's own.
    """
    fold = fold_run(scenarios, min_agent_turns)
    total_turns = sum(scenario.metrics.get("total_turns", 0) for scenario in scenarios)
    total_minutes = sum(scenario.metrics.get("scenario_duration", 0.0) for scenario in scenarios) / 60
    lines = [
        "EVALUATION SUMMARY",
        RULE,
        "",
        f"Total Scenarios: {len(scenarios)}",
        f"Total Duration: {total_minutes:.1f}mins",
        f"Total Turns: {total_turns}",
        "",
        "Per-Scenario Results:",
        SUBRULE,
    ]
    for scenario in scenarios:
        lines += _scenario_block(scenario.metrics)
    lines += _overall_latency(scenarios)
    if fold.stalled:
        lines += _stall_warning(fold.stalled, retry_command)
    lines += _composite_rates(fold.run)
    lines += _signal_rates(fold.run)
    lines += _token_usage(fold.tokens)
    lines += _domain_blocks(fold)
    return "\n".join(lines) + "\n"
