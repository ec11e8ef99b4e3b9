"""CallqaObserver in a real Pipecat pipeline, with no broker to reach: the events it derives from the
frames wait, in order, in its buffer (`undelivered`), and the pipeline is never held up by them."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pipecat")

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    CancelFrame,
    EndFrame,
    ErrorFrame,
    Frame,
    OutputTransportMessageUrgentFrame,
    TranscriptionFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.pipeline.worker import ProcessorUnusablePolicy
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.processors.frameworks.rtvi import RTVIProcessor

from callqa.pipecat import CallqaObserver
from tests.helpers.pipecat_bot import (
    At,
    ScriptClock,
    ScriptedBot,
    run_bot,
    run_worker,
    two_turn_call,
    worker_for,
)

NOWHERE = "127.0.0.1:1"  # (nothing listens on port 1: the broker is down for the whole call)


def observer(**options) -> CallqaObserver:
    return CallqaObserver(bootstrap_servers=NOWHERE, call_id="c1", agent_id="support-bot", flush_timeout_s=0, **options)


def observed(script: list[At], **options) -> list[dict]:
    watcher = observer(**options)
    asyncio.run(run_bot(script, [watcher]))
    return watcher.undelivered


def turns(events: list[dict]) -> list[dict]:
    return [e["data"] for e in events if e["type"] == "turn"]


def rtvi_types(events: list[dict]) -> list[str]:
    return [e["data"]["message"]["type"] for e in events if e["type"] == "rtvi"]


def test_the_call_starts_with_the_fields_given_and_ends_last_with_the_agents_exit():
    events = observed(two_turn_call(), run_id="run-7", cohort_ids=["support"], inactivity_timeout_s=30)
    assert events[0]["type"] == "call.started"
    assert events[0]["data"] == {
        "agent_id": "support-bot",
        "run_id": "run-7",
        "cohort_ids": ["support"],
        "inactivity_timeout_s": 30,
    }
    assert events[-1]["type"] == "call.ended"
    assert events[-1]["data"] == {"stop_reason": "[EXIT]", "end_conversation_tool_called": False}
    assert len({e["event_id"] for e in events}) == len(events)


def test_times_are_the_pipeline_clocks_from_the_calls_start():
    events = observed(two_turn_call())
    start = events[0]["ts_ms"]
    assert [e["ts_ms"] - start for e in events if e["type"] == "turn"] == [2_500, 4_900, 7_100, 8_400, 9_100, 10_000]
    assert events[-1]["ts_ms"] - start == 10_500


def test_user_turns_are_the_final_transcriptions_timed_by_the_users_speaking():
    assert [t for t in turns(observed(two_turn_call())) if t["role"] == "user"] == [
        {"role": "user", "text": "Where is my order 4521?", "start_ms": 1_000, "end_ms": 2_500},
        {"role": "user", "text": "Can I change the address?", "start_ms": 6_000, "end_ms": 7_100},
        {"role": "user", "text": "Never mind, thanks.", "start_ms": 8_400, "end_ms": 9_100},
    ]


def test_a_user_turn_takes_the_stts_word_timings_when_it_gives_them():
    deepgram = {
        "channel": {
            "alternatives": [
                {
                    "words": [
                        {"word": "hello", "punctuated_word": "Hello,", "start": 1.02, "end": 1.4},
                        {"word": "there", "start": 1.45, "end": 1.9},
                    ]
                }
            ]
        }
    }
    script = [
        At(1_000, UserStartedSpeakingFrame()),
        At(2_000, TranscriptionFrame("Hello, there", "u", "t", result=deepgram)),
        At(2_100, UserStoppedSpeakingFrame()),
        At(3_000, EndFrame()),
    ]
    assert turns(observed(script)) == [
        {
            "role": "user",
            "text": "Hello, there",
            "start_ms": 1_020,
            "end_ms": 1_900,
            "words": [["Hello,", 1_020, 1_400], ["there", 1_450, 1_900]],
        }
    ]


def test_agent_turns_are_the_spoken_tts_text_cut_where_the_user_interrupted():
    agent = [t for t in turns(observed(two_turn_call())) if t["role"] == "agent"]
    assert [(t["text"], t["start_ms"], t["end_ms"]) for t in agent] == [
        ("It shipped and arrives Friday.", 3_300, 4_900),
        ("Sure, what is", 7_900, 8_400),  # interrupted at 8 400: what the TTS would have said next is not in it
        ("Goodbye!", 9_500, 10_000),
    ]
    # Each TTS text frame's words last until the next frame starts.
    assert agent[0]["words"] == [
        ["It", 3_300, 3_800],
        ["shipped", 3_300, 3_800],
        ["and", 3_800, 4_900],
        ["arrives", 3_800, 4_900],
        ["Friday.", 3_800, 4_900],
    ]


def test_the_rtvi_messages_callqa_reads_are_published_with_function_calls_at_full_level():
    events = observed(two_turn_call())
    assert set(rtvi_types(events)) == {
        "user-started-speaking",
        "user-stopped-speaking",
        "bot-started-speaking",
        "bot-stopped-speaking",
        "metrics",
        "llm-function-call-in-progress",
        "llm-function-call-stopped",
    }
    stopped = next(
        e["data"]["message"]["data"]
        for e in events
        if e["type"] == "rtvi" and e["data"]["message"]["type"] == "llm-function-call-stopped"
    )
    assert stopped == {
        "tool_call_id": "call-1",
        "function_name": "lookup_order",
        "cancelled": False,
        "result": {"status": "shipped", "eta": "Friday"},
    }


@pytest.mark.parametrize(
    "hung_up,fatal,stop_reason",
    [
        (False, False, "[CANCELLED]"),
        (True, False, "[CALLER_HANGUP]"),
        (False, True, "[ERROR]"),
    ],
)
def test_a_cancelled_call_ends_with_why(hung_up, fatal, stop_reason):
    watcher = observer()
    if hung_up:
        watcher.caller_hung_up()
    script = two_turn_call()[:3]
    if fatal:  # (the worker cancels the call: ProcessorUnusablePolicy.CANCEL)
        script.append(At(2_600, ErrorFrame("TTS service connection failed")))
    else:
        script.append(At(3_000, CancelFrame(reason="client disconnected")))
    asyncio.run(run_bot(script, [watcher], processor_unusable_policy=ProcessorUnusablePolicy.CANCEL))
    ended = watcher.undelivered[-1]
    assert (ended["type"], ended["data"]["stop_reason"]) == ("call.ended", stop_reason)
    assert ended["data"]["reason"] == ("TTS service connection failed" if fatal else "client disconnected")


def test_a_full_buffer_drops_and_counts_the_overflow_and_the_pipeline_still_ends():
    watcher = observer(buffer_events=5)
    asyncio.run(run_bot(two_turn_call(), [watcher]))
    everything = observed(two_turn_call())
    assert [e["type"] for e in watcher.undelivered] == [e["type"] for e in everything[:5]]
    assert watcher.dropped == len(everything) - 5
    assert watcher.sent == 0


# ------------------------------------------------------------------------------ the bot's own RTVI


class Client(FrameProcessor):
    """The end of the pipeline, where the transport would send RTVI messages to the bot's client."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[dict] = []

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, OutputTransportMessageUrgentFrame):
            self.messages.append(frame.message)
        await self.push_frame(frame, direction)


def client_messages(with_callqa: bool) -> tuple[list[dict], list[dict]]:
    """What a client behind the bot's own RTVIProcessor (with its observer) receives, and what callqa got."""
    rtvi, client, watcher = RTVIProcessor(), Client(), observer()
    bot = ScriptedBot(ScriptClock(), two_turn_call())
    worker = worker_for(
        bot, [rtvi.create_rtvi_observer(), *([watcher] if with_callqa else [])], processors=[rtvi], after=[client]
    )
    asyncio.run(run_worker(worker))
    assert worker.rtvi is rtvi
    return client.messages, watcher.undelivered


def test_the_bots_own_rtvi_client_gets_the_same_messages_with_callqa_observing():
    without, _ = client_messages(with_callqa=False)
    with_callqa, published = client_messages(with_callqa=True)
    assert with_callqa == without
    assert {m["type"] for m in without} >= {"bot-started-speaking", "metrics", "user-transcription"}
    assert published[-1]["type"] == "call.ended"


def test_without_an_rtvi_processor_the_worker_keeps_its_default_rtvi():
    bot = ScriptedBot(ScriptClock(), two_turn_call())
    worker = worker_for(bot, [observer()])
    assert isinstance(worker.rtvi, RTVIProcessor)


class Broadcaster(ScriptedBot):
    """Pushes its speaking frames both ways, as Pipecat's transports broadcast them."""

    async def push_frame(self, frame: Frame, direction: FrameDirection = FrameDirection.DOWNSTREAM) -> None:
        speaking = (
            BotStartedSpeakingFrame,
            BotStoppedSpeakingFrame,
            UserStartedSpeakingFrame,
            UserStoppedSpeakingFrame,
        )
        if isinstance(frame, speaking) and frame.broadcast_sibling_id is None:  # (the script's, not a copy)
            await self.broadcast_frame(type(frame))
        else:
            await super().push_frame(frame, direction)


def test_broadcast_speaking_frames_count_once():
    watcher = observer()
    bot = Broadcaster(ScriptClock(), two_turn_call())
    asyncio.run(run_worker(worker_for(bot, [watcher])))
    assert turns(watcher.undelivered) == turns(observed(two_turn_call()))
    assert rtvi_types(watcher.undelivered) == rtvi_types(observed(two_turn_call()))
