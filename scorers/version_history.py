"""A call's versions, each with what changed from the one before and why.

What changed is the verdict comparison of `callqa compare` (scorers/result_changes.py) between two
consecutive versions. Why is read from the documents, which do not name the event that re-scored
them: version 1 is the call's end; a later one is a correction when the transcript or WER's corrected
turns moved, an annotation when the sentiment did, a judge's answer when a verdict's judge did, a DB
state when the evaluation's DB hash did, else a re-score not told apart (`rescore`). Pure.
"""

from __future__ import annotations

from typing import Any

from scorers.result_changes import verdicts

END, CORRECTION, ANNOTATION, JUDGE, DB_STATE, RESCORE = (
    "end",
    "correction",
    "annotation",
    "judge",
    "db_state",
    "rescore",
)


def version_history(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`documents` oldest first -> [{version, cause, changes, result}, ...] oldest first."""
    history = []
    before: dict[str, Any] | None = None
    for document in documents:
        history.append(
            {
                "version": document.get("version"),
                "cause": cause(before, document),
                "changes": changes(before, document),
                "result": document,
            }
        )
        before = document
    return history


def changes(before: dict[str, Any] | None, after: dict[str, Any]) -> list[dict[str, Any]]:
    if before is None:
        return []
    was, now = verdicts(before), verdicts(after)
    return [
        {"name": name, "before": _verdict(was.get(name)), "after": _verdict(now.get(name))}
        for name in [*was, *(name for name in now if name not in was)]
        if was.get(name) != now.get(name)
    ]


def cause(before: dict[str, Any] | None, after: dict[str, Any]) -> str:
    if before is None:
        return END
    old, new = _by_metric(before), _by_metric(after)
    old_eval, new_eval = before.get("evaluation") or {}, after.get("evaluation") or {}
    if old_eval.get("turns") != new_eval.get("turns") or _detail(old, "wer", "corrected_turns") != _detail(
        new, "wer", "corrected_turns"
    ):
        return CORRECTION
    if old.get("sentiment") != new.get("sentiment"):
        return ANNOTATION
    if any(_detail(old, name, "judge") != _detail(new, name, "judge") for name in new) or old_eval.get(
        "judge_score"
    ) != new_eval.get("judge_score"):
        return JUDGE
    if old_eval.get("db_state_actual_hash") != new_eval.get("db_state_actual_hash"):
        return DB_STATE
    return RESCORE


def _by_metric(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {metric["metric"]: metric for metric in document.get("metrics", [])}


def _detail(metrics: dict[str, dict[str, Any]], name: str, key: str) -> Any:
    return (metrics.get(name, {}).get("details") or {}).get(key)


def _verdict(verdict: Any) -> dict[str, Any] | None:
    return None if verdict is None else {"score": verdict.score, "passed": verdict.passed}
