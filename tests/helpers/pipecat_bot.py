"""A Pipecat bot without audio or services: processors that push, at set times of a clock the test
holds, the frames a real bot's transport, STT, LLM and TTS push, through a real PipelineWorker."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from pipecat.clocks.base_clock import BaseClock
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    EndFrame,
    ErrorFrame,
    Frame,
    FunctionCallInProgressFrame,
    FunctionCallResultFrame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    MetricsFrame,
    StartFrame,
    TranscriptionFrame,
    TTSTextFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.metrics.metrics import LLMTokenUsage, LLMUsageMetricsData, TTFBMetricsData
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.workers.runner import WorkerRunner

MS = 1_000_000  # the pipeline clock counts nanoseconds


class ScriptClock(BaseClock):
    """The pipeline clock, moved by the script: frame times are the script's, not the machine's."""

    def __init__(self) -> None:
        self.now_ns = 0

    def start(self) -> None:
        pass

    def get_time(self) -> int:
        return self.now_ns


@dataclass(frozen=True)
class At:
    ms: int
    frame: Frame


class ScriptedBot(FrameProcessor):
    """Once started, pushes each scripted frame at its time (an EndFrame or CancelFrame in the script
    goes to the worker, as a bot ends its pipeline); `hold` keeps the pipeline open after the script."""

    def __init__(self, clock: ScriptClock, script: Sequence[At]) -> None:
        super().__init__()
        self._clock, self._script = clock, list(script)
        self.done = asyncio.Event()
        self.worker: PipelineWorker | None = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, StartFrame):
            self.create_task(self._play())

    async def _play(self) -> None:
        for step in self._script:
            self._clock.now_ns = step.ms * MS
            if isinstance(step.frame, EndFrame) or type(step.frame).__name__ == "CancelFrame":
                await self.worker.queue_frame(step.frame)
            elif isinstance(step.frame, ErrorFrame):  # (a service that can no longer work, as one reports it)
                await self.push_error(step.frame.error, force_treat_as_permanent=True)
            else:
                await self.push_frame(step.frame)
            await asyncio.sleep(0)
        self.done.set()


def worker_for(
    bot: ScriptedBot,
    observers: list,
    processors: Sequence[FrameProcessor] = (),
    after: Sequence[FrameProcessor] = (),
    **options,
) -> PipelineWorker:
    """`processors` come before the bot in the pipeline, `after` after it."""
    worker = PipelineWorker(
        Pipeline([*processors, bot, *after]),
        clock=bot._clock,
        observers=observers,
        params=PipelineParams(enable_metrics=True, enable_usage_metrics=True),
        idle_timeout_secs=None,
        **options,
    )
    bot.worker = worker
    return worker


async def run_bot(
    script: Sequence[At], observers: list, processors: Sequence[FrameProcessor] = (), **options
) -> PipelineWorker:
    bot = ScriptedBot(ScriptClock(), script)
    worker = worker_for(bot, observers, processors, **options)
    await run_worker(worker)
    return worker


async def run_worker(worker: PipelineWorker) -> None:
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await runner.run()


# ------------------------------------------------------------------------------------ the call

TOOL_ARGUMENTS = {"order_id": "4521"}
TOOL_RESULT = {"status": "shipped", "eta": "Friday"}


def two_turn_call() -> list[At]:
    """A two-exchange call: the user asks, the agent looks the order up (a tool) and answers, the user
    interrupts the agent's second answer, the agent ends the call."""
    return [
        At(1_000, UserStartedSpeakingFrame()),
        At(2_400, TranscriptionFrame("Where is my order 4521?", "user-1", "2026-12-06T06:00:00Z", finalized=True)),
        At(2_500, UserStoppedSpeakingFrame()),
        At(2_600, LLMFullResponseStartFrame()),
        At(
            2_700,
            FunctionCallInProgressFrame(function_name="lookup_order", tool_call_id="call-1", arguments=TOOL_ARGUMENTS),
        ),
        At(
            2_900,
            FunctionCallResultFrame(
                function_name="lookup_order", tool_call_id="call-1", arguments=TOOL_ARGUMENTS, result=TOOL_RESULT
            ),
        ),
        At(3_000, MetricsFrame(data=[TTFBMetricsData(processor="OpenAILLMService#0", model="gpt-4o", value=0.45)])),
        At(3_050, LLMTextFrame("It shipped and arrives Friday.")),
        At(
            3_100,
            MetricsFrame(
                data=[
                    LLMUsageMetricsData(
                        processor="OpenAILLMService#0",
                        model="gpt-4o",
                        value=LLMTokenUsage(prompt_tokens=120, completion_tokens=9, total_tokens=129),
                    )
                ]
            ),
        ),
        At(3_150, LLMFullResponseEndFrame()),
        At(3_200, MetricsFrame(data=[TTFBMetricsData(processor="CartesiaTTSService#0", value=0.2)])),
        At(3_300, BotStartedSpeakingFrame()),
        At(3_300, TTSTextFrame("It shipped", "word")),
        At(3_800, TTSTextFrame("and arrives Friday.", "word")),
        At(4_900, BotStoppedSpeakingFrame()),
        At(6_000, UserStartedSpeakingFrame()),
        At(7_000, TranscriptionFrame("Can I change the address?", "user-1", "2026-12-06T06:00:05Z", finalized=True)),
        At(7_100, UserStoppedSpeakingFrame()),
        At(7_900, BotStartedSpeakingFrame()),
        At(7_900, TTSTextFrame("Sure, what is", "word")),
        At(8_400, UserStartedSpeakingFrame()),
        At(8_400, InterruptionFrame()),
        At(8_450, BotStoppedSpeakingFrame()),
        At(9_000, TranscriptionFrame("Never mind, thanks.", "user-1", "2026-12-06T06:00:07Z", finalized=True)),
        At(9_100, UserStoppedSpeakingFrame()),
        At(9_500, BotStartedSpeakingFrame()),
        At(9_500, TTSTextFrame("Goodbye!", "word")),
        At(10_000, BotStoppedSpeakingFrame()),
        At(10_500, EndFrame()),
    ]
