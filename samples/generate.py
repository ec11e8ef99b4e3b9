"""Generate the bundled sample event log: a feed of concurrent voice-agent calls, as JSON Lines.

    python -m samples.generate --seed 7 --calls 240 --out samples/calls.jsonl

The same seed gives a byte-identical file (and manifest): everything comes from one `random.Random`,
times from a fixed origin, never from the clock. Most calls belong to one evaluation run (simulated
callers, scenarios in three domains); the rest are production calls without a scenario. The log carries
what a real feed carries: calls overlapping in time, events slightly out of order between calls, a few
events sent twice, a few batch messages, a handful of malformed lines, and calls that never end (the
inactivity sweep ends them once the other calls' event time has moved past their deadline).

How it is built: `plan_calls` decides, per call, what happens in it (task, instrumentation, faults,
ending); `CallBuilder` plays that plan into events, one small method per event kind; `assemble_log`
merges the calls into one feed and adds the duplicates, batches and malformed lines; `manifest` counts
what the tests check.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from random import Random
from typing import Any, cast

from models.db_hash import ORDER_INDEPENDENT_LIST_KEYS, db_state_hash
from models.events import RESCORE_TYPES
from models.wire import MAX_MESSAGE_BYTES
from samples import domains as d
from samples.domains import Facts, Step, Task, Tool
from scorers.inactivity import DEFAULT_ALLOWED_LATENESS_MS
from streams.partitioning import partition_for

# ------------------------------------------------------------------------------------------ constants

LOG_START_MS = 1_759_741_200_000  # 2025-10-06T09:00:00Z: the event-time origin of the feed
RUN_ID = "eval_20251006_0900"
CONTRACT_VERSION = 1

PRODUCTION_SHARE = 0.25
MEAN_ARRIVAL_GAP_MS = 14_000  # one new call every ~14 s: about five calls in progress at any time
DEFAULT_INACTIVITY_TIMEOUT_S = 120.0
# Long enough for the longest agent turn spoken without any event in between (no speaking events).
CUSTOM_INACTIVITY_TIMEOUTS_S = (90.0, 180.0, 300.0)
STALLED_INACTIVITY_TIMEOUTS_S = (45.0, 60.0)  # a stalled call's turns are short
# Calls that never end start early enough that the feed runs on well past their inactivity deadline:
# a call lasts under 3 minutes, its timeout is at most 3 minutes, plus the sweep's allowed lateness and
# a minute to spare.
NEVER_ENDED_HEADROOM_MS = 3 * 60_000 + 3 * 60_000 + DEFAULT_ALLOWED_LATENESS_MS + 60_000
NEVER_ENDED_TIMEOUTS_S = (90.0, None, 180.0, 90.0, None, 180.0)
# Gaps inside a call stay this far below its inactivity timeout, so that only the calls meant to time
# out ever do (the sweep allows 30 s of lateness on top; this margin does not rely on it).
INACTIVITY_SAFETY_MARGIN_MS = 10_000

# Bad input placed among the valid lines, one line of each kind (see `malformed`). A record over the
# message size limit is optional: its dead letter (the original bytes, twice) exceeds what a broker
# accepts by default, so it belongs in fault tests rather than in the bundled sample.
MALFORMED_KINDS = (
    "log_line",
    "truncated",
    "unknown_type",
    "missing_text",
    "string_ts",
    "bot_role",
    "empty_object",
    "future_version",
)

# The sweep of a call that never ends must happen with any of these partition counts (replay's default is 4).
CHECKED_PARTITION_COUNTS = (1, 2, 4, 8)
SWEEP_SPARE_MS = 60_000

PRODUCER_JITTER_MS = 1_200  # how far a producer may send an event late, relative to other calls
DUPLICATE_SHARE = 0.01  # of single-event lines, sent again
ADJACENT_DUPLICATE_SHARE = 0.5  # the rest arrive a few lines later
BATCHED_CALLS = 6
BATCH_MAX_SPAN_MS = 2_000

SPEECH_TO_TEXT_DELAY_MS = (150, 400)
TTS_TTFB_S = (0.12, 0.32)
LATENCY_SPIKE_CHANCE = 0.06
LLM_TTFB_S = {  # per agent: how quickly its LLM starts answering, in seconds
    "skyways-concierge-v3": (0.35, 0.8),
    "shopright-care-v2": (0.4, 0.95),
    "connectly-support-v5": (0.3, 0.7),
    "brightline-billing-v1": (1.1, 2.9),  # a slow agent: its latency scores suffer
    "maple-frontdesk-v2": (0.5, 1.3),
}
LLM_MODEL = "gpt-4o-mini"
LLM_PROCESSOR = "OpenAILLMService#0"
TTS_PROCESSOR = "CartesiaTTSService#0"
TTS_MODEL = "sonic-2"
PROCESSING_METRICS_SHARE = 0.4  # pipelines with processing metrics enabled report them next to TTFB

# Rare features: how many calls get each, per 240 calls (see `quota`).
NEVER_ENDED_PER_240 = 6
TIMEOUT_PER_240 = 6
STALLED_PER_240 = 3
SILENT_USER_PER_240 = 2
DEAD_AIR_PER_240 = 2  # production: the caller never says a word and hangs up
NO_GREETING_PER_240 = 2  # production: the pipeline fails before the agent says anything
DISCARDED_ATTEMPTS_PER_240 = 6
TRACE_METRICS_PER_240 = 8
TRANSFER_KINDS_PER_240 = {"fast": 3, "mid": 3, "slow": 3, "failed": 3, "tool_only": 2, "abandoned": 2, "tool_failed": 2}
TOOL_FAILURES_PER_240 = 5  # calls per failure kind
NOISY_LINES_PER_240 = 4  # production calls whose caller is on a bad line: most words misrecognised
NOISY_LINE_WORD_ERROR_SHARE = 0.35
FILLER_WORDS = ("uh", "the", "and", "a", "in", "um")
TRANSFER_WAIT_MS = {"fast": (3_000, 9_500), "mid": (12_000, 65_000), "slow": (72_000, 100_000)}
TRANSFER_FAILS_AFTER_MS = (18_000, 40_000)
TRANSFER_ABANDONED_AFTER_MS = (40_000, 65_000)

TOOL_FAILURE_KINDS = (
    "error_key",
    "success_false",
    "status_500",
    "error_text",
    "failed_text",
    "invalid_json",
    "missing_result",
)
PREDICTION_KINDS = (
    "exact",
    "exact",
    "exact",
    "case",
    "punct",
    "numeric",
    "extra_keys",
    "several",
    "extra_items",
    "wrong",
    "text",
    "none",
)
DISCARDED_ATTEMPT_LEAD_MS = (8_000, 25_000)  # how long before the accepted attempt a discarded one ended
AUTO_RETRY_REASONS = (
    "0 conversation turns (bots never exchanged audio)",
    "insufficient agent turns (1 < 2)",
    "stale: no activity for 120 s",
)
SENTIMENTS = ("Positive", "Neutral", "Negative", "Unknown")
CALLER_HANGUP = "[CALLER_HANGUP]"  # production calls: the caller hung up (the harness has no such reason)
END_CONVERSATION_TOOL = "EndConversationTool"
TRANSFER_TOOL = "transfer_to_agent"
TRANSFER_END_REASON = "call_transfer"


# --------------------------------------------------------------------------------------------- plans


def quota(n_calls: int, per_240: int, minimum: int) -> int:
    """How many calls get a rare feature: its share of 240 calls, never fewer than `minimum`."""
    return max(minimum, round(per_240 * n_calls / 240))


@dataclass
class CallPlan:
    """Everything decided about a call before it is played: what it is about and what goes wrong."""

    call_id: str
    task: Task
    facts: Facts
    start_ms: int = 0
    production: bool = False
    scenario_name: str | None = None
    cohort_ids: list[str] = field(default_factory=list)
    # Instrumentation.
    rtvi: bool = True
    timing: str = "words"  # words | spans | none: what turn timings the transcripts carry
    latency: str = "speaking"  # measured | speaking | turns | none: where handoff latency comes from
    speaking_with_measured: bool = False
    tool_events: str = "both"  # both | tool_call | rtvi: which events describe the agent's tool calls
    flow: bool = False
    inactivity_timeout_s: float | None = None
    policy: str = "tool-only"
    min_agent_turns: int = 2
    judge: bool = False
    # How the call goes.
    ending: str = "agent_tool"
    transfer: str | None = None
    ungrounded: bool = False
    confusion: bool = False
    robotic: bool = False
    repeat: bool = False
    long_turn: bool = False
    contradiction: bool = False
    misheard_turns: int = 0
    interrupt_rate: float = 0.0
    tool_failure: str | None = None
    kb_used: bool = True
    flow_trouble: str | None = None  # self | loop
    db_outcome: str | None = None  # match | mismatch
    db_report: str = "both"  # both | hash | db | none
    db_early_snapshot: bool = False
    prediction: str | None = None
    ignore_capitalization: bool = False
    ignore_punctuation: bool = False
    disallow_extra_items: bool = False
    discarded_attempts: list[str] = field(default_factory=list)
    trace_metrics: bool = False
    sentiment: str | None = None
    sentiment_revised: bool = False
    correct_transcripts: bool = False
    noisy_line: bool = False

    @property
    def simulated(self) -> bool:
        return not self.production

    @property
    def timeout_ms(self) -> int:
        return int((self.inactivity_timeout_s or DEFAULT_INACTIVITY_TIMEOUT_S) * 1000)


def random_id(rng: Random, prefix: str, length: int, alphabet: str = "0123456789abcdef") -> str:
    return prefix + "".join(rng.choice(alphabet) for _ in range(length))


def plan_calls(rng: Random, n_calls: int) -> list[CallPlan]:
    n_production = round(n_calls * PRODUCTION_SHARE)
    tasks = [d.SCENARIO_TASKS[i % len(d.SCENARIO_TASKS)] for i in range(n_calls - n_production)]
    mix_tasks, mix_weights = zip(*d.PRODUCTION_MIX, strict=True)
    tasks += rng.choices(mix_tasks, weights=mix_weights, k=n_production)
    kinds = [False] * (n_calls - n_production) + [True] * n_production
    order = list(range(n_calls))
    rng.shuffle(order)

    plans: list[CallPlan] = []
    clock = LOG_START_MS
    scenario_numbers: dict[str, int] = {}
    for slot, index in enumerate(order):
        clock += int(rng.expovariate(1 / MEAN_ARRIVAL_GAP_MS)) if slot else 0
        task, production = tasks[index], kinds[index]
        facts = task.facts(rng)
        if production:
            plan = CallPlan(random_id(rng, "CA", 20), task, facts, clock, production=True)
        else:
            number = scenario_numbers[task.key] = scenario_numbers.get(task.key, 0) + 1
            plan = CallPlan(random_id(rng, "sim-", 12), task, facts, clock, scenario_name=f"{task.key}_{number:03d}")
        plan.cohort_ids = list(task.cohort_ids)
        if production and rng.random() < 0.2:
            plan.cohort_ids.append("vip")
        choose_instrumentation(rng, plan)
        choose_conversation(rng, plan)
        plans.append(plan)

    assign_rare_features(rng, plans)
    for plan in plans:
        choose_outcome(rng, plan)
    return plans


def choose_instrumentation(rng: Random, plan: CallPlan) -> None:
    if plan.production:
        plan.timing = rng.choices(("words", "spans", "none"), weights=(50, 30, 20))[0]
    else:
        plan.timing = rng.choices(("words", "spans"), weights=(65, 35))[0]
    # A call without turn timings comes from a telephony platform with no Pipecat pipeline, hence no RTVI.
    plan.rtvi = plan.timing != "none"
    if not plan.rtvi:
        plan.latency, plan.tool_events = "none", "tool_call"
    else:
        plan.latency = rng.choices(("measured", "speaking", "turns"), weights=(30, 42, 28))[0]
        plan.speaking_with_measured = plan.latency == "measured" and rng.random() < 0.5
        plan.tool_events = rng.choices(("both", "rtvi", "tool_call"), weights=(80, 12 if plan.production else 0, 8))[0]
    plan.flow = plan.task.domain.agent_id in d.FLOW_AGENTS and rng.random() < 0.85
    if rng.random() < 0.3:
        plan.inactivity_timeout_s = rng.choice(CUSTOM_INACTIVITY_TIMEOUTS_S)
    if plan.simulated:
        plan.policy = "valid-terminal-state" if rng.random() < 0.45 else "tool-only"
        plan.min_agent_turns = 3 if rng.random() < 0.2 else 2
        plan.judge = "judge_passed" in plan.task.success_signals or "nl_assertion" in plan.task.success_signals


def choose_conversation(rng: Random, plan: CallPlan) -> None:
    plan.ungrounded = rng.random() < 0.15
    plan.confusion = rng.random() < 0.12
    plan.robotic = rng.random() < 0.08
    plan.repeat = rng.random() < 0.10
    plan.long_turn = rng.random() < 0.10
    plan.contradiction = rng.random() < 0.07
    plan.misheard_turns = rng.choice((1, 1, 2)) if rng.random() < (0.4 if plan.production else 0.15) else 0
    if plan.timing == "words" or plan.latency in ("speaking", "measured"):
        plan.interrupt_rate = 0.3 if rng.random() < 0.3 else 0.03
    plan.kb_used = rng.random() < 0.6
    if plan.flow:
        plan.flow_trouble = rng.choices((None, "self", "loop"), weights=(80, 12, 8))[0]
    if plan.simulated:
        plan.ending = (
            rng.choices(("simulator_exit", "agent_tool", "agent_exit"), weights=(70, 20, 10))[0]
            if plan.policy == "valid-terminal-state"
            else rng.choices(("agent_tool", "agent_exit"), weights=(80, 20))[0]
        )
    else:
        plan.ending = "agent_tool" if rng.random() < 0.55 else "caller_hangup"


def followed_on_every_partitioning(plans: list[CallPlan]) -> set[str]:
    """The calls that another call starts after by the never-ended headroom on the same partition,
    whatever the partition count: only such a call may never end, for only a later event of its
    partition carries the worker's watermark past its deadline (a few calls spread over 8 partitions
    leave some partitions with none)."""
    followed = {plan.call_id for plan in plans}
    for partitions in CHECKED_PARTITION_COUNTS:
        latest: dict[int, int] = {}
        for plan in plans:
            partition = partition_for(plan.call_id, partitions)
            latest[partition] = max(latest.get(partition, plan.start_ms), plan.start_ms)
        followed &= {
            plan.call_id
            for plan in plans
            if latest[partition_for(plan.call_id, partitions)] >= plan.start_ms + NEVER_ENDED_HEADROOM_MS
        }
    return followed


def assign_rare_features(rng: Random, plans: list[CallPlan]) -> None:
    """Give the rare features to a few eligible calls each, so every one of them is in the log."""
    n = len(plans)
    early_cutoff = max(p.start_ms for p in plans) - NEVER_ENDED_HEADROOM_MS
    taken: set[str] = set()  # call_ids whose ending is already special

    def pick(count: int, eligible: Callable[[CallPlan], bool]) -> list[CallPlan]:
        pool = [p for p in plans if p.call_id not in taken and eligible(p)]
        chosen = rng.sample(pool, min(count, len(pool)))
        taken.update(p.call_id for p in chosen)
        return chosen

    never = quota(n, NEVER_ENDED_PER_240, 5)
    followed = followed_on_every_partitioning(plans)
    for i, plan in enumerate(
        pick(never, lambda p: p.start_ms < early_cutoff and (p.simulated or p.rtvi) and p.call_id in followed)
    ):
        plan.ending = "never"
        plan.inactivity_timeout_s = NEVER_ENDED_TIMEOUTS_S[i % len(NEVER_ENDED_TIMEOUTS_S)]
    for kind, per_240 in TRANSFER_KINDS_PER_240.items():
        for plan in pick(quota(n, per_240, 1), lambda p: p.production):
            plan.ending, plan.transfer = "transfer", kind
            if plan.inactivity_timeout_s is not None and plan.inactivity_timeout_s < 180:
                plan.inactivity_timeout_s = None  # a long hold must not look like an abandoned call
    for plan in pick(quota(n, TIMEOUT_PER_240, 4), lambda p: p.simulated):
        plan.ending = "timeout"
        plan.flow_trouble = "loop" if plan.flow else None
    for plan in pick(quota(n, STALLED_PER_240, 2), lambda p: p.simulated):
        plan.ending, plan.inactivity_timeout_s = "stalled", rng.choice(STALLED_INACTIVITY_TIMEOUTS_S)
        plan.policy = "valid-terminal-state"  # where an inactivity timeout after the caller's turn counts
    for plan in pick(quota(n, SILENT_USER_PER_240, 2), lambda p: p.simulated):
        plan.ending, plan.inactivity_timeout_s = "silent_user", rng.choice(CUSTOM_INACTIVITY_TIMEOUTS_S[:2])
        plan.policy = "valid-terminal-state"

    for plan in pick(quota(n, DEAD_AIR_PER_240, 1), lambda p: p.production and p.rtvi):
        plan.ending = "dead_air"
    for plan in pick(quota(n, NO_GREETING_PER_240, 1), lambda p: p.production and p.rtvi):
        plan.ending = "no_greeting"

    def any_call(count: int, eligible: Callable[[CallPlan], bool]) -> list[CallPlan]:
        pool = [p for p in plans if eligible(p)]
        return rng.sample(pool, min(count, len(pool)))

    for plan in any_call(quota(n, DISCARDED_ATTEMPTS_PER_240, 4), lambda p: p.simulated and p.ending != "never"):
        plan.discarded_attempts = rng.sample(AUTO_RETRY_REASONS, rng.choice((1, 1, 2)))
    for plan in any_call(
        quota(n, TRACE_METRICS_PER_240, 4), lambda p: p.simulated and p.ending not in ("never", "stalled")
    ):
        plan.trace_metrics = True
    for plan in any_call(
        quota(n, NOISY_LINES_PER_240, 2), lambda p: p.production and p.ending not in ("never", "transfer")
    ):
        plan.noisy_line = True
    failing = [
        p for p in plans if p.ending not in ("stalled", "dead_air", "no_greeting") and p.transfer != "tool_failed"
    ]
    rng.shuffle(failing)
    per_kind = quota(n, TOOL_FAILURES_PER_240, 3)
    for i, plan in enumerate(failing[: per_kind * len(TOOL_FAILURE_KINDS)]):
        plan.tool_failure = TOOL_FAILURE_KINDS[i % len(TOOL_FAILURE_KINDS)]


def choose_outcome(rng: Random, plan: CallPlan) -> None:
    task = plan.task
    ended = plan.ending != "never"
    finished = plan.ending not in ("never", "timeout", "stalled")
    if plan.scenario_name and task.db is not None:
        plan.db_outcome = "match" if finished and rng.random() < 0.65 else "mismatch"
        # Where DB assertions are checked the bridge pulls the whole DB, so a hash alone is rarer there.
        weights = (70, 8, 17, 5) if task.db_assertions is not None else (55, 20, 15, 10)
        plan.db_report = rng.choices(("both", "hash", "db", "none"), weights=weights)[0]
        plan.db_early_snapshot = rng.random() < 0.2
    if plan.scenario_name and task.reference is not None:
        plan.prediction = rng.choice(PREDICTION_KINDS) if finished else "none"
        plan.ignore_capitalization = plan.prediction == "case" and rng.random() < 0.7
        plan.ignore_punctuation = plan.prediction == "punct" and rng.random() < 0.7
        plan.disallow_extra_items = plan.prediction == "extra_items" and rng.random() < 0.5
    if ended and rng.random() < 0.75:
        troubled = (
            plan.ungrounded
            or plan.confusion
            or plan.ending in ("timeout", "stalled")
            or plan.transfer in ("abandoned", "failed")
        )
        weights = (10, 30, 45, 15) if troubled else (50, 35, 8, 7)
        plan.sentiment = rng.choices(SENTIMENTS, weights=weights)[0]
        plan.sentiment_revised = plan.sentiment == "Unknown" and rng.random() < 0.5
    plan.correct_transcripts = plan.noisy_line or (ended and plan.misheard_turns > 0 and rng.random() < 0.8)


# --------------------------------------------------------------------------------------- the script


@dataclass(eq=False)  # exchanges are told apart by identity: two may say the same words
class Exchange:
    """The caller says something (or not), the agent replies (or not)."""

    user: str | None
    agent: str | None
    step: Step | None = None
    node: str | None = None
    heard: str | None = None  # what speech-to-text made of the user's words, when it got them wrong


class CallScript:
    """The events of one call, stamped in event time; ids are given in the order they are sent."""

    def __init__(self, call_id: str, start_ms: int) -> None:
        self.call_id = call_id
        self.start_ms = start_ms
        self._events: list[tuple[int, int, str, dict[str, Any]]] = []

    def add(self, offset_ms: float, type_: str, data: dict[str, Any]) -> dict[str, Any]:
        """Add an event `offset_ms` after the call started; returns its data (to find it again)."""
        self._events.append((self.start_ms + round(offset_ms), len(self._events), type_, data))
        return data

    @property
    def last_offset_ms(self) -> int:
        return max(ts for ts, *_ in self._events) - self.start_ms

    def ordered(self) -> list[tuple[int, str, dict[str, Any]]]:
        return [(ts, type_, data) for ts, _, type_, data in sorted(self._events, key=lambda e: (e[0], e[1]))]

    def turn_index(self, turn_data: dict[str, Any]) -> int:
        """0-based index of a turn among the call's turns, in the order they are sent."""
        turns = [data for _, type_, data in self.ordered() if type_ == "turn"]
        return next(i for i, data in enumerate(turns) if data is turn_data)

    def envelopes(self) -> list[dict[str, Any]]:
        return [
            {
                "v": CONTRACT_VERSION,
                "event_id": f"{self.call_id}:{i:03d}",
                "call_id": self.call_id,
                "ts_ms": ts,
                "type": type_,
                "data": data,
            }
            for i, (ts, type_, data) in enumerate(self.ordered())
        ]


def rtvi(type_: str, data: Any = None) -> dict[str, Any]:
    """A raw RTVI server message in Pipecat's shape; speaking events carry no data at all."""
    message: dict[str, Any] = {"label": "rtvi-ai", "type": type_}
    if data is not None:
        message["data"] = data
    return message


def spoken_words(rng: Random, text: str, start_ms: int) -> tuple[list[list[Any]], int]:
    """Word timings as speech-to-text (or TTS) reports them: [word, start_ms, end_ms] from call start."""
    words: list[list[Any]] = []
    t = start_ms
    for token in text.split():
        word = token.strip(string.punctuation + "…")
        if not word:
            continue
        duration = 110 + 42 * len(word) + rng.randint(0, 70)
        words.append([word, t, t + duration])
        t += duration + rng.randint(15, 80)
        if token[-1] in ",.?!;:…":
            t += rng.randint(120, 320)
    return words, (words[-1][2] if words else start_ms + 400)


def word_count(text: str) -> int:
    return len(text.split())


# -------------------------------------------------------------------------------------- the builder


class CallBuilder:
    """Plays one call plan into events: a conversation clock and one method per event kind."""

    def __init__(self, plan: CallPlan, rng: Random) -> None:
        self.plan = plan
        self.rng = rng
        self.script = CallScript(plan.call_id, plan.start_ms)
        self.facts = plan.facts
        self.domain = plan.task.domain
        self.pos = 0  # where the last speech ended, in ms from the call start
        self.last_agent: tuple[int, int] | None = None
        self.last_user_end: int | None = None
        self.last_user_text = ""
        self.node = self.domain.flow_nodes[0]
        self.agent_llm_calls = 0
        self.prompt_tokens = rng.randint(900, 1600)
        self.user_prompt_tokens = rng.randint(600, 1100)
        self.misheard_turns: list[tuple[dict[str, Any], str]] = []  # (turn data, what was really said)
        self.failure_left = plan.tool_failure
        # The details the agent acts on: a call whose DB ends up wrong acted on the wrong ones.
        wrong = plan.task.wrong_facts
        acted = plan.ending not in ("timeout", "stalled", "silent_user")
        acted_wrongly = plan.db_outcome == "mismatch" and wrong is not None and acted
        self.action_facts = wrong(plan.facts) if acted_wrongly and wrong is not None else plan.facts

    # ---------------------------------------------------------------------------- simple events

    def call_started(self) -> None:
        plan, task = self.plan, self.plan.task
        variables = {name: self.facts[name] for name in task.variables}
        agent_config: dict[str, Any] = {"prompt": self.domain.prompt}
        if plan.flow:
            agent_config["flow"] = d.flow_document(self.domain)
        data: dict[str, Any] = {"agent_id": self.domain.agent_id, "cohort_ids": plan.cohort_ids}
        if plan.scenario_name:
            data["run_id"] = RUN_ID
            data["scenario"] = self.scenario_block()
        data["agent_config"] = agent_config
        data["variables"] = variables
        if plan.inactivity_timeout_s is not None:
            data["inactivity_timeout_s"] = plan.inactivity_timeout_s
        self.script.add(0, "call.started", data)

    def scenario_block(self) -> dict[str, Any]:
        plan, task = self.plan, self.plan.task
        block: dict[str, Any] = {
            "name": plan.scenario_name,
            "domain": task.domain.name,
            "description": task.description,
            "success_signals": list(task.success_signals),
        }
        if task.reference is not None:
            block["reference_answer"] = task.reference(self.facts)
            for option in ("ignore_capitalization", "ignore_punctuation", "disallow_extra_items"):
                if getattr(plan, option):
                    block[option] = True
        if task.db is not None:
            block["expected_db_hash"] = db_state_hash(gold_db(task.db(self.facts, True)))
        if task.db_assertions is not None:
            block["db_state_assertions"] = task.db_assertions(self.facts)
        if task.nl_assertions:
            block["nl_assertions"] = list(task.nl_assertions)
        block["conversation_end_policy"] = plan.policy
        block["min_agent_turns"] = plan.min_agent_turns
        if plan.judge:
            block["judge"] = True
            block["judge_threshold"] = 0.7
        return block

    def attempt_discarded(self, offset_ms: int, reason: str) -> None:
        self.script.add(offset_ms, "attempt.discarded", {"reason": reason})

    def transition(self, offset_ms: int, to: str) -> None:
        data: dict[str, Any] = {"to": to}
        if self.rng.random() < 0.85:  # "from" is optional: the scorer knows where the flow was
            data["from"] = self.node
        self.script.add(offset_ms, "node.transition", data)
        self.node = to

    def kb_retrieval(self, offset_ms: int, key: str, query: str) -> None:
        passages = [self.domain.passages[key].text]
        others = [k for k in self.domain.passages if k != key]
        if others and self.rng.random() < 0.3:
            passages.append(self.domain.passages[self.rng.choice(others)].text)
        self.script.add(offset_ms, "kb.retrieval", {"query": query, "passages": passages})

    def transfer(self, offset_ms: int, phase: str) -> None:
        self.script.add(offset_ms, "transfer", {"phase": phase, "target": self.domain.transfer_target})

    def server_message(self, offset_ms: int, side: str, text: str) -> None:
        self.rtvi_event(offset_ms, side, rtvi("server-message", {"text": text}))

    def rtvi_event(self, offset_ms: float, side: str, message: dict[str, Any]) -> None:
        self.script.add(offset_ms, "rtvi", {"message": message, "side": side})

    def db_state(self, offset_ms: int, side: str, db: dict[str, Any], report: str) -> None:
        data: dict[str, Any] = {"side": side}
        if report in ("both", "hash"):
            data["hash"] = db_state_hash(db)
        if report in ("both", "db"):
            data["db"] = db
        self.script.add(offset_ms, "db.state", data)

    def call_ended(self, offset_ms: int, stop_reason: str, **extra: Any) -> None:
        data: dict[str, Any] = {"stop_reason": stop_reason}
        data.update({k: v for k, v in extra.items() if v is not None})
        if self.plan.trace_metrics:
            data["trace_metrics"] = {
                "spans": self.rng.randint(40, 160),
                "llm_calls": self.agent_llm_calls,
                "ttfb_ms": {"llm_p50": self.rng.randint(350, 900), "tts_p50": self.rng.randint(120, 300)},
            }
        self.script.add(offset_ms, "call.ended", data)

    # ------------------------------------------------------------------------------- LLM metrics

    def agent_tokens(self, offset_ms: float, completion: int, characters: int | None = None) -> None:
        self.agent_llm_calls += 1
        if not self.plan.rtvi:
            return
        self.prompt_tokens += completion + self.rng.randint(20, 90)
        data: dict[str, Any] = {
            "tokens": [
                {
                    "prompt_tokens": self.prompt_tokens,
                    "completion_tokens": completion,
                    "total_tokens": self.prompt_tokens + completion,
                }
            ]
        }
        if characters is not None and self.rng.random() < 0.3:
            data["characters"] = [{"processor": TTS_PROCESSOR, "model": TTS_MODEL, "value": characters}]
        self.rtvi_event(offset_ms, "agent", rtvi("metrics", data))

    def agent_ttfb(self, offset_ms: float, llm_s: float, tts_s: float, processing_s: float) -> None:
        if not self.plan.rtvi:
            return
        data: dict[str, Any] = {
            "ttfb": [
                {"processor": LLM_PROCESSOR, "model": LLM_MODEL, "value": round(llm_s, 3)},
                {"processor": TTS_PROCESSOR, "value": round(tts_s, 3)},
            ]
        }
        if self.rng.random() < PROCESSING_METRICS_SHARE:
            data["processing"] = [{"processor": LLM_PROCESSOR, "model": LLM_MODEL, "value": round(processing_s, 3)}]
        self.rtvi_event(offset_ms, "agent", rtvi("metrics", data))

    def user_tokens(self, offset_ms: float, text: str) -> None:
        completion = int(word_count(text) * 1.4) + 3
        self.user_prompt_tokens += completion + self.rng.randint(30, 120)
        prompt = self.user_prompt_tokens
        self.rtvi_event(
            offset_ms,
            "user",
            rtvi(
                "metrics",
                {
                    "tokens": [
                        {
                            "prompt_tokens": prompt,
                            "completion_tokens": completion,
                            "total_tokens": prompt + completion,
                        }
                    ]
                },
            ),
        )

    # ---------------------------------------------------------------------------------- speaking

    @property
    def speaking_events(self) -> bool:
        return self.plan.latency == "speaking" or self.plan.speaking_with_measured

    def turn_data(self, role: str, text: str, start: int, end: int, words: list[list[Any]]) -> dict[str, Any]:
        data: dict[str, Any] = {"role": role, "text": text}
        if self.plan.timing in ("words", "spans"):
            data["start_ms"], data["end_ms"] = start, end
        if self.plan.timing == "words":
            data["words"] = words
        return data

    def user_speaks(self, said: str, heard: str | None = None, barge_in: bool = False) -> dict[str, Any]:
        rng = self.rng
        transcript = heard or said
        if barge_in and self.last_agent is not None:
            agent_start, agent_end = self.last_agent
            start = max(agent_start + 600, agent_end - rng.randint(250, 1100))
        else:
            start = self.pos + rng.randint(350, 1300)
        words, end = spoken_words(rng, transcript, start)
        if self.plan.simulated and self.plan.rtvi:
            self.user_tokens(start - rng.randint(300, 600), said)
            if self.speaking_events:
                self.rtvi_event(start, "user", rtvi("bot-started-speaking"))
                self.rtvi_event(end, "user", rtvi("bot-stopped-speaking"))
        if self.speaking_events:
            self.rtvi_event(start + rng.randint(120, 250), "agent", rtvi("user-started-speaking"))
            self.rtvi_event(end + rng.randint(200, 450), "agent", rtvi("user-stopped-speaking"))
        data = self.script.add(
            end + rng.randint(*SPEECH_TO_TEXT_DELAY_MS), "turn", self.turn_data("user", transcript, start, end, words)
        )
        if heard is not None:
            self.misheard_turns.append((data, said))
        self.pos = max(self.pos, end)
        self.last_user_end, self.last_user_text = end, transcript
        return data

    def agent_speaks(self, text: str, ready_at: int, barge_in: bool = False) -> None:
        """The agent answers once its work (tools, lookups) is done at `ready_at`."""
        rng = self.rng
        low, high = LLM_TTFB_S[self.domain.agent_id]
        llm_s = rng.uniform(low, high) + (rng.uniform(1.5, 3.0) if rng.random() < LATENCY_SPIKE_CHANCE else 0.0)
        tts_s = rng.uniform(*TTS_TTFB_S)
        start = ready_at + int((llm_s + tts_s) * 1000)
        if barge_in and self.last_user_end is not None:
            start = self.last_user_end - rng.randint(200, 700)  # the agent jumps in before the caller is done
        words, end = spoken_words(rng, text, start)
        self.agent_ttfb(start - 30, llm_s, tts_s, llm_s + rng.uniform(0.2, 0.9))
        if self.plan.latency == "measured" and self.last_user_end is not None and not barge_in:
            self.script.add(
                start + 5,
                "latency",
                {
                    "latency_ms": start - self.last_user_end,
                    "user_transcript": self.last_user_text,
                    "agent_transcript": text,
                },
            )
        if self.speaking_events:
            self.rtvi_event(start, "agent", rtvi("bot-started-speaking"))
            self.rtvi_event(end + 30, "agent", rtvi("bot-stopped-speaking"))
        self.agent_tokens(start + rng.randint(150, 400), int(word_count(text) * 1.35) + 2, len(text))
        self.script.add(end + rng.randint(50, 120), "turn", self.turn_data("agent", text, start, end, words))
        self.last_agent = (start, end)
        self.last_user_end = None
        self.pos = max(self.pos, end)

    # ------------------------------------------------------------------------------- tool calls

    def tool_call(
        self,
        at: int,
        name: str,
        arguments: dict[str, Any],
        result: Any,
        *,
        failure: str | None = None,
        side: str = "agent",
    ) -> int:
        """One tool call starting at `at`; returns when its result is back."""
        rng = self.rng
        call_id = random_id(rng, "call_", 24, string.ascii_letters + string.digits)
        arguments_text = json.dumps(arguments)
        if failure == "invalid_json":
            arguments_text = broken_json(rng, arguments)
        if failure is not None:
            result = failed_result(failure, name)
        duration = rng.randint(180, 1400) if failure != "missing_result" else rng.randint(4000, 8000)
        with_rtvi = side == "agent" and self.plan.rtvi and self.plan.tool_events in ("both", "rtvi")
        with_tool_call = side == "user" or self.plan.tool_events in ("both", "tool_call")
        if side == "agent":
            self.agent_tokens(at - 40, rng.randint(18, 45))  # the LLM call that chose the function
        if with_rtvi:
            started: dict[str, Any] = {"tool_call_id": call_id, "function_name": name}
            if failure != "invalid_json":
                started["arguments"] = arguments
            self.rtvi_event(at, side, rtvi("llm-function-call-in-progress", started))
            stopped: dict[str, Any] = {
                "tool_call_id": call_id,
                "function_name": name,
                "cancelled": failure == "missing_result",
            }
            if failure != "missing_result":
                stopped["result"] = result
            self.rtvi_event(at + duration, side, rtvi("llm-function-call-stopped", stopped))
        if with_tool_call:
            data: dict[str, Any] = {"name": name, "arguments": arguments_text, "tool_call_id": call_id}
            if failure == "missing_result":
                self.script.add(at + 10, "tool.call", {**data, "side": side})
            elif side == "agent" and failure is None and rng.random() < 0.15:
                # A producer that reports the call when it starts and again when its result is back.
                self.script.add(at + 10, "tool.call", {**data, "side": side})
                self.script.add(at + duration, "tool.call", {**data, "result": result, "side": side})
            else:
                self.script.add(at + duration, "tool.call", {**data, "result": result, "side": side})
        return at + duration

    def use_tool(self, at: int, tool: Tool, action: bool = False) -> int:
        """Call a task tool; a planned failure happens on the first call, and the agent then retries."""
        facts = self.action_facts if action else self.facts
        arguments, result = tool.arguments(facts), tool.result(facts)
        if self.failure_left is not None and tool.side == "agent":
            failure, self.failure_left = self.failure_left, None
            at = self.tool_call(at, tool.name, arguments, None, failure=failure) + self.rng.randint(200, 600)
        return self.tool_call(at, tool.name, arguments, result, side=tool.side)

    # ------------------------------------------------------------------------------ exchanges

    def play(self, exchange: Exchange, *, answer: bool = True) -> None:
        rng, plan = self.rng, self.plan
        barge_in = exchange.user is not None and self.last_agent is not None and rng.random() < plan.interrupt_rate
        if exchange.user is not None:
            self.user_speaks(exchange.user, exchange.heard, barge_in)
        if not answer or exchange.agent is None:
            return
        t = self.pos + rng.randint(*SPEECH_TO_TEXT_DELAY_MS)
        step = exchange.step
        worked = False
        if exchange.node is not None and plan.flow:
            self.transition(t + 40, exchange.node)
        if step is not None and step.kb is not None:
            self.kb_retrieval(t + 120, step.kb, exchange.heard or exchange.user or "")
            t += rng.randint(180, 420)
            worked = True
        if step is not None and step.tool is not None:
            t = self.use_tool(t + rng.randint(250, 500), plan.task.tools[step.tool], step.action)
            worked = True
        agent_barges_in = (
            not worked and exchange.user is not None and self.speaking_events and rng.random() < plan.interrupt_rate / 2
        )
        self.agent_speaks(exchange.agent, t, agent_barges_in)
        if step is not None and step.action:
            self.predicted_actions(self.pos + 200)
        if step is not None and step.user_tool is not None and plan.simulated:
            self.use_tool(self.pos + rng.randint(600, 1500), plan.task.tools[step.user_tool])

    def predicted_actions(self, at: int) -> None:
        """The agent's `<final_response>` server messages: the actions the harness compares."""
        plan = self.plan
        if plan.prediction in (None, "none") or plan.task.reference is None:
            return
        for i, text in enumerate(prediction_texts(plan, self.action_facts)):
            self.server_message(at + 40 * i, "agent", text)

    # ------------------------------------------------------------------------------------ endings

    def closing(self) -> None:
        domain = self.domain
        self.play(
            Exchange(
                self.rng.choice(domain.closing_user),
                d.fill(domain.closing_agent, self.facts),
                node=domain.flow_nodes[-1],
            )
        )

    def end_tool(self) -> int:
        at = self.pos + self.rng.randint(300, 700)
        return self.tool_call(
            at, END_CONVERSATION_TOOL, {"reason": "the caller has no further questions"}, {"ended": True}
        )

    def finish(self) -> None:
        """Play the plan's ending: the closing words, how the call is ended, and `call.ended`."""
        plan, rng = self.plan, self.rng
        ending = plan.ending
        if ending == "never":
            return
        if ending == "agent_tool":
            self.closing()
            at = self.end_tool()
            simulator_end = plan.simulated and rng.random() < 0.5
            if simulator_end:
                self.server_message(at + 150, "user", "<exit>The agent completed my request.</exit>")
            self.db_states(at - 400)
            if plan.simulated:
                self.call_ended(
                    at + rng.randint(800, 1600),
                    "[EXIT]",
                    end_conversation_tool_called=True,
                    simulator_end_reported=simulator_end,
                )
            else:
                self.call_ended(
                    at + rng.randint(800, 1600), "[EXIT]", reason="agent_hangup", end_conversation_tool_called=True
                )
        elif ending == "agent_exit":
            self.closing()
            at = self.pos + rng.randint(300, 700)
            self.server_message(at, "agent", "<exit>Conversation complete.</exit>")
            self.db_states(at - 300)
            self.call_ended(at + rng.randint(800, 1500), "[EXIT]", simulator_end_reported=False)
        elif ending == "simulator_exit":
            closing_user = rng.choice(self.domain.closing_user)
            self.play(Exchange(closing_user, d.fill(self.domain.closing_agent, self.facts)), answer=rng.random() < 0.5)
            at = self.pos + rng.randint(200, 600)
            self.server_message(at, "user", "<exit>I got what I needed.</exit>")
            self.db_states(at - 200)
            self.call_ended(
                at + rng.randint(700, 1400),
                "[SIMULATOR_EXIT]",
                end_conversation_tool_called=False,
                simulator_end_reported=True,
            )
        elif ending == "caller_hangup":
            closing_user = rng.choice(self.domain.closing_user)
            self.play(Exchange(closing_user, d.fill(self.domain.closing_agent, self.facts)), answer=rng.random() < 0.6)
            self.call_ended(self.pos + rng.randint(600, 2000), CALLER_HANGUP, reason="customer_hangup")
        elif ending == "timeout":
            self.db_states(self.pos + 500)
            self.call_ended(
                self.pos + rng.randint(1500, 4000),
                "[TIMEOUT]",
                end_conversation_tool_called=False,
                simulator_end_reported=False,
            )
        elif ending in ("stalled", "silent_user"):
            self.db_states(self.pos + 800)
            deadline = self.script.last_offset_ms + plan.timeout_ms  # the bridge's inactivity timer fires
            self.call_ended(
                deadline, "[INACTIVITY_TIMEOUT]", end_conversation_tool_called=False, simulator_end_reported=False
            )
        elif ending in ("dead_air", "no_greeting"):
            if ending == "no_greeting":
                self.rtvi_event(
                    self.pos + 300, "agent", rtvi("error", {"error": "TTS service connection failed", "fatal": True})
                )
            self.call_ended(self.pos + rng.randint(4_000, 9_000), CALLER_HANGUP, reason="customer_hangup")
        elif ending == "transfer":
            self.finish_transfer()

    def finish_transfer(self) -> None:
        plan, rng, domain = self.plan, self.rng, self.domain
        kind = plan.transfer
        self.user_speaks(domain.transfer_request)
        t = self.pos + rng.randint(*SPEECH_TO_TEXT_DELAY_MS)
        arguments = {"department": domain.transfer_target, "reason": "caller asked for a person"}
        result: Any = {"success": True, "queue_position": rng.randint(1, 4)}
        if kind == "tool_failed":
            result = {"success": False, "message": "the queue is closed"}
        t = self.tool_call(t + 300, TRANSFER_TOOL, arguments, result)
        if kind == "tool_failed":
            self.agent_speaks(
                "I'm sorry, the transfer line is closed at the moment. A specialist will ring you this afternoon.", t
            )
            self.closing()
            self.call_ended(
                self.end_tool() + rng.randint(800, 1500),
                "[EXIT]",
                reason="agent_hangup",
                end_conversation_tool_called=True,
            )
            return
        self.agent_speaks("Of course. Please hold while I connect you.", t)
        started = self.pos + rng.randint(300, 800)
        if kind == "tool_only":  # the platform ends the bot's leg without reporting the transfer itself
            self.call_ended(started + rng.randint(1500, 3000), "[EXIT]", reason=TRANSFER_END_REASON)
            return
        self.transfer(started, "started")
        if kind in TRANSFER_WAIT_MS:
            bridged = started + rng.randint(*TRANSFER_WAIT_MS[kind])
            self.transfer(bridged, "bridged")
            self.call_ended(bridged + rng.randint(500, 1500), "[EXIT]", reason=TRANSFER_END_REASON)
        elif kind == "failed":
            failed = started + rng.randint(*TRANSFER_FAILS_AFTER_MS)
            self.transfer(failed, "failed")
            self.pos = failed
            self.last_agent = None
            self.agent_speaks(
                "I'm sorry, every specialist is busy at the moment. One of them will ring you this afternoon.",
                failed + 200,
            )
            self.closing()
            self.call_ended(
                self.end_tool() + rng.randint(800, 1500),
                "[EXIT]",
                reason="agent_hangup",
                end_conversation_tool_called=True,
            )
        else:  # abandoned: the caller hangs up on hold
            self.call_ended(
                started + rng.randint(*TRANSFER_ABANDONED_AFTER_MS), CALLER_HANGUP, reason="caller_abandoned_transfer"
            )

    def db_states(self, at: int) -> None:
        """The agent's (and a dual-side user's) DB as the bridge pulled it at the end of the call."""
        plan, task = self.plan, self.plan.task
        if plan.db_outcome is None or task.db is None:
            return
        acted = plan.db_outcome == "match" or self.action_facts is not self.facts
        if plan.db_report != "none":
            self.db_state(
                at, "agent", presented_db(self.rng, task.db(self.action_facts, acted), plan.call_id), plan.db_report
            )
        if task.user_db is not None:
            user_done = plan.db_outcome == "match" or (
                plan.ending not in ("timeout", "stalled") and task.wrong_facts is None
            )
            self.db_state(at + 60, "user", task.user_db(self.facts, user_done), "both")

    # ------------------------------------------------------------------------------- post-call

    def post_call(self, end_offset: int) -> None:
        plan, rng = self.plan, self.rng
        if plan.sentiment is not None:
            first = end_offset + rng.randint(20_000, 360_000)
            self.script.add(first, "call.annotated", {"user_sentiment": plan.sentiment})
            if plan.sentiment_revised:
                self.script.add(
                    first + rng.randint(60_000, 600_000),
                    "call.annotated",
                    {"user_sentiment": rng.choice(("Negative", "Neutral"))},
                )
        if plan.correct_transcripts:
            at = end_offset + rng.randint(180_000, 1_500_000)
            for i, (turn, said) in enumerate(self.misheard_turns):
                self.script.add(
                    at + 4_000 * i, "transcript.corrected", {"turn_index": self.script.turn_index(turn), "text": said}
                )


# ----------------------------------------------------------------------------- what goes into a call


def gold_db(db: dict[str, Any]) -> dict[str, Any]:
    """The expected DB as the runner's gold replay writes it: real nulls and ints, no session."""

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.lower() in ("none", "null"):
            return None
        return value

    return cast("dict[str, Any]", clean(db))


def presented_db(rng: Random, db: dict[str, Any], call_id: str) -> dict[str, Any]:
    """The DB as the agent's bot reports it: with its session, and order-independent lists shuffled,
    so that only the canonical hash (not the raw JSON) matches the gold DB."""
    shown = copy.deepcopy(db)

    def shuffle(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ORDER_INDEPENDENT_LIST_KEYS and isinstance(item, list):
                    item.reverse()
                shuffle(item)
        elif isinstance(value, list):
            for item in value:
                shuffle(item)

    shuffle(shown)
    shown["session"] = {"session_id": random_id(rng, "sess_", 10), "call_id": call_id}
    return shown


def failed_result(kind: str, tool_name: str) -> Any:
    service = tool_name.split("_")[-1]
    return {
        "error_key": {"error": f"{service} service temporarily unavailable", "code": "UNAVAILABLE"},
        "success_false": {"success": False, "message": "request rejected by the backend"},
        "status_500": {"status": 500, "message": "Internal Server Error"},
        "error_text": "Error: upstream timeout after 5000 ms",
        "failed_text": f"failed to reach the {service} service",
        "invalid_json": {"error": "arguments could not be parsed"},
        "missing_result": None,
    }[kind]


def broken_json(rng: Random, arguments: dict[str, Any]) -> str:
    """Arguments as LLMs sometimes write them: Python quoting, a trailing comma, or cut short."""
    text = json.dumps(arguments)
    forms = (
        repr(arguments),  # single quotes
        text[:-1] + ",}" if len(text) > 2 else "{,}",
        text[: max(1, len(text) // 2)],
    )
    return rng.choice(forms)


def prediction_texts(plan: CallPlan, facts: Facts) -> list[str]:
    """The `<final_response>` texts the agent sends for the plan's prediction kind."""
    assert plan.task.reference is not None  # (a plan with a prediction is of a task with a reference)
    reference = plan.task.reference(facts)
    items = [dict(item) for item in (reference if isinstance(reference, list) else [reference])]
    kind = plan.prediction

    def wrap(item: Any) -> str:
        return f"<final_response>{json.dumps(item)}</final_response>"

    first_string = next(
        (k for item in items for k, v in item.items() if isinstance(v, str) and any(c.isalpha() for c in v)), None
    )
    if kind == "case" and first_string:
        value = items[0][first_string]
        items[0][first_string] = value.lower() if value == value.upper() else value.upper()
    elif kind == "punct" and first_string:
        items[0][first_string] = items[0][first_string] + "."
    elif kind == "numeric":
        for item in items:
            for key, value in item.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    item[key] = f"{value:.2f}"
    elif kind == "extra_keys":
        items[0]["note"] = "caller confirmed the details"
    elif kind == "several":
        wrong = {k: (v + "X" if isinstance(v, str) else v) for k, v in items[-1].items()}
        return [wrap(wrong)] + [wrap(item) for item in items]
    elif kind == "extra_items":
        items.append({"action": "send_confirmation_email"})
    elif kind == "wrong":
        wrong_facts = plan.task.wrong_facts(facts) if plan.task.wrong_facts is not None else None
        if wrong_facts is not None and plan.task.reference(wrong_facts) != reference:
            wrong = plan.task.reference(wrong_facts)
            items = wrong if isinstance(wrong, list) else [wrong]
        else:
            key = next(iter(items[0]))
            items[0][key] = f"{items[0][key]}-0"
    elif kind == "text":
        return [f"<final_response>Done: {plan.task.description.lower()}</final_response>"]
    return [wrap(item) for item in items]


def build_exchanges(rng: Random, plan: CallPlan) -> list[Exchange]:
    """The conversation in order, with the plan's faults worked into the agent's lines."""
    task, facts, domain = plan.task, plan.facts, plan.task.domain
    steps = list(task.steps)
    if plan.ending == "stalled":
        steps = steps[:1]
    if plan.ending == "transfer":  # the caller asks for a person partway through
        steps = steps[: rng.randint(1, min(3, len(steps)))]
    if plan.ending == "dead_air":
        return [Exchange(None, domain.greeting)]
    if plan.ending == "no_greeting":
        return [Exchange("Hello? Hello, is anyone there?", None)]
    exchanges = [Exchange(None, domain.greeting)]
    for step in steps:
        agent = d.fill(step.agent, facts)
        if step.kb is not None and plan.kb_used:
            agent = f"{agent} {d.fill(domain.passages[step.kb].paraphrase, facts)}"
        exchanges.append(Exchange(d.fill(step.user, facts), agent, step, step.node))
    talk = exchanges[1:]
    if plan.ending == "stalled":
        talk[0].agent = None
        return exchanges

    # Each fault goes on an exchange of its own where it can, so that no agent turn grows too long.
    spoiled: list[Exchange] = []

    def target(candidates: list[Exchange]) -> Exchange:
        fresh = [e for e in candidates if e not in spoiled] or candidates
        chosen = rng.choice(fresh)
        spoiled.append(chosen)
        return chosen

    if plan.long_turn:
        chosen = next((e for e in talk if e.step is not None and e.step.action), talk[-1])
        spoiled.append(chosen)
        chosen.agent = f"{chosen.agent} {rng.choice(d.LONG_WINDUPS)}"
    if plan.ungrounded:
        chosen = target(talk[1:] or talk)
        bogus = bogus_figures(rng, plan)
        chosen.agent = f"{chosen.agent} {d.fill(rng.choice(domain.ungrounded_lines), {**facts, **bogus})}"
    if plan.robotic:
        chosen = target(talk)
        chosen.agent = f"{rng.choice(d.ROBOTIC_OPENERS)} {chosen.agent}"
    if plan.contradiction and len(talk) >= 2:
        first = target(talk[:-1])
        second = target(talk[talk.index(first) + 1 :])
        first.agent = f"{first.agent} {domain.contradiction[0]}"
        second.agent = f"{second.agent} {domain.contradiction[1]}"
    if plan.noisy_line:
        for exchange in talk:
            exchange.heard = garbled(rng, exchange.user or "", domain.misheard)
    elif plan.misheard_turns:
        candidates = [e for e in talk if misheard(e.user or "", domain.misheard) is not None]
        for exchange in rng.sample(candidates, min(plan.misheard_turns, len(candidates))):
            exchange.heard = misheard(exchange.user or "", domain.misheard)

    self_node = plan.flow_trouble == "self"
    if plan.repeat:
        i = rng.randrange(1, len(exchanges) - 1) if len(exchanges) > 2 else 1
        again = Exchange(
            rng.choice(d.REPEAT_REQUESTS), exchanges[i].agent, node=exchanges[i].node if self_node else None
        )
        exchanges.insert(i + 1, again)
        self_node = False
    if plan.confusion:
        i = rng.randrange(2, len(exchanges)) if len(exchanges) > 2 else 1
        previous = next((e.node for e in reversed(exchanges[:i]) if e.node), None)
        exchanges.insert(
            i, Exchange(rng.choice(d.MUMBLES), rng.choice(d.CONFUSED_REPLIES), node=previous if self_node else None)
        )
        self_node = False
    if self_node:  # no clarifying exchange to hang it on: the flow re-enters its node on a follow-up
        i = rng.randrange(2, len(exchanges)) if len(exchanges) > 2 else 1
        previous = next((e.node for e in reversed(exchanges[:i]) if e.node), domain.flow_nodes[1])
        exchanges.insert(i, Exchange(rng.choice(d.REPEAT_REQUESTS), rng.choice(d.LOOP_AGENT), node=previous))
    if plan.flow_trouble == "loop" or plan.ending == "timeout":
        exchanges.extend(loop_exchanges(rng, plan, exchanges))
    if plan.ending == "never":
        del exchanges[rng.randint(2, max(2, len(exchanges) - 1)) :]
    if plan.ending == "silent_user":
        del exchanges[rng.randint(2, max(2, len(exchanges) - 1)) :]
    return exchanges


def loop_exchanges(rng: Random, plan: CallPlan, exchanges: list[Exchange]) -> list[Exchange]:
    """The caller and agent going round in circles: the flow bounces between two nodes."""
    nodes = [e.node for e in exchanges if e.node]
    a, b = (nodes[1], nodes[2]) if len(nodes) >= 3 else plan.task.domain.flow_nodes[2:4]
    rounds = 4 if plan.ending == "timeout" else 3
    return [
        Exchange(rng.choice(d.LOOP_USER), rng.choice(d.LOOP_AGENT), node=(a if i % 2 == 0 else b))
        for i in range(rounds)
    ]


def misheard(text: str, confusions: dict[str, str]) -> str | None:
    """The text as speech-to-text got it wrong (the first confusable word swapped), or None."""
    words = text.split()
    for i, word in enumerate(words):
        core = word.strip(string.punctuation)
        for right, wrong in confusions.items():
            if core.lower() == right.lower():
                words[i] = word.replace(core, wrong)
                return " ".join(words)
    return None


def garbled(rng: Random, text: str, confusions: dict[str, str]) -> str:
    """The text as speech-to-text hears it over a bad line: words lost, swapped or misheard."""
    lowered = {right.lower(): wrong for right, wrong in confusions.items()}
    heard = []
    for word in text.split():
        core = word.strip(string.punctuation).lower()
        if core in lowered:
            heard.append(lowered[core])
        elif rng.random() >= NOISY_LINE_WORD_ERROR_SHARE:
            heard.append(word)
        elif rng.random() < 0.5:
            heard.append(rng.choice(FILLER_WORDS))
        # else: the word is lost
    return " ".join(heard) if heard and heard != text.split() else f"{text} uh"


def bogus_figures(rng: Random, plan: CallPlan) -> dict[str, str]:
    """A price and a time the agent was never given: nowhere in its prompt, variables, tools or KB."""
    known = " ".join(
        [plan.task.domain.prompt, json.dumps(plan.facts)] + [p.text for p in plan.task.domain.passages.values()]
    )
    known_numbers = set(_numbers(known))
    prices = [p for p in d.BOGUS_PRICES if p.lstrip("$") not in known_numbers]
    times = [t for t in d.BOGUS_TIMES if t[:-2] not in known]
    return {"bogus_price": rng.choice(prices), "bogus_time": rng.choice(times)}


def _numbers(text: str) -> list[str]:
    out, current = [], ""
    for char in text + " ":
        if char.isdigit():
            current += char
        elif current:
            out.append(current)
            current = ""
    return out


def script_call(plan: CallPlan, rng: Random) -> list[dict[str, Any]]:
    builder = CallBuilder(plan, rng)
    for i, reason in enumerate(plan.discarded_attempts):
        builder.attempt_discarded(-rng.randint(*DISCARDED_ATTEMPT_LEAD_MS) // (i + 1), reason)
    builder.call_started()
    if plan.db_early_snapshot and plan.task.db is not None:
        builder.db_state(
            rng.randint(800, 2000), "agent", presented_db(rng, plan.task.db(plan.facts, False), plan.call_id), "both"
        )
    builder.pos = rng.randint(300, 900)
    for exchange in build_exchanges(rng, plan):
        builder.play(exchange)
    if plan.ending == "stalled" and plan.rtvi:
        builder.rtvi_event(
            builder.pos + 6_000, "agent", rtvi("error", {"error": "LLM request timed out", "fatal": False})
        )
    builder.finish()
    if plan.ending != "never":
        builder.post_call(builder.script.last_offset_ms)
    return builder.script.envelopes()


# ------------------------------------------------------------------------------------------ the feed


@dataclass
class Line:
    """One line of the log: a single event, a batch of one call's events, or something malformed."""

    events: list[dict[str, Any]]
    batch: bool = False
    raw: bytes | None = None  # malformed lines are kept as written
    duplicate: bool = False

    def encode(self) -> bytes:
        if self.raw is not None:
            return self.raw
        if self.batch:
            return to_json({"v": CONTRACT_VERSION, "call_id": self.events[0]["call_id"], "events": self.events})
        return to_json(self.events[0])


def to_json(document: Any) -> bytes:
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


def merge_calls(rng: Random, calls: list[list[dict[str, Any]]]) -> list[Line]:
    """Interleave the calls by event time, each producer sending up to PRODUCER_JITTER_MS late; a
    call's own events always keep their order."""
    keyed = []
    for call_index, events in enumerate(calls):
        send_at = 0
        for seq, event in enumerate(events):
            send_at = max(send_at, event["ts_ms"] + rng.randint(0, PRODUCER_JITTER_MS))
            keyed.append((send_at, call_index, seq, event))
    keyed.sort(key=lambda k: (k[0], k[1], k[2]))
    return [Line([event]) for *_, event in keyed]


def add_batches(rng: Random, lines: list[Line], plans: list[CallPlan]) -> list[Line]:
    """A few producers batch a call's events over a short interval into one message."""
    eligible = [p.call_id for p in plans if p.production and p.rtvi and p.ending != "never"]
    batched_calls = rng.sample(eligible, min(BATCHED_CALLS, len(eligible)))
    position = {line.events[0]["event_id"]: i for i, line in enumerate(lines)}
    replace: dict[int, Line] = {}
    drop: set[int] = set()
    for call_id in batched_calls:
        own = [
            line.events[0]
            for line in lines
            if line.events[0]["call_id"] == call_id
            and line.events[0]["type"] not in ("call.annotated", "transcript.corrected")
        ]
        for _ in range(2):
            start = rng.randrange(1, max(2, len(own) - 6))
            group = [own[start]]
            for event in own[start + 1 : start + rng.randint(3, 5)]:
                if event["ts_ms"] - group[0]["ts_ms"] > BATCH_MAX_SPAN_MS:
                    break
                group.append(event)
            indexes = [position[e["event_id"]] for e in group]
            if len(group) < 2 or any(i in drop or i in replace for i in indexes):
                continue
            replace[indexes[0]] = Line(group, batch=True)
            drop.update(indexes[1:])
    return [replace.get(i, line) for i, line in enumerate(lines) if i not in drop]


def add_duplicates(rng: Random, lines: list[Line]) -> list[Line]:
    """About one event in a hundred is sent twice: right away, or a few lines later."""
    singles = [i for i, line in enumerate(lines) if not line.batch and line.raw is None]
    chosen = sorted(rng.sample(singles, max(1, round(len(singles) * DUPLICATE_SHARE))))
    after: dict[int, list[Line]] = {}
    for i in chosen:
        delay = 0 if rng.random() < ADJACENT_DUPLICATE_SHARE else rng.randint(2, 8)
        target = min(i + delay, len(lines) - 1)
        after.setdefault(target, []).append(Line(lines[i].events, duplicate=True))
    out: list[Line] = []
    for i, line in enumerate(lines):
        out.append(line)
        out.extend(after.get(i, []))
    return out


def malformed_lines(rng: Random, lines: list[Line], kinds: tuple[str, ...]) -> list[tuple[int, Line, str]]:
    """Realistic bad input, each near a live call: (insert before index, line, kind)."""
    out = []
    for n, kind in enumerate(kinds):
        spread = int(len(lines) * (n + 1) / (len(kinds) + 2)) + rng.randint(-20, 20)
        index = min(max(spread, 1), len(lines) - 2)
        near = lines[index].events[0]
        call_id, ts = near["call_id"], near["ts_ms"] + rng.randint(1, 400)
        out.append((index, Line([], raw=malformed(kind, call_id, f"{call_id}:bad-{n}", ts)), kind))
    return out


def malformed(kind: str, call_id: str, event_id: str, ts: int) -> bytes:
    envelope = {"v": 1, "event_id": event_id, "call_id": call_id, "ts_ms": ts}
    if kind == "log_line":
        return (
            f"{iso_time(ts)} WARNING pipecat.transports.websocket: client disconnected unexpectedly (code 1006)"
        ).encode()
    if kind == "truncated":  # a producer killed halfway through writing a line
        return to_json(
            {**envelope, "type": "turn", "data": {"role": "user", "text": "I was wondering if you could also check"}}
        )[:-24]
    if kind == "unknown_type":  # an interim transcript from a producer on a newer contract
        return to_json({**envelope, "type": "transcript.interim", "data": {"role": "user", "text": "I was wonder"}})
    if kind == "missing_text":
        return to_json({**envelope, "type": "turn", "data": {"role": "agent", "start_ms": 41_250, "end_ms": 43_900}})
    if kind == "string_ts":
        return to_json({**envelope, "ts_ms": str(ts), "type": "latency", "data": {"latency_ms": 1180}})
    if kind == "bot_role":  # a Pipecat transcript processor's own word for the agent
        return to_json({**envelope, "type": "turn", "data": {"role": "bot", "text": "Let me check that for you."}})
    if kind == "empty_object":
        return b"{}"
    if kind == "future_version":
        return to_json({**envelope, "v": 2, "type": "turn", "data": {"role": "user", "text": "Yes, that's right."}})
    if kind == "oversized":  # a retrieval that returned a whole manual: just over the message size limit
        section = (
            "Section {n}. Returns, exchanges and refunds are handled according to the policy in force on the "
            "date of purchase."
        )
        sections = (section.format(n=n) for n in itertools.count(1))
        passages: list[str] = []
        while sum(len(p) + 3 for p in passages) < MAX_MESSAGE_BYTES:
            passages.append(" ".join(itertools.islice(sections, 100)))
        return to_json(
            {**envelope, "type": "kb.retrieval", "data": {"query": "full policy manual", "passages": passages}}
        )
    raise ValueError(kind)


def iso_time(ts_ms: int) -> str:
    moment = datetime.fromtimestamp(ts_ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + f",{ts_ms % 1000:03d}"


def assemble_log(
    rng: Random, plans: list[CallPlan], calls: list[list[dict[str, Any]]], malformed_kinds: tuple[str, ...]
) -> tuple[list[Line], list[str]]:
    lines = merge_calls(rng, calls)
    lines = add_batches(rng, lines, plans)
    lines = add_duplicates(rng, lines)
    bad = malformed_lines(rng, lines, malformed_kinds)
    inserts = {index: line for index, line, _ in bad}
    out: list[Line] = []
    for i, line in enumerate(lines):
        if i in inserts:
            out.append(inserts[i])
        out.append(line)
    return out, [kind for *_, kind in bad]


# ------------------------------------------------------------------------------------------- checks


def check_inactivity(plans: list[CallPlan], calls: list[list[dict[str, Any]]]) -> None:
    """Only the calls meant to time out may go quiet for their inactivity timeout, and every call that
    never ends is followed, on its own partition, by events past its deadline plus the sweep's allowed
    lateness — whatever the partition count — so that a worker's watermark gets there."""
    for plan, events in zip(plans, calls, strict=True):
        active = [e["ts_ms"] for e in events if e["type"] not in RESCORE_TYPES]
        limit = plan.timeout_ms - INACTIVITY_SAFETY_MARGIN_MS
        gaps = [b - a for a, b in itertools.pairwise(active)]
        if plan.ending in ("stalled", "silent_user"):
            gaps = gaps[:-1]  # the last gap is the harness's own inactivity timeout
        if gaps and max(gaps) > limit:
            raise AssertionError(
                f"{plan.call_id}: a {max(gaps)} ms gap would trip its {plan.timeout_ms} ms inactivity timeout"
            )
    for partitions in CHECKED_PARTITION_COUNTS:
        feed_end: dict[int, int] = {}
        for events in calls:
            partition = partition_for(events[0]["call_id"], partitions)
            feed_end[partition] = max(feed_end.get(partition, 0), max(e["ts_ms"] for e in events))
        for plan, events in zip(plans, calls, strict=True):
            if plan.ending != "never":
                continue
            deadline = events[-1]["ts_ms"] + plan.timeout_ms
            if (
                feed_end[partition_for(plan.call_id, partitions)]
                < deadline + DEFAULT_ALLOWED_LATENESS_MS + SWEEP_SPARE_MS
            ):
                raise AssertionError(
                    f"{plan.call_id} never ends, but with {partitions} partitions its partition's events stop before "
                    "its deadline"
                )


# ----------------------------------------------------------------------------------------- manifest


def manifest(seed: int, plans: list[CallPlan], lines: list[Line], malformed_kinds: list[str]) -> dict[str, Any]:
    events = [e for line in lines if not line.duplicate for e in line.events]
    types: dict[str, int] = {}
    stop_reasons: dict[str, int] = {}
    for event in events:
        types[event["type"]] = types.get(event["type"], 0) + 1
        if event["type"] == "call.ended":
            reason = event["data"]["stop_reason"]
            stop_reasons[reason] = stop_reasons.get(reason, 0) + 1
    domains: dict[str, int] = {}
    production: dict[str, int] = {}
    agents: dict[str, int] = {}
    for plan in plans:
        if plan.scenario_name:
            domain = plan.scenario_name.split("__")[0]
            domains[domain] = domains.get(domain, 0) + 1
        else:
            production[plan.task.domain.name] = production.get(plan.task.domain.name, 0) + 1
        agents[plan.task.domain.agent_id] = agents.get(plan.task.domain.agent_id, 0) + 1
    never = sorted(p.call_id for p in plans if p.ending == "never")
    timestamps = [e["ts_ms"] for e in events]
    return {
        "seed": seed,
        "calls": len(plans),
        "lines": len(lines),
        "valid_events": len(events),  # accepted events, counted once per event_id
        "event_lines": sum(1 for line in lines if line.raw is None and not line.batch),
        "batch_lines": sum(1 for line in lines if line.batch),
        "events_in_batches": sum(len(line.events) for line in lines if line.batch),
        "duplicate_lines": sum(1 for line in lines if line.duplicate),
        "malformed_lines": len(malformed_kinds),
        "malformed_kinds": malformed_kinds,
        "calls_never_ended": len(never),
        "never_ended_call_ids": never,
        "evaluation_run": {"run_id": RUN_ID, "calls": sum(1 for p in plans if p.scenario_name)},
        "production_calls": sum(1 for p in plans if p.production),
        "scenario_domains": dict(sorted(domains.items())),
        "production_domains": dict(sorted(production.items())),
        "agents": dict(sorted(agents.items())),
        "event_types": dict(sorted(types.items())),
        "stop_reasons": dict(sorted(stop_reasons.items())),
        "first_ts_ms": min(timestamps),
        "last_ts_ms": max(timestamps),
    }


# -------------------------------------------------------------------------------------------- entry


def generate(seed: int, n_calls: int, oversized_record: bool = False) -> tuple[bytes, dict[str, Any]]:
    """The log's bytes and its manifest: a pure function of the arguments."""
    rng = Random(seed)
    plans = plan_calls(rng, n_calls)
    calls = [script_call(plan, rng) for plan in plans]
    check_inactivity(plans, calls)
    kinds = MALFORMED_KINDS + (("oversized",) if oversized_record else ())
    lines, malformed_kinds = assemble_log(rng, plans, calls, kinds)
    body = b"".join(line.encode() + b"\n" for line in lines)
    return body, manifest(seed, plans, lines, malformed_kinds)


def manifest_path(out: Path) -> Path:
    return out.with_name(out.name.removesuffix(".jsonl") + ".manifest.json")


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--calls", type=int, default=240)
    parser.add_argument("--out", type=Path, default=Path("samples/calls.jsonl"))
    parser.add_argument(
        "--oversized-record",
        action="store_true",
        help="add a record over the 1 MiB message limit (its dead letter outgrows a broker's default limit)",
    )
    args = parser.parse_args(None if argv is None else list(argv))
    if args.calls < 1:
        parser.error(f"--calls must be at least 1, got {args.calls}")
    body, counts = generate(args.seed, args.calls, args.oversized_record)
    try:
        args.out.write_bytes(body)
        manifest_path(args.out).write_text(json.dumps(counts, indent=2) + "\n")
    except OSError as exc:
        parser.exit(2, f"{parser.prog}: cannot write {args.out}: {exc.strerror or exc}\n")
    print(f"wrote {args.out} ({len(body):,} bytes, {counts['lines']} lines, {counts['calls']} calls)")


if __name__ == "__main__":
    main()
