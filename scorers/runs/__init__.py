"""Run-level summaries: the calls sharing a `run_id`, aggregated as the harness's all_summary.txt.

`signals` reads what one scenario contributes, `aggregate` keeps the run's running tallies, `report` is
the typed summary and its JSON form, `harness_fold` and `harness_text` write all_summary.txt as the
harness does, `run_files` its all_metrics.json and all_latencies.csv, `export` lays a run out as the
harness's files, `text` holds callqa's earlier compact form of the summary and its parser.
"""

from models.events import DEFAULT_MIN_AGENT_TURNS
from scorers.runs.aggregate import RunSummary
from scorers.runs.export import export_run, load_run, summary_text
from scorers.runs.harness_fold import ScenarioFiles
from scorers.runs.harness_text import render_harness_summary
from scorers.runs.report import AllSummary, DomainSummary, Mean, Rate, SideTokens, StallWarning, TokenUsageSummary
from scorers.runs.text import LABELS, parse_all_summary, render_all_summary

__all__ = [
    "DEFAULT_MIN_AGENT_TURNS",
    "LABELS",
    "AllSummary",
    "DomainSummary",
    "Mean",
    "Rate",
    "RunSummary",
    "ScenarioFiles",
    "SideTokens",
    "StallWarning",
    "TokenUsageSummary",
    "export_run",
    "load_run",
    "parse_all_summary",
    "render_all_summary",
    "render_harness_summary",
    "summary_text",
]
