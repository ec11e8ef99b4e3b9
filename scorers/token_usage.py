"""LLM token usage per side, from RTVI `metrics` messages.

Each entry of a `metrics` message's `data.tokens` list is one LLM call on that side: n_calls + 1,
prompt += prompt_tokens, completion += completion_tokens. A count that is not a finite, non-negative
number adds nothing (the call itself still counts).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models.call_state import CallState
from models.events import Rtvi
from scorers.base import Scorer
from scorers.numbers import count


@dataclass(slots=True)
class SideUsage:
    n_calls: int = 0
    prompt: int = 0
    completion: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"n_calls": self.n_calls, "prompt": self.prompt, "completion": self.completion}


@dataclass(slots=True)
class TokenUsageAcc:
    agent: SideUsage = field(default_factory=SideUsage)
    user: SideUsage = field(default_factory=SideUsage)

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {"agent": self.agent.as_dict(), "user": self.user.as_dict()}


class TokenUsage(Scorer):
    name = "token_usage"
    handles = frozenset({"rtvi"})
    rtvi_messages = frozenset({"metrics"})

    def start(self) -> TokenUsageAcc:
        return TokenUsageAcc()

    def update(self, acc: TokenUsageAcc, event: Rtvi, call: CallState) -> None:
        message = event.data.message
        if message.type != "metrics" or not isinstance(message.data, dict):
            return
        usage = acc.agent if event.data.side == "agent" else acc.user
        tokens = message.data.get("tokens")
        for entry in tokens if isinstance(tokens, list) else ():
            if isinstance(entry, dict):
                usage.n_calls += 1
                usage.prompt += count(entry.get("prompt_tokens"))
                usage.completion += count(entry.get("completion_tokens"))
