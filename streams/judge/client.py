"""The LLM judge over the `openai` package: any OpenAI-compatible chat-completions server.

`JudgeClient.judge(requests)` sends a call's judge requests (scorers/judge/requests.py) and returns
the `judge.result` event that records the outcome — the checked answers, or the errors — so that the
call is re-scored from it and a replay never calls the model again. It never raises for a judge
failure: a timeout, an HTTP error, an unreachable server or an unusable answer is recorded as an
error and the metrics keep their heuristic results.

Requests: the structured-output `response_format` (or `json_object`, `judge_response_format`), at most
`judge_concurrency` in flight, each attempt bounded by `judge_timeout_s`, and up to `judge_retries`
retries after `judge_backoff_s`, doubling (or after the Retry-After a 429 or 503 gives, when longer,
up to a minute). A client error (HTTP 4xx other than 408, 409 and 429) is
not retried: it would fail the same way, nor is an answer whose body passes MAX_ANSWER_BYTES (not read
on past that). The API key goes to the server and nowhere else: errors and
answers are scrubbed of it and the event records only the prompts.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

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
from streams.files.output_files import STOP_SIGNALS
from streams.judge.bounded_http import UNCOMPRESSED, BodyTooLarge, BoundedAsyncClient
from streams.redaction import redacted_url

RETRIED_CLIENT_STATUSES = frozenset({408, 409, 429})
MAX_ERROR_CHARS = 300
# A server's Retry-After is honoured up to this, so that one call cannot hold a judge slot for long.
MAX_RETRY_AFTER_S = 60.0
MIN_SECRET_KEY_CHARS = 8
# A chat completion is a few kilobytes; a body past this is not read on (streams/judge/bounded_http.py).
MAX_ANSWER_BYTES = 4 * 1024 * 1024

Answer = TypeVar("Answer")


# The HTTP clients' own records name each request's URL (a base URL's user and password with it) at
# INFO and DEBUG: kept to warnings, whatever the worker's log level.
HTTP_CLIENT_LOGGERS = ("httpx", "httpx2", "httpcore", "openai")


class JudgeClient:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        for name in HTTP_CLIENT_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)
        self._openai = AsyncOpenAI(
            api_key=settings.openai_api_key,
            base_url=settings.openai_base_url,
            timeout=settings.judge_timeout_s,
            max_retries=0,  # retried here, with backoff, under the same timeout per attempt
            default_headers=UNCOMPRESSED,
            http_client=BoundedAsyncClient(MAX_ANSWER_BYTES, timeout=settings.judge_timeout_s),
        )
        self._slots = asyncio.Semaphore(max(1, settings.judge_concurrency))

    async def judge(self, requests: JudgeRequests) -> JudgeResult:
        asks: list[Awaitable[tuple[Any, str | None]]] = [self.ask(requests.qa, parse_qa_answer)]
        if requests.evaluation is not None:
            asks.append(self.ask(requests.evaluation, parse_evaluation_answer))
        outcomes = await asyncio.gather(*asks)
        qa, qa_error = outcomes[0]
        evaluation, evaluation_error = outcomes[1] if len(outcomes) > 1 else (None, None)
        return judge_result_event(
            requests,
            self.settings.judge_model,
            qa=qa,
            qa_error=qa_error,
            evaluation=evaluation,
            evaluation_error=evaluation_error,
        )

    async def ask(
        self, request: JudgeRequest, parse: Callable[[str | None, JudgeRequest], Answer]
    ) -> tuple[Answer | None, str | None]:
        """(answer, None), or (None, why) once every attempt failed."""
        attempts = max(0, self.settings.judge_retries) + 1
        why = "no attempt"
        asked_to_wait_s = 0.0
        for attempt in range(attempts):
            if attempt:
                # (Doubling, up to what a server may ask for: many retries must not overflow or stall.)
                backoff_s = min(self.settings.judge_backoff_s * 2.0 ** min(attempt - 1, 64), MAX_RETRY_AFTER_S)
                await asyncio.sleep(max(backoff_s, asked_to_wait_s))
            try:
                async with self._slots:
                    content = await asyncio.wait_for(self._complete(request), self.settings.judge_timeout_s)
                return parse(content, request), None
            except Exception as exc:  # every failure of the judge falls back to the heuristics
                why = self._describe(exc)
                if not retryable(exc):
                    attempts = attempt + 1
                    break
                asked_to_wait_s = retry_after_s(exc)
        if attempts > 1:
            why = f"{why} (after {attempts} attempts)"
        return None, why

    async def _complete(self, request: JudgeRequest) -> str | None:
        response = await self._openai.chat.completions.create(  # type: ignore[call-overload]  # (plain chat dicts)
            model=self.settings.judge_model,
            messages=request.messages(),
            response_format=request.response_format(),
        )
        choices = getattr(response, "choices", None)
        if choices is None:
            if isinstance(response, str):  # (the client hands over a body it cannot read as JSON as it came)
                raise JudgeAnswerError(f"the judge's answer is not a chat completion: {response[:120]!r}")
            error = getattr(response, "error", None)  # (a 200 carrying an error document, as some proxies send)
            if error is not None:
                said = error.get("message", error) if isinstance(error, dict) else error
                raise JudgeAnswerError(f"the judge answered with an error: {str(said)[:300]}")
            raise JudgeAnswerError("the judge's answer is not a chat completion: it has no choices")
        if not choices:
            raise JudgeAnswerError("the judge returned no choices")
        message = choices[0].message
        if getattr(message, "refusal", None):
            raise JudgeAnswerError(f"the judge refused: {message.refusal}")
        return self._scrubbed_answer(message.content) if message.content is not None else None

    def _describe(self, exc: Exception) -> str:
        if isinstance(exc, (asyncio.TimeoutError, openai.APITimeoutError)):
            text = f"the judge did not answer within {self.settings.judge_timeout_s:g} s"
        elif isinstance(exc, openai.APIStatusError):
            text = f"HTTP {exc.status_code} from the judge: {exc.message}"
            location = exc.response.headers.get("location") if 300 <= exc.status_code < 400 else None
            if location:
                where = redacted_url(str(exc.response.url.join(location)), keep_path=True)
                text = (
                    f"HTTP {exc.status_code} from the judge, a redirect to {where}, not followed: OPENAI_BASE_URL "
                    "must name the API's own address (the part before /chat/completions)"
                )
        elif isinstance(exc, BodyTooLarge):
            text = str(exc)
        elif isinstance(exc, openai.APIConnectionError):
            # (The client's own message is only "Connection error.": what failed is in its cause, a
            # refused connection, an unknown host, a connection cut in the middle of an answer.)
            cause = exc.__cause__
            why = f"{type(cause).__name__}: {cause}" if cause is not None and str(cause) else str(exc)
            text = f"no answer from the judge at {redacted_url(str(self._openai.base_url), keep_path=True)}: {why}"
        elif isinstance(exc, json.JSONDecodeError):
            text = f"the judge's HTTP body is not JSON: {exc}"
        elif isinstance(exc, JudgeAnswerError):
            text = str(exc)
        else:
            text = f"{type(exc).__name__}: {exc}"
        return cut(" ".join(self._scrubbed(text).split()), MAX_ERROR_CHARS)

    def _scrubbed(self, text: str) -> str:
        """`text` without the API key, should a server or proxy echo it (in an error or an answer).
        A key too short to be a secret (a local server's placeholder) is left alone: replacing every
        "e" would garble the text and hide nothing."""
        key = self.settings.openai_api_key
        if key and len(key) >= MIN_SECRET_KEY_CHARS:
            return text.replace(key, "***")
        return text

    def _scrubbed_answer(self, text: str) -> str:
        """An answer without the API key, also where its JSON spells the key with escapes (`\\u0073k-…`,
        `\\/`) that only decoding reveals: the decoded answer is what gets recorded."""
        text = self._scrubbed(text)
        key = self.settings.openai_api_key
        if not key or len(key) < MIN_SECRET_KEY_CHARS or "\\" not in text:
            return text  # (no escape at all: the plain replacement has done it)
        try:
            answer = json.loads(text)
        except (ValueError, RecursionError):
            return text
        try:
            scrubbed = without_secret(answer, key)
        except RecursionError:
            raise JudgeAnswerError("the judge's answer is nested too deeply") from None
        return text if scrubbed == answer else json.dumps(scrubbed)

    async def aclose(self) -> None:
        await self._openai.close()


def without_secret(value: Any, secret: str) -> Any:
    """`value` (decoded JSON) with `secret` replaced by *** in every string, keys included."""
    if isinstance(value, str):
        return value.replace(secret, "***")
    if isinstance(value, list):
        return [without_secret(item, secret) for item in value]
    if isinstance(value, dict):
        return {without_secret(key, secret): without_secret(item, secret) for key, item in value.items()}
    return value


def retry_after_s(exc: BaseException) -> float:
    """The wait a 429 or 503 asked for in its Retry-After header (seconds only; at most
    MAX_RETRY_AFTER_S), 0 when it asked for none."""
    if not isinstance(exc, openai.APIStatusError):
        return 0.0
    try:
        seconds = float(exc.response.headers.get("retry-after", ""))
    except (TypeError, ValueError, AttributeError):
        return 0.0
    return min(seconds, MAX_RETRY_AFTER_S) if seconds > 0 else 0.0  # (NaN is not > 0)


def retryable(exc: BaseException) -> bool:
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code >= 500 or exc.status_code in RETRIED_CLIENT_STATUSES
    return not isinstance(exc, BodyTooLarge)  # (a server that sent too much once sends it again)


class JudgingInterrupted(Exception):
    """The judging was stopped by a signal (Ctrl-C, SIGTERM): the answers that came are kept."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by signal {signum}")
        self.signum = signum


# Calls judged at once, for each request allowed in flight: a call whose request sleeps in its backoff
# or its Retry-After holds a worker, and the others keep the requests flowing; still few enough
# tasks that stopping is quick.
CALLS_PER_REQUEST_SLOT = 8


async def judge_all(
    settings: Settings,
    requests: list[JudgeRequests],
    on_judged: Callable[[], None] | None = None,
    answered: dict[int, JudgeResult] | None = None,
) -> list[JudgeResult]:
    """Judge many calls with one client (offline use); results in the order of `requests`.
    `on_judged` is told each time a call's answer (or its failure) is in: judging thousands of calls
    takes minutes, and the caller shows how far it has got. `answered` (index in `requests` ->
    answer) is filled as answers come, so that a caller interrupted keeps what it has paid for.

    Ctrl-C or SIGTERM stops it (JudgingInterrupted), and from then on both are ignored: a second
    Ctrl-C in the middle of the cancelling left the event loop waiting for ever, or threw the answers
    away. The caller puts its own handlers back once it has kept the answers. A signal the process
    was started ignoring stays ignored. The calls are judged by a bounded number of workers, not a
    task each, so that stopping is quick."""
    client = JudgeClient(settings)
    answered = {} if answered is None else answered
    waiting = iter(enumerate(requests))

    async def worker() -> None:
        for index, request in waiting:
            answered[index] = await client.judge(request)
            if on_judged is not None:
                on_judged()

    stopped: list[int] = []
    main = asyncio.current_task()

    def stop(signum: int) -> None:
        if not stopped and main is not None:
            stopped.append(signum)
            main.cancel()

    restore = _on_signals(stop)
    try:
        workers = min(len(requests), max(1, settings.judge_concurrency) * CALLS_PER_REQUEST_SLOT)
        await asyncio.gather(*(worker() for _ in range(max(1, workers))))
        return [answered[index] for index in range(len(requests))]
    except asyncio.CancelledError:
        if stopped:
            raise JudgingInterrupted(stopped[0]) from None
        raise
    finally:
        restore(ignoring=bool(stopped))
        await client.aclose()


def _on_signals(handler: Callable[[int], None]) -> Callable[..., None]:
    """Route SIGINT, SIGTERM and SIGHUP to `handler` in the running loop (not one the process ignores);
    returns what puts the handlers found back, or with `ignoring` ignores both (nothing happens off
    the main thread, where signals cannot be caught)."""
    loop = asyncio.get_running_loop()
    installed: list[tuple[int, Any]] = []
    for signum in STOP_SIGNALS:
        previous = signal.getsignal(signum)
        if previous is signal.SIG_IGN:
            continue  # (started ignoring it, as a background job of a script: it stays so)
        try:
            loop.add_signal_handler(signum, handler, signum)
        except (NotImplementedError, RuntimeError, ValueError):
            continue
        installed.append((signum, previous))

    def restore(ignoring: bool = False) -> None:
        for signum, previous in installed:
            loop.remove_signal_handler(signum)
            signal.signal(signum, signal.SIG_IGN if ignoring else previous if previous is not None else signal.SIG_DFL)

    return restore
