"""The judge's answers: checked, clamped, normalised, and recorded as one `judge.result` event.

An answer's JSON is found as the harness finds it (the whole answer, a fenced block, a flat object
with a score: scorers/judge/answer_json.py; NaN and Infinity are not numbers). A QA answer is then
checked against its JSON Schema (scorers/judge/schemas.py); an evaluation answer is taken as the
harness takes it (any object with a score that `float()` reads). Anything else is a
`JudgeAnswerError`, which counts like any failed request. Then:
- QA judge: ratings are clamped to 0–100 (null stays null: the metric does not apply), issues are
  kept as `{type, severity, text}` (the model's free text is cut short), and the criteria verdicts become
  `{name: {passed, reason}}`, exactly one per criterion asked, normalised as the nl_assertion verdicts are.
- evaluation judge: the score ("0.8" is 0.8) is clamped to 0–1 and the answer becomes the
  judge_result.json document (`judge_input` verbatim; `nl_assertion_verdicts` exactly one per
  assertion, read as the harness reads them; counts and rate), by the same code that builds the
  evaluation document, so both always agree.

The event (`event_id` "<call_id>:judge", `ts_ms` = the call's end + 1, nothing from the wall clock):
- `qa`: the QA answer; when that request failed, `{"error": "…"}` instead (the metrics keep their
  heuristic results). `criteria`: the verdicts, or null when no criterion was asked or the request
  failed (the criteria then stay unjudged rather than failed for an outage).
- `evaluation`: the judge_result.json document; `error`: the evaluation judge's error (it then shows
  as score 0.0, reason "Error: …"). `error` is only ever the evaluation judge's: a call whose scenario
  does not ask for that judge must not gain a judge_score from a failed QA request.
- `input`: the verbatim prompts: the QA request's under `qa`, the evaluation request's at the top
  level (`system_prompt`, `user_content`) when it failed, where the evaluation document reads them
  (an answer's document holds them as `judge_input`).
An event that would encode larger than `MAX_JUDGE_EVENT_BYTES` records both requests as failed with
the reason instead (and without the prompts, should they alone be too large).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from models.events import JudgeResult, JudgeResultData
from models.wire import encode_event
from scorers.evaluation.judge_fields import JudgeAnswerAcc, answer_score, judge_result_document, normalise_nl_verdicts
from scorers.judge.answer_json import extract_json
from scorers.judge.context import cut
from scorers.judge.requests import JudgeRequest, JudgeRequests
from scorers.judge.schemas import QA_ERROR_KEY, RATED_METRICS, qa_answer_check
from scorers.numbers import finite_number

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

MAX_ERROR_CHARS = 300
# The model's free text is cut to these, so that its answer cannot bloat the event.
MAX_REASON_CHARS = 1_000
MAX_ISSUE_TEXT_CHARS = 500


class JudgeAnswerError(ValueError):
    """The judge answered, but not with a usable answer."""


def _not_a_number(constant: str) -> Any:
    raise JudgeAnswerError(f"answer is not JSON: {constant} is not a number")


def decode_answer(content: str | None) -> Any:
    if content is None or not content.strip():
        raise JudgeAnswerError("empty answer")
    try:
        answer = extract_json(content, lambda text: json.loads(text, parse_constant=_not_a_number))
        return without_lone_surrogates(answer)
    except JudgeAnswerError:
        raise
    except (ValueError, RecursionError) as exc:  # (nested deeper than the parser or the walk goes)
        raise JudgeAnswerError(f"answer is not JSON: {exc} (it begins {content.strip()[:80]!r})") from None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(value: Any) -> Any:
    """`value` with every lone UTF-16 surrogate in its strings (keys included) replaced by U+FFFD.

    JSON can escape half of a surrogate pair (a model that cut an emoji in two), which decodes to a
    string that no UTF-8 encoder accepts: the answer could then be neither recorded nor published.
    Pairs were already joined by the decoder, so any surrogate left is a lone one."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [without_lone_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {without_lone_surrogates(key): without_lone_surrogates(item) for key, item in value.items()}
    return value


def check_answer(validator: Draft202012Validator, answer: Any) -> None:
    from jsonschema.exceptions import best_match  # (imported with the validator, on first use)

    error = best_match(validator.iter_errors(answer))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "the top level"
        raise JudgeAnswerError(cut(f"answer does not match the schema at {where}: {error.message}", MAX_ERROR_CHARS))


def clamp_rating(value: float) -> float:
    """A QA rating held to 0-100: one a little past either end (130.5, -5) still says which end."""
    return max(0.0, min(100.0, finite_score(value)))


def finite_score(value: float) -> float:
    number = finite_number(value)  # JSON allows integers beyond float, Python's parser NaN and Infinity
    if number is None:
        raise JudgeAnswerError(f"the answer's score is not a finite number: {cut(repr(value), 40)}")
    return number


def short_text(value: str, limit: int = MAX_REASON_CHARS) -> str:
    return cut(value, limit)


def verdicts_with_short_reasons(verdicts: list[Any]) -> list[Any]:
    """The judge's verdicts as given, their reasons as text cut short (the shape is normalised later;
    a reason of another type would be written out whole, however long)."""
    return [
        {**v, "reason": short_text(v["reason"] if isinstance(v["reason"], str) else str(v["reason"]))}
        if isinstance(v, dict) and v.get("reason") is not None
        else v
        for v in verdicts
    ]


# --------------------------------------------------------------------------------- QA answer


@dataclass(frozen=True, slots=True)
class QaAnswer:
    qa: dict[str, Any]
    criteria: dict[str, dict[str, Any]] | None


def parse_qa_answer(content: str | None, request: JudgeRequest) -> QaAnswer:
    answer = decode_answer(content)
    check_answer(qa_answer_check(), answer)
    qa: dict[str, Any] = {
        "hallucination": {
            "issues": [
                {"type": i["type"], "severity": i["severity"], "text": short_text(i["text"], MAX_ISSUE_TEXT_CHARS)}
                for i in answer["hallucination"]["issues"]
            ]
        }
    }
    for name in RATED_METRICS:
        score = answer[name]["score"]
        qa[name] = {
            "score": None if score is None else clamp_rating(score),
            "reason": short_text(answer[name]["reason"]),
        }
    criteria = None
    if request.criteria:
        verdicts = normalise_nl_verdicts(verdicts_with_short_reasons(answer["criteria"]), list(request.criteria))
        criteria = {v["assertion"]: {"passed": v["passed"], "reason": v["reason"]} for v in verdicts}
    return QaAnswer(qa, criteria)


# ------------------------------------------------------------------------- evaluation answer


def parse_evaluation_answer(content: str | None, request: JudgeRequest) -> dict[str, Any]:
    """The judge_result.json document of a valid answer."""
    answer = decode_answer(content)
    # As the harness takes it: any object with a score that float() reads; no reason is "", no verdict
    # list fails every assertion (judge_fields normalises the rest).
    if not isinstance(answer, dict) or "score" not in answer:
        raise JudgeAnswerError("answer has no score")
    score = answer_score(answer["score"])
    if isinstance(score, str):
        raise JudgeAnswerError(cut(score, MAX_ERROR_CHARS))
    reason = answer.get("reason", "")
    raw = {
        "score": score,
        "reason": short_text(reason if isinstance(reason, str) else str(reason)),
        "judge_input": request.input(),
    }
    if request.nl_assertions and isinstance(answer.get("nl_assertion_verdicts"), list):
        raw["nl_assertion_verdicts"] = verdicts_with_short_reasons(answer["nl_assertion_verdicts"])
    document = judge_result_document(JudgeAnswerAcc(evaluation=raw), list(request.nl_assertions) or None)
    assert document is not None
    return document


# ------------------------------------------------------------------------------------ event


def judge_event_id(call_id: str) -> str:
    return f"{call_id}:judge"


# The recorded event must travel as one Kafka message and be read back by the worker: kept well under
# the wire's default 1 MiB (CALLQA_MAX_MESSAGE_BYTES) whatever the model wrote. The prompts are bounded
# in characters, which UTF-8 can make up to four times as many bytes.
MAX_JUDGE_EVENT_BYTES = 768 * 1024


def judge_result_event(
    requests: JudgeRequests,
    model: str | None,
    *,
    qa: QaAnswer | None = None,
    qa_error: str | None = None,
    evaluation: dict[str, Any] | None = None,
    evaluation_error: str | None = None,
    max_bytes: int = MAX_JUDGE_EVENT_BYTES,
) -> JudgeResult:
    """The recorded outcome of a call's judge requests (see the module's layout). Answers that would
    make it larger than `max_bytes` encoded are recorded as an error instead (the heuristics stay)."""
    event = _judge_result_event(requests, model, qa, qa_error, evaluation, evaluation_error)
    size = len(encode_event(event))
    if size <= max_bytes:
        return event
    too_large = f"the judge's answers are too large to record ({size} bytes encoded, at most {max_bytes})"
    event = _judge_result_event(requests, model, None, too_large, None, too_large)
    if len(encode_event(event)) > max_bytes:  # the prompts alone: recorded without them
        event.data.input = {}
    return event


def _judge_result_event(
    requests: JudgeRequests,
    model: str | None,
    qa: QaAnswer | None,
    qa_error: str | None,
    evaluation: dict[str, Any] | None,
    evaluation_error: str | None,
) -> JudgeResult:
    recorded_input: dict[str, Any] = {"qa": requests.qa.input()}
    if requests.evaluation is not None and evaluation is None:
        # Read by the evaluation document on an error; an answer's document holds it as judge_input.
        recorded_input.update(requests.evaluation.input())
    data = JudgeResultData(
        model=model,
        qa=qa.qa if qa is not None else {QA_ERROR_KEY: qa_error or "no answer"},
        criteria=qa.criteria if qa is not None else None,
        evaluation=evaluation,
        error=(evaluation_error or "no answer") if requests.evaluation is not None and evaluation is None else None,
        input=recorded_input,
    )
    return JudgeResult(
        event_id=judge_event_id(requests.call_id), call_id=requests.call_id, ts_ms=requests.ts_ms, data=data
    )
