"""The composite verdict of a scenario call: `success_breakdown`, `is_successful`,
`is_task_successful` and the stalled-agent floor (`insufficient_agent_turns`).

Each of the six SuccessSignal values reads one field of the metrics document:
is_action_match (bool; "N/A" or absent: no verdict), db_state_match (bool), db_state_assertion and
nl_assertion (their `_pass_rate`, which passes only at 1.0 — every assertion must hold), judge_passed
(bool), clean_exit (bool).

The whitelist is the scenario's `success_signals`; without one (or without a scenario, as on
production calls) it is every signal, as NeMo's `success_signals=None`. Names that are no
SuccessSignal cannot gate anything and are left out here (a scorer must not fail a call over its
input). Buckets list signal values in SuccessSignal order:
- passed / failed / not_applicable — whitelisted signals that are true / false / without a verdict;
- excluded — signals outside the whitelist that do have a verdict (diagnostics only).
`is_successful` is the strict AND over whitelisted signals with a verdict ("N/A" when none has);
`is_task_successful`, written whenever `is_successful` is a bool, holds when `failed` contains nothing
other than clean_exit.

Stalled agent: on a scenario call with `min_agent_turns` > 0 (default 2), fewer agent LLM calls than
the floor (`token_usage.agent.n_calls`, else the agent's turns when no agent token usage was
reported: `metrics_json.agent_llm_calls`) force `is_successful: false`, `is_task_successful: false` and
add `insufficient_agent_turns: true` with the floor it fell short of (`min_agent_turns`, callqa's own
key: scenarios carry their own floors, the harness's runner has one), whatever the signals say. `success_breakdown`
still holds the buckets computed from the signals, as the harness writes them, so the individual measurements stay
readable for triage; "skipped in every per-signal bucket" is the run summary's rule: it counts the
call as a failure in the composite rates and leaves it out of every per-signal rate, keyed on
`insufficient_agent_turns`. Production calls (no scenario) have no floor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from models.events import ScenarioSpec
from models.scenario import SuccessSignal, composite_is_successful

# A pass rate gates the composite only when every assertion held.
PASS_RATE_GATE = 1.0


def rate_verdict(rate: Any) -> bool | None:
    if isinstance(rate, bool) or not isinstance(rate, (int, float)):
        return None
    return rate >= PASS_RATE_GATE


def _bool_verdict(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def signal_verdicts(document: Mapping[str, Any]) -> dict[SuccessSignal, bool | None]:
    """Each signal's verdict read from the metrics document; None = no verdict."""
    return {
        SuccessSignal.ACTION_MATCH: _bool_verdict(document.get("is_action_match")),
        SuccessSignal.DB_STATE_MATCH: _bool_verdict(document.get("db_state_match")),
        SuccessSignal.DB_STATE_ASSERTION: rate_verdict(document.get("db_state_assertion_pass_rate")),
        SuccessSignal.NL_ASSERTION: rate_verdict(document.get("nl_assertion_pass_rate")),
        SuccessSignal.JUDGE_PASSED: _bool_verdict(document.get("judge_passed")),
        SuccessSignal.CLEAN_EXIT: _bool_verdict(document.get("clean_exit")),
    }


def whitelist(scenario: ScenarioSpec | None) -> tuple[SuccessSignal, ...]:
    if scenario is None or scenario.success_signals is None:
        return tuple(SuccessSignal)
    known = {s.value for s in SuccessSignal}
    return tuple(dict.fromkeys(SuccessSignal(name) for name in scenario.success_signals if name in known))


def success_breakdown(
    verdicts: Mapping[SuccessSignal, bool | None], gating: tuple[SuccessSignal, ...]
) -> dict[str, list[str]]:
    buckets: dict[str, list[str]] = {"passed": [], "failed": [], "not_applicable": [], "excluded": []}
    for signal in SuccessSignal:
        verdict = verdicts.get(signal)
        if signal not in gating:
            if verdict is not None:
                buckets["excluded"].append(signal.value)
        elif verdict is None:
            buckets["not_applicable"].append(signal.value)
        else:
            buckets["passed" if verdict else "failed"].append(signal.value)
    return buckets


def is_stalled(scenario: ScenarioSpec | None, agent_llm_calls: int) -> bool:
    return scenario is not None and scenario.min_agent_turns > 0 and agent_llm_calls < scenario.min_agent_turns


def success_fields(document: Mapping[str, Any], scenario: ScenarioSpec | None, agent_llm_calls: int) -> dict[str, Any]:
    """success_breakdown, is_successful, is_task_successful (when is_successful is a bool) and
    insufficient_agent_turns (when the agent stalled), from the signals already in `document`."""
    verdicts = signal_verdicts(document)
    gating = whitelist(scenario)
    breakdown = success_breakdown(verdicts, gating)
    fields: dict[str, Any] = {"success_breakdown": breakdown}
    if scenario is not None and is_stalled(scenario, agent_llm_calls):
        fields["is_successful"] = False
        fields["is_task_successful"] = False
        fields["insufficient_agent_turns"] = True
        fields["min_agent_turns"] = scenario.min_agent_turns  # (stalled: there is one)
        return fields
    is_successful: bool | Literal["N/A"] = composite_is_successful(gating, verdicts)
    fields["is_successful"] = is_successful
    if isinstance(is_successful, bool):
        fields["is_task_successful"] = all(name == SuccessSignal.CLEAN_EXIT for name in breakdown["failed"])
    return fields
