"""What re-scoring changed: two sets of result documents of the same calls (those the workers
published, and a replay's after a fix), compared verdict by verdict.

A call is compared by its newest result in each set (the highest version; a rescore supersedes the
end's result). Its verdicts are each QA metric's score and pass, each cohort's weighted score and pass,
and the evaluation's `is_successful`. Pure: documents in, a report out (`callqa compare` reads the
files and prints it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

IS_SUCCESSFUL = "is_successful"
COHORT_PREFIX = "cohort "


@dataclass(frozen=True)
class Verdict:
    """One verdict on a call: a score (None where it has none or did not apply) and a pass (None: no verdict)."""

    score: float | None
    passed: bool | None


@dataclass(frozen=True)
class VerdictChange:
    name: str  # a metric, `cohort <id>` or `is_successful`
    before: Verdict | None  # None: the call's result had no such verdict
    after: Verdict | None


@dataclass(frozen=True)
class CallChanges:
    call_id: str
    changes: tuple[VerdictChange, ...]


@dataclass
class VerdictTally:
    """How one verdict moved over the calls in both sets."""

    name: str
    compared: int = 0  # calls whose both results hold this verdict
    changed: int = 0  # of those, calls whose score or pass differs
    passed_to_failed: int = 0
    failed_to_passed: int = 0
    became_unjudged: int = 0  # a pass or fail before, none after (the metric no longer applies)
    became_judged: int = 0
    # Calls whose result holds this verdict on one side only (a cohort that now matches the call, or no
    # longer does; a metric added): not compared, but counted, so that every changed call shows somewhere.
    added: int = 0
    gone: int = 0
    score_change_sum: float = 0.0
    scored_both: int = 0  # calls with a score before and after: the mean change is over these

    @property
    def mean_score_change(self) -> float | None:
        return self.score_change_sum / self.scored_both if self.scored_both else None

    def count(self, before: Verdict, after: Verdict) -> None:
        self.compared += 1
        if before != after:
            self.changed += 1
        if before.score is not None and after.score is not None:
            self.scored_both += 1
            self.score_change_sum += after.score - before.score
        if before.passed is True and after.passed is False:
            self.passed_to_failed += 1
        elif before.passed is False and after.passed is True:
            self.failed_to_passed += 1
        elif before.passed is not None and after.passed is None:
            self.became_unjudged += 1
        elif before.passed is None and after.passed is not None:
            self.became_judged += 1


@dataclass
class ResultChanges:
    calls_before: int
    calls_after: int
    only_before: list[str] = field(default_factory=list)
    only_after: list[str] = field(default_factory=list)
    tallies: list[VerdictTally] = field(default_factory=list)
    changed_calls: list[CallChanges] = field(default_factory=list)

    @property
    def regressions(self) -> int:
        """Verdicts that passed before and fail now, over every call and verdict."""
        return sum(tally.passed_to_failed for tally in self.tallies)

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls_before": self.calls_before,
            "calls_after": self.calls_after,
            "calls_compared": self.calls_before - len(self.only_before),
            "calls_changed": len(self.changed_calls),
            "only_before": self.only_before,
            "only_after": self.only_after,
            "verdicts": [
                {
                    "name": t.name,
                    "compared": t.compared,
                    "changed": t.changed,
                    "mean_score_change": _rounded(t.mean_score_change),
                    "passed_to_failed": t.passed_to_failed,
                    "failed_to_passed": t.failed_to_passed,
                    "became_judged": t.became_judged,
                    "became_unjudged": t.became_unjudged,
                    "added": t.added,
                    "gone": t.gone,
                }
                for t in self.tallies
            ],
            "changed_calls": [
                {
                    "call_id": call.call_id,
                    "changes": [
                        {"name": c.name, "before": _verdict_dict(c.before), "after": _verdict_dict(c.after)}
                        for c in call.changes
                    ],
                }
                for call in self.changed_calls
            ],
        }


def newest_verdicts(results: Iterable[dict[str, Any]]) -> dict[str, tuple[int, dict[str, Verdict]]]:
    """Each call's newest result (the highest version, the later one of two copies of a version) as
    its version and verdicts. Only the verdicts are kept, not the document with its transcript: held
    whole, a results file took about ten times its size in memory."""
    newest: dict[str, tuple[int, dict[str, Verdict]]] = {}
    for result in results:
        held = newest.get(result["call_id"])
        if held is None or result["version"] >= held[0]:
            newest[result["call_id"]] = (result["version"], verdicts(result))
    return newest


def verdicts(result: dict[str, Any]) -> dict[str, Verdict]:
    """A result's verdicts by name, in the order the result lists them."""
    found = {
        metric["metric"]: Verdict(metric.get("score"), metric.get("passed")) for metric in result.get("metrics", [])
    }
    for cohort in result.get("cohorts", []):
        found[COHORT_PREFIX + cohort["cohort_id"]] = Verdict(cohort.get("weighted_score"), cohort.get("passed"))
    successful = (result.get("evaluation") or {}).get(IS_SUCCESSFUL)
    if isinstance(successful, bool):  # (a production call's evaluation has no scenario to succeed at)
        found[IS_SUCCESSFUL] = Verdict(None, successful)
    return found


def compare_results(before: Iterable[dict[str, Any]], after: Iterable[dict[str, Any]]) -> ResultChanges:
    """What changed from `before` to `after`, call by call and verdict by verdict."""
    old, new = newest_verdicts(before), newest_verdicts(after)
    report = ResultChanges(
        calls_before=len(old),
        calls_after=len(new),
        only_before=sorted(old.keys() - new.keys()),
        only_after=sorted(new.keys() - old.keys()),
    )
    tallies: dict[str, VerdictTally] = {}
    for call_id in sorted(old.keys() & new.keys()):
        (_, was), (_, now) = old[call_id], new[call_id]
        changes = []
        for name in [*was, *(name for name in now if name not in was)]:
            verdict_before, verdict_after = was.get(name), now.get(name)
            tally = tallies.setdefault(name, VerdictTally(name))
            if verdict_before is None:
                tally.added += 1
            elif verdict_after is None:
                tally.gone += 1
            else:
                tally.count(verdict_before, verdict_after)
            if verdict_before != verdict_after:
                changes.append(VerdictChange(name, verdict_before, verdict_after))
        if changes:
            report.changed_calls.append(CallChanges(call_id, tuple(changes)))
    report.tallies = sorted(tallies.values(), key=_verdict_order)
    return report


def _verdict_order(tally: VerdictTally) -> tuple[int, str]:
    """Metrics first, in the order the results list them (a stable sort keeps it), then cohorts by id,
    then the scenario's success."""
    if tally.name == IS_SUCCESSFUL:
        return 2, ""
    if tally.name.startswith(COHORT_PREFIX):
        return 1, tally.name
    return 0, ""


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _verdict_dict(verdict: Verdict | None) -> dict[str, Any] | None:
    return None if verdict is None else {"score": verdict.score, "passed": verdict.passed}
