"""The LLM judge over the `openai` package: any OpenAI-compatible chat-completions server.

`JudgeClient.judge(requests)` sends a call's judge requests (scorers/judge/requests.py) and returns
the `judge.result` event that records the outcome — the checked answers, or the errors — so that the
call is re-scored from it and a replay never calls the model again. It never raises for a judge
failure: a timeout, an HTTP error, an unreachable server or an unusable answer is recorded as an
error and the metrics keep their heuristic results.

Requests: the structured-output `response_format` (or `json_object`, `judge_response_format`), at most
`judge_concurrency` in flight, each attempt bounded by `judge_timeout_s`, and up to `judge_retries`
retries after `judge_backoff_s`, doubling. A client error (HTTP 4xx other than 408, 409 and 429) is
not retried: it would fail the same way. The API key goes to the server and nowhere else: errors are
scrubbed of it and the event records only the prompts.
"""

from __future__ import annotations

import asyncio
from typing import Callable, TypeVar

import openai
from openai import AsyncOpenAI

from models.events import JudgeResult
from scorers.judge.answers import (
    JudgeAnswerError,
    judge_result_event,
    parse_evaluation_answer,
    parse_qa_answer,
)
from scorers.judge.context import cut
from scorers.judge.requests import JudgeRequest, JudgeRequests
from streams.config import Settings

RETRIED_CLIENT_STATUSES = frozenset({408, 409, 429})
MAX_ERROR_CHARS = 300

Answer = TypeVar("Answer")


class JudgeClient:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._openai = AsyncOpenAI(
            api_key=settings.openai_api_key,
            base_url=settings.openai_base_url,
            timeout=settings.judge_timeout_s,
            max_retries=0,  # retried here, with backoff, under the same timeout per attempt
        )
        self._slots = asyncio.Semaphore(max(1, settings.judge_concurrency))

    async def judge(self, requests: JudgeRequests) -> JudgeResult:
        asks = [self.ask(requests.qa, parse_qa_answer)]
        if requests.evaluation is not None:
            asks.append(self.ask(requests.evaluation, parse_evaluation_answer))
        outcomes = await asyncio.gather(*asks)
        qa, qa_error = outcomes[0]
        evaluation, evaluation_error = outcomes[1] if len(outcomes) > 1 else (None, None)
        return judge_result_event(requests, self.settings.judge_model, qa=qa, qa_error=qa_error,
                                  evaluation=evaluation, evaluation_error=evaluation_error)

    async def ask(self, request: JudgeRequest, parse: Callable[[str | None, JudgeRequest], Answer]) -> tuple[Answer | None, str | None]:
        """(answer, None), or (None, why) once every attempt failed."""
        attempts = max(0, self.settings.judge_retries) + 1
        why = "no attempt"
        for attempt in range(attempts):
            if attempt:
                await asyncio.sleep(self.settings.judge_backoff_s * 2 ** (attempt - 1))
            try:
                async with self._slots:
                    content = await asyncio.wait_for(self._complete(request), self.settings.judge_timeout_s)
                return parse(content, request), None
            except Exception as exc:  # every failure of the judge falls back to the heuristics
                why = self._describe(exc)
                if not retryable(exc):
                    attempts = attempt + 1
                    break
        if attempts > 1:
            why = f"{why} (after {attempts} attempts)"
        return None, why

    async def _complete(self, request: JudgeRequest) -> str | None:
        response = await self._openai.chat.completions.create(
            model=self.settings.judge_model,
            messages=request.messages(),
            response_format=request.response_format(self.settings.judge_response_format),
        )
        if not response.choices:
            raise JudgeAnswerError("the judge returned no choices")
        message = response.choices[0].message
        if getattr(message, "refusal", None):
            raise JudgeAnswerError(f"the judge refused: {message.refusal}")
        return message.content

    def _describe(self, exc: Exception) -> str:
        if isinstance(exc, (asyncio.TimeoutError, openai.APITimeoutError)):
            text = f"the judge did not answer within {self.settings.judge_timeout_s:g} s"
        elif isinstance(exc, openai.APIStatusError):
            text = f"HTTP {exc.status_code} from the judge: {exc.message}"
        elif isinstance(exc, openai.APIConnectionError):
            text = f"cannot reach the judge: {exc}"
        elif isinstance(exc, JudgeAnswerError):
            text = str(exc)
        else:
            text = f"{type(exc).__name__}: {exc}"
        key = self.settings.openai_api_key
        if key:
            text = text.replace(key, "***")
        return cut(" ".join(text.split()), MAX_ERROR_CHARS)

    async def aclose(self) -> None:
        await self._openai.close()


def retryable(exc: BaseException) -> bool:
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code >= 500 or exc.status_code in RETRIED_CLIENT_STATUSES
    return True


async def judge_all(settings: Settings, requests: list[JudgeRequests]) -> list[JudgeResult]:
    """Judge many calls with one client (offline use); results in the order of `requests`."""
    client = JudgeClient(settings)
    try:
        return list(await asyncio.gather(*(client.judge(r) for r in requests)))
    finally:
        await client.aclose()
