"""A result as it is published (the worker) or written (replay): whole when it fits in a message, else
with its cohort verdicts' details cut to what the cohort overview reads, else with its transcript's
texts cut too, else not at all.

A call belongs to every cohort whose agent patterns match it, and each verdict lists its metrics and
criteria: a deployment with many large cohorts makes every result too large for a message, and
dead-lettering each would stop every run summary, overview and alert at once. The verdicts
themselves (weighted score, passed, the metrics counted) and each metric's score and verdict in the
cohort stay; names, thresholds, weights, reasons and criteria verdicts go, and `details.cut` says why.
A long call's transcript, which the evaluation document carries whole (`evaluation.turns`, as the
harness's metrics.json does), can be larger than a message on its own: 8 turns of 50,000 Chinese
characters are 1.2 MB. Then every turn's text is cut to one length at which the result fits, found by
halving (the same for all, the end marked "…"; near the longest such length, not always it, as the
mark's bytes make the size uneven in the length), and `evaluation.turns_cut` says why: losing the
call's every metric, run summary line and alert to its transcript would be worse than a shortened
transcript.
Live and replay both call `fitted`, so both write the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from models.results import CallResult, CohortVerdict

_json = msgspec.json.Encoder()

CUT_KEY = "cut"
TURNS_CUT_KEY = "turns_cut"
TURNS = "turns"
CUT_MARK = "\u2026"


@dataclass(frozen=True)
class Fitted:
    result: CallResult  # as published: the result itself, or its copy with the verdicts cut
    value: bytes | None  # its JSON, or None when even the cut copy is too large
    whole: bytes  # the whole result's JSON (what a dead letter keeps of a result not published)

    @property
    def full_size(self) -> int:
        return len(self.whole)


def fitted(result: CallResult, limit: int | None) -> Fitted:
    value = _json.encode(result)
    if limit is None or len(value) <= limit:
        return Fitted(result, value, value)
    cut = msgspec.structs.replace(result, cohorts=[_cut(verdict, len(value), limit) for verdict in result.cohorts])
    cut_value = _json.encode(cut) if result.cohorts else value
    if len(cut_value) > limit and result.evaluation.get(TURNS):
        cut, cut_value = _with_turns_cut(cut, len(value), limit)
    return Fitted(cut, cut_value if len(cut_value) <= limit else None, value)


def _with_turns_cut(result: CallResult, size: int, limit: int) -> tuple[CallResult, bytes]:
    """`result` with each turn's text cut to a length at which it fits (found by halving; a rare
    path), or cut to nothing when even that does not fit."""
    turns = result.evaluation[TURNS]
    note = (
        f"each turn's text was cut to its first {{}} characters (marked {CUT_MARK!r}): the whole result was "
        f"{size} bytes, above the {limit}-byte limit for a message"
    )

    def cut_to(length: int) -> tuple[CallResult, bytes]:
        shortened = [
            turn if len(turn["text"]) <= length else {**turn, "text": turn["text"][:length] + CUT_MARK}
            for turn in turns
        ]
        evaluation = {**result.evaluation, TURNS: shortened, TURNS_CUT_KEY: note.format(length)}
        cut = msgspec.structs.replace(result, evaluation=evaluation)
        return cut, _json.encode(cut)

    best = cut_to(0)
    shortest, longest = 0, max(len(turn["text"]) for turn in turns) - 1
    if len(best[1]) > limit:
        return best
    while shortest < longest:  # (cut to `shortest`, it fits; the longest length that fits is at most `longest`)
        middle = (shortest + longest + 1) // 2
        attempt = cut_to(middle)
        if len(attempt[1]) <= limit:
            shortest, best = middle, attempt
        else:
            longest = middle - 1
    return best


def _cut(verdict: CohortVerdict, size: int, limit: int) -> CohortVerdict:
    metrics = {
        name: {"score": detail.get("score"), "passed": detail.get("passed")}
        for name, detail in verdict.details.get("metrics", {}).items()
    }
    note = (
        f"this verdict's details but each metric's score and verdict were left out: the whole result was "
        f"{size} bytes, above the {limit}-byte limit for a message"
    )
    return msgspec.structs.replace(verdict, details={"metrics": metrics, CUT_KEY: note})
