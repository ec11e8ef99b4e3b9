"""The event contract, version 1: one typed structure per event type.

Every event travels in the same envelope (`v`, `event_id`, `call_id`, `ts_ms`, `type`, `data`); the
envelope's `type` selects the structure of `data`. The structures below are the single definition from
which decoding, validation and the JSON Schemas in `schemas/` all come.

Times: `ts_ms` is event time in Unix epoch milliseconds. A turn's `start_ms`/`end_ms` and word times are
milliseconds from the start of the call, as speech-to-text reports offsets into the audio.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

import msgspec
from msgspec import Struct

ContractVersion = Literal[1]
CONTRACT_VERSION: ContractVersion = 1

Role = Literal["user", "agent"]
# The evaluation harness's SuccessSignal values (models/scenario.py): an unknown name is an input error.
SuccessSignalName = Literal[
    "is_action_match", "db_state_match", "db_state_assertion", "nl_assertion", "judge_passed", "clean_exit"
]
Side = Literal["agent", "user"]
# The evaluation runner's --min-agent-turns default: fewer agent LLM calls than this and a scenario
# stalled (forced to fail). A scenario may set its own floor.
DEFAULT_MIN_AGENT_TURNS = 2

# Event time is bounded so that every time the engine derives from it stays usable: the last
# millisecond of year 9999 is the last instant a result's ISO timestamps can name, and a deadline
# (event time plus an inactivity timeout) then stays far inside MessagePack's 64-bit integers.
MAX_TS_MS = 253_402_300_799_999
EventTime = Annotated[int, msgspec.Meta(ge=0, le=MAX_TS_MS)]
# At most a year: a finite, positive number of seconds (NaN and infinity are refused with the rest).
MAX_INACTIVITY_TIMEOUT_S = 31_536_000.0
InactivityTimeout = Annotated[float, msgspec.Meta(gt=0, le=MAX_INACTIVITY_TIMEOUT_S)]
# Every other number of the contract: finite (MessagePack carries NaN and infinity, which would turn
# scores and statistics into NaN) and within ±10^12 — for milliseconds, some 31 years either way.
FINITE_BOUND = 1e12
Finite = Annotated[float, msgspec.Meta(ge=-FINITE_BOUND, le=FINITE_BOUND)]
# A measured duration: a negative one is no measurement (it would score as better than instant).
Duration = Annotated[float, msgspec.Meta(ge=0, le=FINITE_BOUND)]


# --------------------------------------------------------------------------------------------- data


class ScenarioSpec(Struct, forbid_unknown_fields=False, gc=False):
    """The evaluation scenario a simulated call runs (the harness's Scenario, flattened for the wire)."""

    name: str | None = None
    domain: str | None = None
    description: str | None = None
    success_signals: list[SuccessSignalName] | None = None
    reference_answer: list[dict[str, Any]] | dict[str, Any] | None = None
    ignore_capitalization: bool = False
    ignore_punctuation: bool = False
    clean_text: bool = False
    disallow_extra_items: bool = False
    # callqa's: pair reference and predicted actions so that a valid pairing is always found (the
    # harness pairs first-fit and can miss one). Off by default, to give the harness's verdict.
    optimal_action_pairing: bool = False
    expected_db_hash: str | None = None
    # The expected DB itself, optional: when sent, a failed db_state_match carries a diff of it and
    # the agent's DB (`db_state_diff`). Large DBs may not fit in one message; the hash alone scores.
    expected_db: dict[str, Any] | None = None
    db_state_assertions: list[dict[str, Any]] | None = None
    nl_assertions: list[str] | None = None
    conversation_end_policy: Literal["tool-only", "valid-terminal-state"] = "tool-only"
    min_agent_turns: Annotated[int, msgspec.Meta(ge=0)] = DEFAULT_MIN_AGENT_TURNS
    judge: bool = False
    # The judge's score runs from 0 to 1: a threshold outside could never, or always, be passed.
    judge_threshold: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    judge_include_conversation: bool = False


class AgentConfig(Struct, forbid_unknown_fields=False, gc=False):
    prompt: str | None = None
    flow: dict[str, Any] | list[Any] | str | None = None


class CallStartedData(Struct, forbid_unknown_fields=False, gc=False):
    agent_id: str
    cohort_ids: list[str] = []
    run_id: str | None = None
    scenario: ScenarioSpec | None = None
    agent_config: AgentConfig | None = None
    variables: dict[str, Any] = {}
    inactivity_timeout_s: InactivityTimeout | None = None


Word = tuple[str, Finite, Finite]


def word_span(words: list[Word]) -> tuple[float, float]:
    """A turn's time by its words: from the earliest word's start to the latest word's end."""
    return min(w[1] for w in words), max(w[2] for w in words)


class TurnData(Struct, forbid_unknown_fields=False, gc=False):
    role: Role
    text: str
    start_ms: Finite | None = None
    end_ms: Finite | None = None
    words: list[Word] | None = None


class RtviMessage(Struct, forbid_unknown_fields=False, gc=False):
    """A raw RTVI server message (Pipecat protocol 2.x): `{label, type, data}`."""

    type: str
    label: str = "rtvi-ai"
    data: Any = None


class RtviData(Struct, forbid_unknown_fields=False, gc=False):
    message: RtviMessage
    side: Side = "agent"


class LatencyData(Struct, forbid_unknown_fields=False, gc=False):
    latency_ms: Duration
    user_transcript: str = ""
    agent_transcript: str = ""


class ToolCallData(Struct, forbid_unknown_fields=False, gc=False):
    """`arguments`: the call's arguments as the model wrote them, JSON text (`"{\"order_id\": 7}"`,
    checked as JSON by tool call accuracy) or the decoded object (`{"order_id": 7}`, as most SDKs hand
    it over); "" or {} for none. `result`: what the tool returned, any JSON value (an object, text, a
    number, a list); null or absent: no result (yet). A failure is a result with a non-empty `error` or
    `errors` key, `ok`/`success` false, a `status` of 400 or more, or text starting with error/failed."""

    name: str
    arguments: str | dict[str, Any]
    tool_call_id: str | None = None
    result: Any = None
    side: Side = "agent"


def has_arguments(arguments: str | dict[str, Any]) -> bool:
    """Whether a tool call's `arguments` say anything (blank text and {} do not)."""
    return bool(arguments.strip() if isinstance(arguments, str) else arguments)


class KbRetrievalData(Struct, forbid_unknown_fields=False, gc=False):
    passages: list[str]
    query: str | None = None


class NodeTransitionData(Struct, forbid_unknown_fields=False, gc=False):
    to: str
    from_: str | None = msgspec.field(default=None, name="from")


class TransferData(Struct, forbid_unknown_fields=False, gc=False):
    phase: Literal["started", "bridged", "failed"]
    target: str | None = None


class DbStateData(Struct, forbid_unknown_fields=False, gc=False):
    side: Side
    hash: str | None = None
    db: dict[str, Any] | None = None


# The stop reasons callqa knows, and what each means to the scoring (docs/reference/events.md). Any
# other text is accepted and kept as sent: it is no agent exit (clean_exit then needs
# end_conversation_tool_called), as "[CALLER_HANGUP]" is not.
STOP_REASONS: dict[str, str] = {
    "[EXIT]": "the agent ended the call (its end-of-conversation tool, or its pipeline's end); "
    "a clean exit when `end_conversation_tool_called` does not say otherwise",
    "[SIMULATOR_EXIT]": "the simulated user ended the conversation (an evaluation run)",
    "[CALLER_HANGUP]": "the caller hung up (a production call); not a clean exit",
    "[CANCELLED]": "the bot's pipeline was cancelled (e.g. its process was told to stop) without the "
    "caller's hanging up being known",
    "[ERROR]": "the bot's pipeline stopped on an error (`reason` holds it)",
    "[INACTIVITY_TIMEOUT]": "written by callqa: no event for `inactivity_timeout_s` (a bot that died); "
    "producers do not send it",
}


class CallEndedData(Struct, forbid_unknown_fields=False, gc=False):
    stop_reason: str
    reason: str | None = None
    end_conversation_tool_called: bool | None = None
    simulator_end_reported: bool | None = None
    trace_metrics: dict[str, Any] | None = None


Sentiment = Literal["Positive", "Neutral", "Negative", "Unknown"]


class CallAnnotatedData(Struct, forbid_unknown_fields=False, gc=False):
    user_sentiment: Sentiment | None = None


class TranscriptCorrectedData(Struct, forbid_unknown_fields=False, gc=False):
    """A human correction of what the user said in one turn; `turn_index` is 0-based over all of the
    call's turns, in arrival order, and must name a user turn (else the event is dead-lettered).
    `original`, when given, is the text the correction replaces, as the producer sent it: a turn the
    worker refused (dead-lettered) moves the turns after it, and the correction is then refused
    rather than applied to the wrong turn."""

    turn_index: Annotated[int, msgspec.Meta(ge=0)]
    text: str
    original: str | None = None


class JudgeResultData(Struct, forbid_unknown_fields=False, gc=False):
    """A recorded LLM-judge answer (or its error), so that replay never calls the model again.

    `qa` holds the QA-metric judge's parsed answer, `evaluation` the evaluation judge's
    (judge_result.json), `criteria` the verdicts of a cohort's LLM resolution criteria.
    """

    model: str | None = None
    qa: dict[str, Any] | None = None
    evaluation: dict[str, Any] | None = None
    criteria: dict[str, Any] | None = None
    error: str | None = None
    input: dict[str, Any] | None = None


class AttemptDiscardedData(Struct, forbid_unknown_fields=False, gc=False):
    reason: str


# The call_id (and Kafka key) of watermark events: they belong to no call.
WATERMARK_CALL_ID = "__watermark__"


class WatermarkData(Struct, forbid_unknown_fields=False, gc=False):
    """A producer's promise: nothing older than the envelope's `ts_ms` follows on this partition.

    `end_of_input` promises that nothing at all follows: every open call may be swept now, or with
    `calls` (the input's calls on this partition; several such watermarks may name them all) only
    those of them still open, so that one producer's end does not end another's calls on a shared
    deployment.
    `partition` names the partition it was sent to, so that a replay applies it to the same calls
    (its key does not choose its partition).
    """

    end_of_input: bool = False
    partition: int | None = None
    calls: list[str] | None = None
    # An operator's reset (`callqa watermark reset`): the partition's time is set to `ts_ms`, even
    # lower than it was, and a leap it held back is dropped; for a partition moved too far ahead.
    reset: bool = False


# ---------------------------------------------------------------------------------------- envelopes


# Events and their data are plain trees decoded from bytes, never part of a reference cycle, so they
# are kept out of the cyclic garbage collector (`gc=False`): a worker allocates millions of them.
class Event(Struct, tag_field="type", forbid_unknown_fields=False, kw_only=True, gc=False):
    """The envelope every event shares; subclasses fix `type` and the structure of `data`."""

    event_id: str
    call_id: str
    ts_ms: EventTime
    v: ContractVersion = CONTRACT_VERSION


class CallStarted(Event, tag="call.started"):
    data: CallStartedData


class Turn(Event, tag="turn"):
    data: TurnData


class Rtvi(Event, tag="rtvi"):
    data: RtviData


class Latency(Event, tag="latency"):
    data: LatencyData


class ToolCall(Event, tag="tool.call"):
    data: ToolCallData


class KbRetrieval(Event, tag="kb.retrieval"):
    data: KbRetrievalData


class NodeTransition(Event, tag="node.transition"):
    data: NodeTransitionData


class Transfer(Event, tag="transfer"):
    data: TransferData


class DbState(Event, tag="db.state"):
    data: DbStateData


class CallEnded(Event, tag="call.ended"):
    data: CallEndedData


class CallAnnotated(Event, tag="call.annotated"):
    data: CallAnnotatedData


class TranscriptCorrected(Event, tag="transcript.corrected"):
    data: TranscriptCorrectedData


class JudgeResult(Event, tag="judge.result"):
    data: JudgeResultData


class AttemptDiscarded(Event, tag="attempt.discarded"):
    data: AttemptDiscardedData


class Watermark(Event, tag="watermark"):
    data: WatermarkData = msgspec.field(default_factory=WatermarkData)


AnyEvent = (
    CallStarted
    | Turn
    | Rtvi
    | Latency
    | ToolCall
    | KbRetrieval
    | NodeTransition
    | Transfer
    | DbState
    | CallEnded
    | CallAnnotated
    | TranscriptCorrected
    | JudgeResult
    | AttemptDiscarded
    | Watermark
)

EVENT_TYPES: dict[str, type[Event]] = {cls.__struct_config__.tag: cls for cls in get_args(AnyEvent)}

# Events that may still change a call's result after it ended: each publishes version + 1.
RESCORE_TYPES = frozenset({"call.annotated", "transcript.corrected", "judge.result"})
RESCORE_CLASSES = frozenset(EVENT_TYPES[tag] for tag in RESCORE_TYPES)
# What may come after a call's end: the rescoring events, and a DB state, which a harness asks the agent
# for once the conversation is over (and which a call ended by the inactivity sweep can only have after
# its end). A DB state is part of the call while it runs too: it holds it open, and may open it, as any
# event of a running call does.
AFTER_END_TYPES = RESCORE_TYPES | {"db.state"}
AFTER_END_CLASSES = frozenset(EVENT_TYPES[tag] for tag in AFTER_END_TYPES)

# An event's signature: its type and its event time in one integer (the type's number above the 48
# bits that every event time fits in). A call keeps it beside each event_id it applied, so that an
# event sent again (the same signature) is told apart from another event under an id already used.
# What the rest of an event says is not compared: that would mean encoding every event, and a second
# event reusing an id (a restarted counter, an id made from a turn's index) has a time of its own.
_SIGNATURE_TS_BITS = 48
_TAG_NUMBERS: dict[type[Event], int] = {EVENT_TYPES[tag]: number for number, tag in enumerate(sorted(EVENT_TYPES))}
_TAGS_BY_NUMBER = sorted(EVENT_TYPES)
assert MAX_TS_MS < 1 << _SIGNATURE_TS_BITS


def event_signature(event: Event) -> int:
    return (_TAG_NUMBERS[type(event)] << _SIGNATURE_TS_BITS) | event.ts_ms


def signature_parts(signature: int) -> tuple[str, int]:
    """(type, ts_ms) of the event an `event_signature` was taken of."""
    return _TAGS_BY_NUMBER[signature >> _SIGNATURE_TS_BITS], signature & ((1 << _SIGNATURE_TS_BITS) - 1)


class Batch(Struct, forbid_unknown_fields=False, gc=False):
    """Several events in one Kafka message: of one call (`call_id` set) or of one partition's calls."""

    events: list[Any]
    call_id: str | None = None
    v: ContractVersion = CONTRACT_VERSION
