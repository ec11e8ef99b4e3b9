"""Run-level summaries: the calls sharing a `run_id`, aggregated as the harness's all_summary.txt.

`signals` reads what one scenario contributes, `aggregate` keeps the run's running tallies, `report` is
the typed summary and its JSON form, `text` renders and parses all_summary.txt, `export` lays a run out
as the harness's files.
"""

from scorers.runs.aggregate import DEFAULT_MIN_AGENT_TURNS, RunSummary
from scorers.runs.export import export_run, load_run
from scorers.runs.report import AllSummary, DomainSummary, Mean, Rate, SideTokens, StallWarning, TokenUsageSummary
from scorers.runs.text import LABELS, parse_all_summary, render_all_summary

__all__ = [
    "DEFAULT_MIN_AGENT_TURNS", "LABELS", "AllSummary", "DomainSummary", "Mean", "Rate", "RunSummary", "SideTokens",
    "StallWarning", "TokenUsageSummary", "export_run", "load_run", "parse_all_summary", "render_all_summary",
]
