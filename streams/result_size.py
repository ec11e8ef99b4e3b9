"""A result as it is published (the worker) or written (replay): whole when it fits in a message, else
with its cohort verdicts' details cut to what the cohort overview reads, else not at all.

A call belongs to every cohort whose agent patterns match it, and each verdict lists its metrics and
criteria: a deployment with many large cohorts makes every result too large for a message, and
dead-lettering each would stop every run summary, overview and alert at once. The verdicts
themselves (weighted score, passed, the metrics counted) and each metric's score and verdict in the
cohort stay; names, thresholds, weights, reasons and criteria verdicts go, and `details.cut` says why.
Live and replay both call `fitted`, so both write the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from models.results import CallResult, CohortVerdict

_json = msgspec.json.Encoder()

CUT_KEY = "cut"


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
    return Fitted(cut, cut_value if len(cut_value) <= limit else None, value)


def _cut(verdict: CohortVerdict, size: int, limit: int) -> CohortVerdict:
    metrics = {name: {"score": detail.get("score"), "passed": detail.get("passed")}
               for name, detail in verdict.details.get("metrics", {}).items()}
    note = (f"this verdict's details but each metric's score and verdict were left out: the whole result was "
            f"{size} bytes, above the {limit}-byte limit for a message")
    return msgspec.structs.replace(verdict, details={"metrics": metrics, CUT_KEY: note})
