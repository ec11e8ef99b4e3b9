"""The evaluation judge's answer: `judge_score`, `judge_passed`, `nl_assertion_pass_rate` and the
judge_result.json document.

The answer arrives as a `judge.result` event whose `evaluation` holds the judge_result.json shape:
`score`, `reason`, `judge_input {system_prompt, user_content}` and, when the scenario carries
`nl_assertions`, `nl_assertion_verdicts [{index, assertion, passed, reason}]`,
`nl_assertion_pass_count`, `nl_assertion_total`, `nl_assertion_pass_rate`. A failed request is a
`judge.result` with `error` and no `evaluation`: score 0.0, reason "Error: …", every assertion failed.

The document is normalised here again, so that whatever the judge returned it keeps the contract:
a score is read as the harness reads it (`float()`, held to 0-1), one that is not a number is a parse
error (0.0, "Error: …"); the verdicts are exactly one per scenario assertion, in order, with the
scenario's assertion text; a missing or out-of-range verdict is `passed: false` with a reason, a
non-boolean one `passed: false`; the counts and the rate are recomputed from them.

The latest evaluation answer wins; an error counts only while no evaluation answer has arrived, so a
failed retry never erases an answer already recorded.

Metrics fields, only when an answer or an error was recorded: `judge_score`; `judge_passed`
(`score >= scenario.judge_threshold`) only when the scenario sets a threshold; `nl_assertion_pass_rate`
only when the scenario carries nl_assertions. The document itself goes under the key `judge_result`
(the export writes it as judge_result.json).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from models.call_state import CallState
from models.events import JudgeResult, ScenarioSpec
from scorers.base import Scorer

ERROR_PREFIX = "Error: "
MISSING_VERDICT_REASON = "Missing verdict; treated as failed."


@dataclass(slots=True)
class JudgeAnswerAcc:
    evaluation: dict[str, Any] | None = None
    error: str | None = None
    error_input: dict[str, Any] | None = None


class EvaluationJudge(Scorer):
    name = "evaluation_judge"
    handles = frozenset({"judge.result"})

    def start(self) -> JudgeAnswerAcc:
        return JudgeAnswerAcc()

    def update(self, acc: JudgeAnswerAcc, event: JudgeResult, call: CallState) -> None:
        data = event.data
        if data.evaluation is not None:
            acc.evaluation = data.evaluation
        elif data.error is not None:
            acc.error = data.error
            acc.error_input = data.input


def _judge_input(value: Any) -> dict[str, Any]:
    value = value if isinstance(value, dict) else {}
    return {"system_prompt": value.get("system_prompt", ""), "user_content": value.get("user_content", "")}


def _verdict_index(entry: Any) -> int | None:
    """The 1-based number of the assertion a verdict names, read as the harness reads it: `int(index)`,
    so 2, 2.0, 2.9, "2" and true (1) each name one; anything int() refuses names none."""
    index = entry.get("index") if isinstance(entry, dict) else None
    try:
        return int(index)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None


def normalise_nl_verdicts(raw: Any, assertions: list[str], failure_reason: str | None = None) -> list[dict[str, Any]]:
    """Exactly one verdict per assertion (1-based `index`), from the judge's list; with
    `failure_reason`, every assertion fails with it (the judge did not answer).

    As the harness: of two verdicts naming one assertion the later counts, and an assertion passes only
    on `passed: true` (any other value fails it, with the judge's own reason)."""
    by_index: dict[int, dict[str, Any]] = {}
    for entry in raw if isinstance(raw, list) and failure_reason is None else ():
        index = _verdict_index(entry)
        if index is not None and 1 <= index <= len(assertions):
            by_index[index] = entry
    verdicts = []
    for index, assertion in enumerate(assertions, start=1):
        entry = by_index.get(index)
        if failure_reason is not None:
            passed, reason = False, failure_reason
        elif not entry:  # (an empty verdict is no verdict)
            passed, reason = False, MISSING_VERDICT_REASON
        else:
            passed, reason = entry.get("passed") is True, entry.get("reason", "")
            reason = reason if isinstance(reason, str) else str(reason)
        verdicts.append({"index": index, "assertion": assertion, "passed": passed, "reason": reason})
    return verdicts


# The evaluation judge's score range: the harness's metrics dictionary gives judge_score as 0 to 1.
EVALUATION_SCORE_RANGE = (0.0, 1.0)


def answer_score(value: Any) -> float | str:
    """The judge's score as the harness reads it (`float(score)`: a number, a numeric string such as
    "0.8", or a boolean), held to 0-1 (1.5 is 1.0); or why it is unusable. A score that is not finite
    (NaN, "inf") is unusable here, since callqa's documents are JSON."""
    if isinstance(value, (bool, int, float, str)):
        try:
            score = float(value)
        except (ValueError, OverflowError):
            return f"judge score is not a number: {value!r}"
        if math.isfinite(score):
            low, high = EVALUATION_SCORE_RANGE
            return max(low, min(high, score))
    return f"judge score is not a number: {value!r}"


def judge_result_document(acc: JudgeAnswerAcc, nl_assertions: list[str] | None) -> dict[str, Any] | None:
    """The judge_result.json document, or None when the judge neither answered nor failed."""
    if acc.evaluation is not None:
        answer = acc.evaluation
        score = answer_score(answer.get("score"))
        if isinstance(score, str):
            problem = score
            document = {
                "score": 0.0,
                "reason": f"{ERROR_PREFIX}{problem}",
                "judge_input": _judge_input(answer.get("judge_input")),
            }
            failure = f"Judge error: {problem}"
        else:
            reason = answer.get("reason", "")
            document = {
                "score": score,
                "reason": reason if isinstance(reason, str) else str(reason),
                "judge_input": _judge_input(answer.get("judge_input")),
            }
            failure = None
        raw_verdicts = answer.get("nl_assertion_verdicts")
    elif acc.error is not None:
        document = {"score": 0.0, "reason": f"{ERROR_PREFIX}{acc.error}", "judge_input": _judge_input(acc.error_input)}
        failure, raw_verdicts = f"Judge error: {acc.error}", None
    else:
        return None
    if nl_assertions:
        verdicts = normalise_nl_verdicts(raw_verdicts, nl_assertions, failure)
        passed = sum(1 for v in verdicts if v["passed"])
        document["nl_assertion_verdicts"] = verdicts
        document["nl_assertion_pass_count"] = passed
        document["nl_assertion_total"] = len(verdicts)
        document["nl_assertion_pass_rate"] = passed / len(verdicts)
    return document


def judge_fields(acc: JudgeAnswerAcc, scenario: ScenarioSpec | None) -> dict[str, Any]:
    document = judge_result_document(acc, scenario.nl_assertions if scenario is not None else None)
    if document is None:
        return {}
    fields: dict[str, Any] = {"judge_score": document["score"]}
    if scenario is not None and scenario.judge_threshold is not None:
        fields["judge_passed"] = document["score"] >= scenario.judge_threshold
    if "nl_assertion_pass_rate" in document:
        fields["nl_assertion_pass_rate"] = document["nl_assertion_pass_rate"]
    fields["judge_result"] = document
    return fields
