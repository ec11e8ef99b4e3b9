"""Which scenario of a run stalled (too few agent LLM responses), for the run's summary.

It depends on the floor asked for:
- a run-wide floor N > 0 (the harness's `--min-agent-turns N`): `token_usage.agent.n_calls` below N, as
  the harness counts them; a scenario without that count (an old file) is not stalled;
- a run-wide floor of 0: none (the harness then counts every scenario's own verdicts);
- no run-wide floor (None): each scenario's own, as callqa scored it (`insufficient_agent_turns`, with
  the floor it fell short of in `min_agent_turns`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from models.events import DEFAULT_MIN_AGENT_TURNS


def stall_floor(metrics: Mapping[str, Any], min_agent_turns: int | None) -> int | None:
    """The floor the scenario fell short of, None when it did not stall (see the module's rule)."""
    if min_agent_turns is None:
        if metrics.get("insufficient_agent_turns") is not True:
            return None
        own = metrics.get("min_agent_turns")
        return own if type(own) is int and own > 0 else DEFAULT_MIN_AGENT_TURNS
    if min_agent_turns <= 0:
        return None
    usage = metrics.get("token_usage")
    agent = usage.get("agent") if isinstance(usage, dict) else None
    n_calls = agent.get("n_calls") if isinstance(agent, dict) else None
    # No count (an old file): unknown, so not stalled, as in the harness.
    return min_agent_turns if isinstance(n_calls, int) and n_calls < min_agent_turns else None
