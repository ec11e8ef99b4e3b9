"""How the conversation ended: `clean_exit` under the scenario's conversation-end policy.

Evidence, gathered while the call runs (and from its `call.ended`):
- `end_conversation_tool_called` — the agent ended the conversation: a `tool.call` named
  EndConversationTool on the agent side, an agent-side RTVI `llm-function-call-in-progress` naming it,
  an agent-side RTVI server-message whose text holds `<exit>…</exit>`, `call.ended` with
  `end_conversation_tool_called: true`, or, when `call.ended` does not say, stop_reason "[EXIT]" (the
  harness records it only when the agent's exit arrived).
- `simulator_end_reported` — the simulated user reported its end: a user-side RTVI server-message
  holding `<exit>…</exit>`, `call.ended` with `simulator_end_reported: true`, or, when `call.ended`
  does not say, stop_reason "[SIMULATOR_EXIT]".
A stop reason is read as evidence only where the producer gives no flag: a `false` flag is its own
answer to the question, which the stop reason only guesses at. A `false` flag never erases evidence
seen in the call's own events.

Policies (`scenario.conversation_end_policy`, "tool-only" when the call has no scenario):
- tool-only: only the agent's EndConversationTool passes.
- valid-terminal-state: also the simulator's reported end, or "[INACTIVITY_TIMEOUT]" after a final
  user turn. An inactivity timeout after a final agent turn fails; the overall "[TIMEOUT]" is never
  evidence by itself.

When several kinds of evidence hold, `conversation_end_reason` names the strongest one the policy
accepts, in this order: the agent's tool, the simulator's end, the inactivity timeout after the user's
final turn. With none accepted, the reason names the policy's failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from models.call_state import CallState
from models.events import Event, Rtvi, ToolCall
from scorers.base import Scorer
from scorers.evaluation.server_messages import SERVER_MESSAGE, has_exit_tag, server_message_text
from scorers.inactivity import INACTIVITY_STOP_REASON

END_CONVERSATION_TOOL = "EndConversationTool"
FUNCTION_CALL_IN_PROGRESS = "llm-function-call-in-progress"
AGENT_EXIT_STOP_REASON = "[EXIT]"
SIMULATOR_EXIT_STOP_REASON = "[SIMULATOR_EXIT]"

Policy = Literal["tool-only", "valid-terminal-state"]
TOOL_ONLY: Policy = "tool-only"
VALID_TERMINAL_STATE: Policy = "valid-terminal-state"
DEFAULT_POLICY: Policy = TOOL_ONLY

# conversation_end_reason values (the metrics dictionary's table).
AGENT_END_CONVERSATION_TOOL = "agent_end_conversation_tool"
SIMULATOR_REPORTED_END = "simulator_reported_end"
INACTIVITY_TIMEOUT_AFTER_USER_FINAL_TURN = "inactivity_timeout_after_user_final_turn"
AGENT_END_CONVERSATION_TOOL_MISSING = "agent_end_conversation_tool_missing"
NO_VALID_TERMINAL_EVIDENCE = "no_valid_terminal_evidence"


@dataclass(slots=True)
class ConversationEndAcc:
    agent_ended: bool = False
    simulator_ended: bool = False


def _agent_called_end_tool(event: Event) -> bool:
    if isinstance(event, ToolCall):
        return event.data.side == "agent" and event.data.name == END_CONVERSATION_TOOL
    if isinstance(event, Rtvi) and event.data.side == "agent":
        message = event.data.message
        return (
            message.type == FUNCTION_CALL_IN_PROGRESS
            and isinstance(message.data, dict)
            and message.data.get("function_name") == END_CONVERSATION_TOOL
        )
    return False


class ConversationEnd(Scorer):
    name = "conversation_end"
    handles = frozenset({"tool.call", "rtvi"})
    rtvi_messages = frozenset({FUNCTION_CALL_IN_PROGRESS, SERVER_MESSAGE})

    def start(self) -> ConversationEndAcc:
        return ConversationEndAcc()

    def update(self, acc: ConversationEndAcc, event: Event, call: CallState) -> None:
        if _agent_called_end_tool(event):
            acc.agent_ended = True
            return
        if isinstance(event, Rtvi):
            text = server_message_text(event)
            if text is not None and has_exit_tag(text):
                if event.data.side == "agent":
                    acc.agent_ended = True
                else:
                    acc.simulator_ended = True


def conversation_end_verdict(
    policy: Policy, tool_called: bool, simulator_end: bool, stop_reason: str | None, last_speaker: str | None
) -> tuple[bool, str]:
    """(clean_exit, conversation_end_reason) for one policy and the call's evidence."""
    if tool_called:
        return True, AGENT_END_CONVERSATION_TOOL
    if policy == TOOL_ONLY:
        return False, AGENT_END_CONVERSATION_TOOL_MISSING
    if simulator_end:
        return True, SIMULATOR_REPORTED_END
    if stop_reason == INACTIVITY_STOP_REASON and last_speaker == "user":
        return True, INACTIVITY_TIMEOUT_AFTER_USER_FINAL_TURN
    return False, NO_VALID_TERMINAL_EVIDENCE


def _said_or_read(flag: bool | None, stop_reason_says: bool) -> bool:
    """What `call.ended`'s flag says, or, when it says nothing, what its stop reason implies."""
    return flag if flag is not None else stop_reason_says


def conversation_end_fields(acc: ConversationEndAcc, call: CallState) -> dict[str, Any]:
    ended = call.ended
    stop_reason = ended.stop_reason if ended is not None else None
    tool_called = acc.agent_ended or _said_or_read(
        ended.end_conversation_tool_called if ended is not None else None, stop_reason == AGENT_EXIT_STOP_REASON
    )
    simulator_end = acc.simulator_ended or _said_or_read(
        ended.simulator_end_reported if ended is not None else None, stop_reason == SIMULATOR_EXIT_STOP_REASON
    )
    policy = call.scenario.conversation_end_policy if call.scenario is not None else DEFAULT_POLICY
    last_speaker = call.turns[-1].role if call.turns else None
    clean_exit, reason = conversation_end_verdict(policy, tool_called, simulator_end, stop_reason, last_speaker)
    return {
        "clean_exit": clean_exit,
        "end_conversation_tool_called": tool_called,
        "simulator_end_reported": simulator_end,
        "conversation_end_policy": policy,
        "conversation_end_reason": reason,
    }
