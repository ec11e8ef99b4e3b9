"""Hallucination: agent statements not supported by what the agent was given or told.

Heuristic (used when no LLM judge answered):
- **Fabrication (major).** Every fact-like figure an agent turn states (see `scorers.text`: prices,
  times, percents, durations, numbers of 3+ digits) must appear in the grounding: the agent
  configuration (prompt and flow), the call's variables (keys and values), knowledge base passages
  (`kb.retrieval`, every retrieval, not only the first 50 that knowledge base recall considers), tool
  results (`tool.call` `result`, RTVI `llm-function-call-stopped` `data.result`, agent side only: the
  simulated user's own tools tell the agent nothing) or the user's turns. Grounding may arrive before
  or after the agent states the figure, so both sides are kept as sets and compared at finalize. A
  figure stated several times, in any wording with the same canonical form ("$12.50", "12.5
  dollars"), is one fabrication. A call in which a tool completed without its result being reported
  (an RTVI `llm-function-call-stopped` with `cancelled: false` and no `result`, as Pipecat sends
  below its `FULL` report level) has no fabrication check: what the agent read from that tool is
  unknown, and every figure it quoted would count against it. Unless the call has agent-side
  `tool.call` events: those describe its tool calls, RTVI messages the same calls again (as for tool
  call accuracy, never both), and their results are the grounding. `details.figures_unchecked` counts the
  figures left unchecked, `details.tool_results_not_reported` the calls that caused it.
- **Confusion (minor).** An agent turn containing a confusion phrase ("sorry, I didn't understand",
  "could you repeat", …) is one confusion, however many such phrases it holds.
- **Contradiction (major).** Two agent turns that share 3 or more significant words where exactly one
  of them has a negation. Every such pair counts once: a turn that contradicts three earlier turns
  adds three contradictions. Each new turn is compared only with earlier turns of the opposite
  negation, found through an inverted index (significant word → agent turns), so a turn costs the
  postings of its own words rather than a scan of the whole call.

Not applicable ("The agent did not speak") when no agent turn has a word (scorers/conversation.py):
the seed lists no such case, but with nothing said there is nothing to check, and a 100 passed dead
calls.

Score: 100 − 30 × major − 10 × minor, floored at 0. Value: the number of issues. `details.issues` keeps
the first `MAX_LISTED_ISSUES` issues in the order of the agent turns that raised them (within a turn:
fabrications, then contradictions, then confusion), each `{type, severity, text, evidence}` with
`text` the agent's turn (cut to `EXCERPT_CHARS`); the counts in `details` cover every issue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from models.call_state import CallState, Record
from models.events import Event, KbRetrieval, Rtvi, ToolCall, Turn
from models.results import MetricResult
from scorers.conversation import AGENT_DID_NOT_SPEAK, agent_spoke
from scorers.qa.base import QaMetric
from scorers.qa.tool_calls import FUNCTION_CALL_STOPPED, result_not_reported, rtvi_function_call
from scorers.text import agent_configuration_figures, figures, grounding_keys, json_text, reading

MAJOR_PENALTY = 30
MINOR_PENALTY = 10
MAX_LISTED_ISSUES = 20
MIN_SHARED_WORDS_FOR_CONTRADICTION = 3
EXCERPT_CHARS = 200

GROUNDING_SOURCES = "the agent configuration, variables, knowledge base, tool results or what the user said"

# Issue types and severities, as the LLM judge names them.
FABRICATION, CONTRADICTION, CONFUSION = "fabrication", "contradiction", "confusion"
MAJOR, MINOR = "major", "minor"
_TYPE_ORDER = {FABRICATION: 0, CONTRADICTION: 1, CONFUSION: 2}


def excerpt(text: str) -> str:
    collapsed = " ".join(text.split())
    if len(collapsed) > EXCERPT_CHARS:
        return collapsed[: EXCERPT_CHARS - 1] + "…"
    return text if collapsed == text else collapsed  # the turn's own string: held once, not twice


def call_grounding(call: CallState) -> frozenset[str]:
    """The figures of what the call started with: its agent configuration (prompt and flow) and its
    variables, keys and values. (A prompt or flow shared by many calls is read once.)"""
    config = call.agent_config
    keys = figures(json_text(call.variables)).keys
    if config is not None:
        keys = (
            keys
            | agent_configuration_figures(config.prompt or "").keys
            | agent_configuration_figures(json_text(config.flow)).keys
        )
    return keys


class Claim(Record):
    """The first time the agent stated a fact (by canonical form)."""

    said: str
    keys: tuple[str, ...]
    turn: int  # index of the agent's turn in call.turns
    text: str


@dataclass(slots=True)
class HallucinationAcc:
    grounding: set[str] = field(default_factory=set)
    claims: dict[str, Claim] = field(default_factory=dict)  # canonical fact → first statement
    # Agent turns by significant word, split by whether the turn has a negation.
    negated_turns: dict[str, list[int]] = field(default_factory=dict)
    plain_turns: dict[str, list[int]] = field(default_factory=dict)
    contradictions: int = 0
    confusions: int = 0
    tool_results_not_reported: int = 0
    tool_call_events: int = 0  # agent side
    # The first MAX_LISTED_ISSUES of each kind decided while the call runs, as (turn, issue).
    listed_contradictions: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    listed_confusions: list[tuple[int, dict[str, str]]] = field(default_factory=list)


class Hallucination(QaMetric):
    name = "hallucination"
    label = "Hallucination"
    value_meaning = "Number of issues found"
    default_threshold = 70
    judge_kind = "llm"
    # (Not `call.started`: what it grounds, the agent configuration and the variables, the call keeps,
    # and they are read at finalize. Folded here they were lost with a discarded attempt.)
    handles = frozenset({"turn", "kb.retrieval", "tool.call", "rtvi"})
    rtvi_messages = frozenset({FUNCTION_CALL_STOPPED})

    def start(self) -> HallucinationAcc:
        return HallucinationAcc()

    # ------------------------------------------------------------------------------------ update

    def update(self, acc: HallucinationAcc, event: Event, call: CallState) -> None:
        if isinstance(event, Turn):
            if event.data.role == "user":
                acc.grounding |= figures(event.data.text).keys
            else:
                self._agent_turn(acc, len(call.turns) - 1, event.data.text, call)
        elif isinstance(event, KbRetrieval):
            for passage in event.data.passages:
                acc.grounding |= grounding_keys(passage)
        elif isinstance(event, ToolCall):
            if event.data.side == "agent":
                acc.tool_call_events += 1
                acc.grounding |= grounding_keys(json_text(event.data.result))
        elif isinstance(event, Rtvi):
            data = rtvi_function_call(event)
            if data is not None and event.data.message.type == FUNCTION_CALL_STOPPED:
                if result_not_reported(data):
                    acc.tool_results_not_reported += 1
                else:
                    acc.grounding |= grounding_keys(json_text(data.get("result")))

    def _agent_turn(self, acc: HallucinationAcc, turn: int, text: str, call: CallState) -> None:
        for fact in figures(text).facts:
            if fact.canonical not in acc.claims:
                acc.claims[fact.canonical] = Claim(fact.said, fact.keys, turn, excerpt(text))

        read = reading(text)
        turn_words = set(read.significant)
        negated = read.negated
        self._contradictions(acc, turn, turn_words, negated, text, call)
        own_index = acc.negated_turns if negated else acc.plain_turns
        for word in turn_words:
            own_index.setdefault(word, []).append(turn)

        phrases = read.confusion
        if phrases:
            acc.confusions += 1
            if len(acc.listed_confusions) < MAX_LISTED_ISSUES:
                issue = {
                    "type": CONFUSION,
                    "severity": MINOR,
                    "text": excerpt(text),
                    "evidence": f'confusion phrase "{phrases[0]}"',
                }
                acc.listed_confusions.append((turn, issue))

    @staticmethod
    def _contradictions(
        acc: HallucinationAcc, turn: int, turn_words: set[str], negated: bool, text: str, call: CallState
    ) -> None:
        # Only earlier turns of the opposite negation can contradict this one.
        opposite = acc.plain_turns if negated else acc.negated_turns
        if not opposite:
            return
        shared: dict[int, int] = {}
        for word in turn_words:
            for earlier in opposite.get(word, ()):
                shared[earlier] = shared.get(earlier, 0) + 1
        if not shared:
            return
        for earlier in sorted(e for e, n in shared.items() if n >= MIN_SHARED_WORDS_FOR_CONTRADICTION):
            acc.contradictions += 1
            if len(acc.listed_contradictions) < MAX_LISTED_ISSUES:
                earlier_text = call.turns[earlier].text
                common = sorted(turn_words.intersection(reading(earlier_text).significant))
                issue = {
                    "type": CONTRADICTION,
                    "severity": MAJOR,
                    "text": excerpt(text),
                    "evidence": f'contradicts an earlier agent turn: "{excerpt(earlier_text)}" '
                    f"(shared words: {', '.join(common)})",
                }
                acc.listed_contradictions.append((turn, issue))

    # ---------------------------------------------------------------------------------- finalize

    @staticmethod
    def _fabrications(acc: HallucinationAcc, call: CallState) -> list[tuple[int, dict[str, str]]]:
        grounding = acc.grounding | call_grounding(call)
        return [
            (
                claim.turn,
                {
                    "type": FABRICATION,
                    "severity": MAJOR,
                    "text": claim.text,
                    "evidence": f'"{claim.said}" is not in {GROUNDING_SOURCES}',
                },
            )
            for claim in acc.claims.values()
            if not any(key in grounding for key in claim.keys)
        ]

    def finalize(self, acc: HallucinationAcc, call: CallState) -> MetricResult:
        if not agent_spoke(call):  # (no statement to check: a score of 100 would pass a dead call)
            return self.not_applicable(AGENT_DID_NOT_SPEAK)
        unreported = 0 if acc.tool_call_events else acc.tool_results_not_reported
        checked = not unreported
        fabrications = self._fabrications(acc, call) if checked else []
        listed = sorted(
            fabrications[:MAX_LISTED_ISSUES] + acc.listed_contradictions + acc.listed_confusions,
            key=lambda item: (item[0], _TYPE_ORDER[item[1]["type"]]),
        )
        issues: list[dict[str, Any]] = [dict(issue) for _, issue in listed[:MAX_LISTED_ISSUES]]

        major = len(fabrications) + acc.contradictions
        minor = acc.confusions
        total = major + minor
        score = max(0, 100 - MAJOR_PENALTY * major - MINOR_PENALTY * minor)
        return self.scored(
            total,
            score,
            issues=issues,
            total=total,
            major=major,
            minor=minor,
            fabrications=len(fabrications),
            contradictions=acc.contradictions,
            confusions=acc.confusions,
            figures_unchecked=0 if checked else len(acc.claims),
            tool_results_not_reported=unreported,
        )
