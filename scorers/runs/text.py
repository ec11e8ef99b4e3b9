"""callqa's compact text of a run's rates (one line a rate), and the parser that reads its rates back.
all_summary.txt itself is written as the harness writes it: scorers/runs/harness_text.py.

Every rate prints one way, `<label>: <percent with 2 decimals>% (<passed>/<total>)`, e.g.
`Overall Success Rate: 66.67% (2/3)`; a rate with an empty bucket is left out. The judge score mean
prints as `Judge score mean: 0.8500 (n=2)`. Per-domain rates are indented under `  <domain> (<n>
scenario(s)):` inside the per-domain block.
"""

from __future__ import annotations

import re

from scorers.runs.report import AllSummary, Rate, SideTokens

# Runner name → label in all_summary.txt, in the order the file prints them.
LABELS = {
    "success_rate": "Overall Success Rate",
    "task_success_rate": "Task Success Rate (excl. clean_exit)",
    "action_match_rate": "Action-list match",
    "db_state_success_rate": "DB-State match",
    "db_state_assertion_success_rate": "DB-State-Assertion pass",
    "nl_assertion_success_rate": "NL-Assertion pass",
    "judge_score_mean": "Judge score mean",
    "judge_pass_rate": "Judge passed (>= threshold)",
    "clean_exit_rate": "Clean exit",
}
TITLE = "EVALUATION SUMMARY"
DOMAINS_HEADING = "Per-Domain Breakdown"
LATENCY_HEADING = "Overall Latency Statistics"
TOKENS_HEADING = "Token Usage"
RUN_TOTAL_LABEL = "Run total"
RULE = "=" * 80
SUBRULE = "-" * 80
LATENCY_FIELDS = ("count", "mean_ms", "p50_ms", "p95_ms", "min_ms", "max_ms")
# Suggested until the CLI names its own resume command; callers may pass theirs.
DEFAULT_RESUME_COMMAND = "callqa replay <event log of these calls>"
# Key of a per-domain rate in parse_all_summary's answer.
DOMAIN_KEY = "{domain} / {label}"


def format_rate(rate: Rate) -> str:
    return f"{100 * rate.value:.2f}% ({rate.passed}/{rate.total})"


def _figure(value: float | int) -> str:
    return str(value) if isinstance(value, int) else f"{value:.1f}"


def _tokens(side: SideTokens) -> str:
    return f"n_calls={side.n_calls} prompt={side.prompt} completion={side.completion} total={side.total}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def render_all_summary(summary: AllSummary, *, resume_command: str = DEFAULT_RESUME_COMMAND) -> str:
    lines = [TITLE, RULE]
    if summary.run_id is not None:
        lines.append(f"Run: {summary.run_id}")
    lines += [f"Total Scenarios: {summary.scenarios}", ""]

    rates = summary.rates()
    for name, label in LABELS.items():
        if name == "judge_score_mean":
            if summary.judge_score_mean is not None:
                lines.append(f"{label}: {summary.judge_score_mean.value:.4f} (n={summary.judge_score_mean.count})")
        elif (rate := rates[name]) is not None:
            lines.append(f"{label}: {format_rate(rate)}")

    if summary.domains:
        lines += ["", f"{DOMAINS_HEADING}:", SUBRULE]
        for domain in summary.domains:
            lines.append(f"  {domain.domain} ({_plural(domain.scenarios, 'scenario')}):")
            for name, rate in domain.rates().items():
                if rate is not None:
                    lines.append(f"    {LABELS[name]}: {format_rate(rate)}")

    lines += ["", f"{LATENCY_HEADING}:", SUBRULE]
    lines += [f"  {field}: {_figure(summary.overall_latency_stats[field])}" for field in LATENCY_FIELDS]

    if summary.token_usage is not None:
        usage = summary.token_usage
        lines += ["", f"{TOKENS_HEADING}:", SUBRULE]
        lines += [f"  agent: {_tokens(usage.agent)}", f"  user: {_tokens(usage.user)}"]
        lines.append(f"  {RUN_TOTAL_LABEL}: {_tokens(usage.run_total)}")

    if summary.stall_warning is not None:
        stalled = summary.stall_warning
        floors = set(stalled.floors) or {stalled.min_agent_turns}
        # The harness's sentence states its runner's one floor; scenarios here may each have their own.
        fewer = f"fewer than {floors.pop()} agent turn(s)" if len(floors) == 1 else "fewer agent turns than their floor"
        lines += [
            "",
            f"WARNING: {len(stalled.scenarios)} scenario(s) had {fewer} (insufficient_agent_turns) and were counted "
            "as failures.",
        ]
        if len(set(stalled.floors)) > 1:
            lines += [
                f"  {name} (fewer than {floor})" for name, floor in zip(stalled.scenarios, stalled.floors, strict=False)
            ]
        else:
            lines += [f"  {name}" for name in stalled.scenarios]
        lines.append(f"Resume them with: {resume_command}")
    return "\n".join(lines) + "\n"


_RATE_LINE = re.compile(r"^(?P<indent> *)(?P<label>\S.*?): \d+\.\d{2}% \((?P<passed>\d+)/(?P<total>\d+)\)$")
_MEAN_LINE = re.compile(r"^(?P<label>.+?): (?P<mean>-?\d+\.\d+) \(n=\d+\)$")
_DOMAIN_LINE = re.compile(r"^  (?P<domain>.*) \(\d+ scenarios?\):$")  # a domain may be empty


def parse_all_summary(text: str) -> dict[str, float]:
    """Label → rate for every rate in an all_summary.txt (and the judge score mean).

    A rate is read from its passed/total, so it is exact. Per-domain rates are keyed
    `"<domain> / <label>"`.
    """
    found: dict[str, float] = {}
    domain: str | None = None
    in_domains = False
    for line in text.splitlines():
        if not line.startswith(" "):
            in_domains = line == f"{DOMAINS_HEADING}:" or (in_domains and line == SUBRULE)
            domain = None
        if in_domains and (heading := _DOMAIN_LINE.match(line)):
            domain = heading["domain"]
            continue
        if rate := _RATE_LINE.match(line):
            label = rate["label"]
            if domain is not None and rate["indent"]:
                label = DOMAIN_KEY.format(domain=domain, label=label)
            found[label] = int(rate["passed"]) / int(rate["total"])
        elif (mean := _MEAN_LINE.match(line)) and mean["label"] == LABELS["judge_score_mean"]:
            found[mean["label"]] = float(mean["mean"])
    return found
