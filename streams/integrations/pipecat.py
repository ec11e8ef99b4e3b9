"""CallqaObserver: one line in a Pipecat bot, and its calls are scored.

    from callqa.pipecat import CallqaObserver
    worker = PipelineWorker(pipeline, params=PipelineParams(enable_metrics=True, enable_usage_metrics=True),
                            observers=[CallqaObserver(bootstrap_servers="localhost:9092", call_id=call_id,
                                                      agent_id="support-bot")])

It publishes the call's events to `callqa.events` as the event contract's JSON (docs/reference/events.md):
- `call.started` when the pipeline starts, with the keyword arguments it was given (`cohort_ids`,
  `run_id`, `scenario`, `agent_config`, `variables`, `inactivity_timeout_s`);
- a `turn` per user turn (final transcriptions joined, timed by the STT's word timings when given, else
  by the user's started/stopped speaking) and per agent turn (the TTS text the bot spoke, from its
  started to its stopped speaking, cut where the user interrupted), times in ms of the pipeline clock;
- the RTVI messages callqa reads (metrics: TTFB and tokens; speaking; function calls at FULL level),
  made by a private `RTVIObserver` that sends to callqa only: the bot's own RTVI is left as it is;
- `call.ended` at EndFrame (`[EXIT]`), CancelFrame (`[CANCELLED]`, or `[CALLER_HANGUP]` after
  `caller_hung_up()`) or either after an error that made a processor unusable (`[ERROR]`, with the
  error as `reason`), after every earlier event.

It never blocks the pipeline: events go into a bounded buffer that a background task sends in
batches, each kept until the broker acknowledged it; a broker outage loses only what overflows the
buffer, counted in `dropped` (and logged). At cleanup (the worker's end) the buffer is flushed, for
`flush_timeout_s` at most; what the broker still has not taken is logged and left in `undelivered`.

Self-contained on purpose (standard library, pipecat, aiokafka): a bot's own packages named `models`,
`streams` or `scorers` must neither shadow nor be shadowed by callqa's. Import it as `callqa.pipecat`.
Supported: pipecat-ai 1.14 up to, not including, 2.0 (PipelineWorker and WorkerRunner, which replaced
the deprecated PipelineTask and PipelineRunner in 1.3); tested on 1.14.0, the newest release.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    CancelFrame,
    EndFrame,
    ErrorFrame,
    FunctionCallInProgressFrame,
    InterruptionFrame,
    StartFrame,
    TranscriptionFrame,
    TTSTextFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.processors.frame_processor import FrameDirection
from pipecat.processors.frameworks.rtvi.observer import (
    RTVIFunctionCallReportLevel,
    RTVIObserver,
    RTVIObserverParams,
)
from pipecat.transports.base_output import BaseOutputTransport

log = logging.getLogger("callqa.pipecat")

EVENTS_TOPIC = "callqa.events"
CONTRACT_VERSION = 1
# The RTVI messages callqa scores (metrics, handoff latency, tool calls, the end tool); the rest
# (LLM text, audio levels, transcripts) it does not read, and they would only fill the buffer.
RTVI_TYPES_READ = frozenset(
    {
        "metrics",
        "bot-started-speaking",
        "bot-stopped-speaking",
        "user-started-speaking",
        "user-stopped-speaking",
        "llm-function-call-started",
        "llm-function-call-in-progress",
        "llm-function-call-stopped",
        "server-message",
    }
)
# The names the harness's end-of-conversation tool goes by (call.ended's end_conversation_tool_called).
END_TOOL_NAMES = frozenset({"EndConversationTool", "end_conversation", "end_call"})
EXIT, CANCELLED, CALLER_HANGUP, ERROR = "[EXIT]", "[CANCELLED]", "[CALLER_HANGUP]", "[ERROR]"
DEFAULT_BUFFER_EVENTS = 10_000
BATCH_EVENTS = 200  # events a message at most (a message stays far below the 1 MB limit)
RETRY_S = 1.0
FLUSH_TIMEOUT_S = 10.0


# ------------------------------------------------------------------------------------ the events


@dataclass(slots=True)
class _Speech:
    """A turn being heard: its text so far, its words and its times (ms of the pipeline clock)."""

    texts: list[str] = field(default_factory=list)
    words: list[list[Any]] = field(default_factory=list)
    start_ms: int | None = None
    end_ms: int | None = None

    def text(self) -> str:
        return " ".join(t.strip() for t in self.texts if t.strip())


def turn_data(role: str, speech: _Speech) -> dict[str, Any]:
    data: dict[str, Any] = {"role": role, "text": speech.text()}
    if speech.start_ms is not None:
        data["start_ms"] = speech.start_ms
    if speech.end_ms is not None:
        data["end_ms"] = max(speech.end_ms, speech.start_ms or 0)
    if speech.words:
        data["words"] = speech.words
    return data


def stt_words(result: Any) -> list[list[Any]]:
    """Word timings from an STT's raw result, where it gives them (`[word, start_ms, end_ms]`, ms
    from the start of the audio): Deepgram's `channel.alternatives[0].words` (seconds) and lists of
    `{word|text, start, end}` in seconds, as most STT services give them. Nothing, where it does not."""
    alternatives = _get(_get(result, "channel"), "alternatives")
    words = _get(alternatives[0], "words") if isinstance(alternatives, list) and alternatives else _get(result, "words")
    out: list[list[Any]] = []
    for word in words if isinstance(words, list) else []:
        text = _get(word, "punctuated_word") or _get(word, "word") or _get(word, "text")
        start, end = _get(word, "start"), _get(word, "end")
        if isinstance(text, str) and isinstance(start, (int, float)) and isinstance(end, (int, float)):
            out.append([text, round(start * 1000), round(end * 1000)])
    return out


def _ends_the_call(error: Any) -> bool:
    """An error the pipeline worker ends or cancels the call for: a processor that can no longer do its
    job (`push_error(..., force_treat_as_permanent=True)`), or, before Pipecat 2.0, `fatal`."""
    processor = getattr(error, "processor", None)
    return (processor is not None and getattr(processor, "is_usable", True) is False) or bool(
        error.__dict__.get("fatal", False)
    )


def _get(thing: Any, key: str) -> Any:
    return thing.get(key) if isinstance(thing, dict) else getattr(thing, key, None)


# ------------------------------------------------------------------------------------ the sender


class _Sender:
    """A bounded buffer of encoded events and the task that sends them in order, in batches, each
    batch taken off the buffer only once the broker acknowledged it (retried until then)."""

    def __init__(
        self, bootstrap_servers: str, topic: str, call_id: str, max_events: int, producer_config: dict[str, Any]
    ) -> None:
        self.bootstrap_servers, self.topic, self.call_id = bootstrap_servers, topic, call_id
        self.max_events, self.producer_config = max_events, producer_config
        self.buffer: collections.deque[dict[str, Any]] = collections.deque()
        self.dropped = 0
        self.sent = 0
        self.failures = 0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._producer: Any = None

    def offer(self, event: dict[str, Any]) -> None:
        if len(self.buffer) >= self.max_events:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning(
                    "callqa: event buffer full (%d events): %d events of call %s dropped so far",
                    self.max_events,
                    self.dropped,
                    self.call_id,
                )
            return
        self.buffer.append(event)
        self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            if not self.buffer:
                self._wake.clear()
                await self._wake.wait()
                continue
            batch = [self.buffer[i] for i in range(min(BATCH_EVENTS, len(self.buffer)))]
            try:
                await self._send(batch)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a broker outage: keep the events, try again
                self.failures += 1
                if self.failures == 1 or self.failures % 30 == 0:
                    log.warning(
                        "callqa: cannot deliver events of call %s (%s: %s); %d buffered, retrying",
                        self.call_id,
                        type(exc).__name__,
                        exc,
                        len(self.buffer),
                    )
                await self._close_producer()
                await asyncio.sleep(RETRY_S)
                continue
            for _ in batch:
                self.buffer.popleft()
            self.sent += len(batch)

    async def _send(self, batch: list[dict[str, Any]]) -> None:
        if self._producer is None:
            from aiokafka import AIOKafkaProducer

            producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap_servers, **self.producer_config)
            try:
                await producer.start()
            except BaseException:
                await producer.stop()
                raise
            self._producer = producer
        message = batch[0] if len(batch) == 1 else {"v": CONTRACT_VERSION, "call_id": self.call_id, "events": batch}
        await self._producer.send_and_wait(self.topic, json.dumps(message).encode(), key=self.call_id.encode())

    async def _close_producer(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            try:
                await asyncio.wait_for(producer.stop(), timeout=3)
            except Exception:  # a producer that cannot stop cleanly is let go
                pass

    async def flush(self, timeout_s: float) -> bool:
        """Wait (at most `timeout_s`) until every buffered event is acknowledged; True when so."""
        deadline = time.monotonic() + timeout_s
        while self.buffer and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return not self.buffer

    async def close(self, timeout_s: float) -> None:
        """Flush, then stop sending; what is still buffered stays there, undelivered."""
        if not await self.flush(timeout_s):
            log.warning("callqa: %d events of call %s not delivered at shutdown", len(self.buffer), self.call_id)
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None
        await self._close_producer()


# ----------------------------------------------------------------------------------- the observer


class _RtviRelay(RTVIObserver):
    """Pipecat's own RTVI message making, sent to callqa instead of to a client. Held privately (not
    an observer of the task), so PipelineWorker neither takes it for the bot's RTVI nor turns that off."""

    def __init__(self, deliver: Any, params: RTVIObserverParams) -> None:
        super().__init__(None, params=params)
        self._deliver = deliver

    async def send_rtvi_message(self, model: Any, exclude_none: bool = True) -> None:
        message = model.model_dump(mode="json", exclude_none=exclude_none)
        if message.get("type") in RTVI_TYPES_READ and not (message["type"] == "metrics" and not message.get("data")):
            self._deliver(message)


class CallqaObserver(BaseObserver):
    """Publishes one Pipecat call to callqa (see the module docstring). `dropped` counts the events
    lost to a full buffer, `sent` those the broker acknowledged, and `undelivered` holds the rest.
    `flush_timeout_s`: how long cleanup waits for the buffer to drain (the pipeline has ended by then)."""

    def __init__(
        self,
        *,
        bootstrap_servers: str,
        call_id: str,
        agent_id: str,
        topic: str = EVENTS_TOPIC,
        buffer_events: int = DEFAULT_BUFFER_EVENTS,
        end_tool_names: frozenset[str] = END_TOOL_NAMES,
        producer_config: dict[str, Any] | None = None,
        flush_timeout_s: float = FLUSH_TIMEOUT_S,
        **call_started_fields: Any,
    ) -> None:
        super().__init__()
        self.call_id = call_id
        self._flush_timeout_s = flush_timeout_s
        self._started = {"agent_id": agent_id, **call_started_fields}
        self._end_tool_names = end_tool_names
        self._sender = _Sender(bootstrap_servers, topic, call_id, buffer_events, dict(producer_config or {}))
        self._run_id = uuid.uuid4().hex[:8]  # (event ids stay unique if a restarted bot reuses the call_id)
        self._seq = 0
        self._zero_ms: int | None = None  # wall clock (epoch ms) at pipeline clock 0
        self._now_ms = 0  # pipeline clock of the frame being handled
        self._has_output_transport = False
        self._user = _Speech()
        self._user_speaking = False
        self._agent: _Speech | None = None
        self._end_tool_called = False
        self._fatal_error: str | None = None
        self._hung_up = False
        self._ended = False
        self._rtvi = _RtviRelay(
            self._rtvi_event, RTVIObserverParams(function_call_report_level={"*": RTVIFunctionCallReportLevel.FULL})
        )

    # -- what a bot may read or say ----------------------------------------------------------------

    @property
    def dropped(self) -> int:
        return self._sender.dropped

    @property
    def sent(self) -> int:
        return self._sender.sent

    @property
    def undelivered(self) -> list[dict[str, Any]]:
        """The events not (yet) acknowledged, oldest first: after cleanup, those the broker never got."""
        return list(self._sender.buffer)

    @property
    def started_ts_ms(self) -> int | None:
        """The call's start (its `call.started` time, Unix ms): pipeline clock 0. None before it starts."""
        return self._zero_ms

    def caller_hung_up(self) -> None:
        """Say that the caller hung up: the cancellation that follows ends the call as `[CALLER_HANGUP]`
        (call it from the transport's `on_client_disconnected` before cancelling the worker)."""
        self._hung_up = True

    async def flush(self, timeout_s: float = FLUSH_TIMEOUT_S) -> bool:
        return await self._sender.flush(timeout_s)

    async def cleanup(self) -> None:
        if self._zero_ms is not None and not self._ended:
            # The worker cancelled the call without its CancelFrame reaching observers (it does so on
            # an unusable processor): the call ended all the same, at the last frame seen.
            self._end(None)
        await super().cleanup()
        await self._rtvi.cleanup()
        await self._sender.close(self._flush_timeout_s)

    # -- frames -------------------------------------------------------------------------------------

    async def on_push_frame(self, data: FramePushed) -> None:
        frame = data.frame
        if isinstance(frame, StartFrame) and isinstance(data.source, BaseOutputTransport):
            self._has_output_transport = True
        # A frame counts once, when first pushed; spoken text, when the output transport plays it.
        if isinstance(frame, TTSTextFrame) and self._has_output_transport:
            if not isinstance(data.source, BaseOutputTransport):
                return
        elif not data.first_push:
            return
        # A broadcast frame (speaking, interruptions) is pushed both ways as two frames: count one.
        if getattr(frame, "broadcast_sibling_id", None) is not None and data.direction != FrameDirection.DOWNSTREAM:
            return
        if self._ended:
            return
        self._now_ms = data.timestamp // 1_000_000
        if self._zero_ms is None:
            self._zero_ms = time.time_ns() // 1_000_000 - self._now_ms
            self._emit("call.started", dict(self._started))
        await self._frame(frame)
        await self._rtvi.on_push_frame(data)

    async def _frame(self, frame: Any) -> None:
        now = self._now_ms
        # A user turn goes once the user stopped speaking and its text is final, whichever comes last
        # (STT often finalises after the VAD's stop): sent then, not held for the bot's answer, it is
        # not lost with a bot that dies before answering.
        if isinstance(frame, UserStartedSpeakingFrame):
            self._user_speaking = True
            if self._user.start_ms is None:
                self._user.start_ms = now
        elif isinstance(frame, UserStoppedSpeakingFrame):
            self._user_speaking = False
            self._user.end_ms = now
            self._user_turn()
        elif isinstance(frame, TranscriptionFrame):  # (final: interim ones are another class)
            self._user.texts.append(frame.text)
            self._user.words.extend(stt_words(frame.result))
            if self._user.start_ms is None:
                self._user.start_ms = now
            if not self._user_speaking:
                if self._user.end_ms is None:
                    self._user.end_ms = now
                self._user_turn()
        elif isinstance(frame, BotStartedSpeakingFrame):
            self._user_turn()
            self._agent = _Speech(start_ms=now)
        elif isinstance(frame, TTSTextFrame):
            if self._agent is None:
                self._agent = _Speech(start_ms=now)
            self._agent.texts.append(frame.text)
            self._agent.words.extend([word, now, None] for word in frame.text.split())
        elif isinstance(frame, (BotStoppedSpeakingFrame, InterruptionFrame)):
            self._agent_turn()
        elif isinstance(frame, FunctionCallInProgressFrame) and frame.function_name in self._end_tool_names:
            self._end_tool_called = True
        elif isinstance(frame, ErrorFrame) and _ends_the_call(frame):
            self._fatal_error = frame.error
        elif isinstance(frame, (EndFrame, CancelFrame)):
            self._end(frame)

    def _user_turn(self) -> None:
        """Send the user's turn, if it has text (else keep its times for the text to come)."""
        if not self._user.text():
            return
        speech, self._user = self._user, _Speech()
        if speech.text():
            if speech.words:  # the STT's word times are offsets into the audio, as the turn's are
                speech.start_ms, speech.end_ms = speech.words[0][1], speech.words[-1][2]
            self._emit("turn", turn_data("user", speech))

    def _agent_turn(self) -> None:
        speech, self._agent = self._agent, None
        if speech is None:
            return
        speech.end_ms = self._now_ms
        # TTS text frames come as their audio plays: a frame's words last until the next frame's start,
        # the last frame's until the bot stopped speaking or was interrupted.
        until, frame_start = speech.end_ms, None
        for word in reversed(speech.words):
            if frame_start is not None and word[1] != frame_start:
                until = frame_start
            frame_start = word[1]
            word[2] = max(word[1], until)
        if speech.text():
            self._emit("turn", turn_data("agent", speech))

    def _end(self, frame: Any) -> None:
        self._user_turn()
        self._agent_turn()
        if self._fatal_error is not None:  # (the worker's policy may end or cancel it)
            stop_reason = ERROR
        elif isinstance(frame, EndFrame):
            stop_reason = EXIT
        else:
            stop_reason = CALLER_HANGUP if self._hung_up else CANCELLED
        data: dict[str, Any] = {"stop_reason": stop_reason, "end_conversation_tool_called": self._end_tool_called}
        reason = self._fatal_error if stop_reason == ERROR else getattr(frame, "reason", None)
        if reason:
            data["reason"] = str(reason)
        self._emit("call.ended", data)
        self._ended = True

    # -- events ---------------------------------------------------------------------------------------

    def _rtvi_event(self, message: dict[str, Any]) -> None:
        self._emit("rtvi", {"side": "agent", "message": message})

    def _emit(self, event_type: str, data: dict[str, Any]) -> None:
        self._seq += 1
        self._sender.offer(
            {
                "v": CONTRACT_VERSION,
                "event_id": f"{self.call_id}:{self._run_id}:{self._seq}",
                "call_id": self.call_id,
                "ts_ms": (self._zero_ms or 0) + self._now_ms,
                "type": event_type,
                "data": data,
            }
        )
