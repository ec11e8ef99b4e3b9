"""What a worker knows of all published results, for the HTTP API and the CLI: run summaries and
cohort overviews, kept up to date one result at a time (a newer version replaces the older)."""

from __future__ import annotations

from dataclasses import dataclass, field

from models.results import CallResult
from scorers.cohort_overview import CohortOverview
from scorers.runs import RunSummary


@dataclass
class ResultsView:
    runs: dict[str, RunSummary] = field(default_factory=dict)
    cohorts: CohortOverview = field(default_factory=CohortOverview)
    results_seen: int = 0

    def add(self, result: CallResult) -> None:
        self.results_seen += 1
        self.cohorts.add(result)
        run_id = result.run_id
        if run_id:
            summary = self.runs.get(run_id)
            if summary is None:
                summary = self.runs[run_id] = RunSummary(run_id=run_id)
            summary.add(result)

