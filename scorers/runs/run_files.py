"""The two run-wide files the harness writes beside all_summary.txt: all_metrics.json (every scenario's
metrics, in directory order) and all_latencies.csv (one row per latency measurement).

In all_metrics.json each scenario's `scenario_directory` is `<run directory>/<scenario directory>`, as
the harness refreshes it when it loads a scenario from disk; the per-scenario metrics.json files keep
theirs. The CSV quotes text by doubling `"` and writes latencies with one decimal, as the harness does
(it does not escape newlines: a transcript holding one spans lines, as in the harness's file).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scorers.numbers import finite_number

ALL_METRICS_FILE = "all_metrics.json"
ALL_LATENCIES_FILE = "all_latencies.csv"
CSV_HEADER = "Scenario,User_Transcript,Agent_Transcript,Latency_ms\n"


def latency_entries(metrics: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    entries = metrics.get("latencies")
    return [entry for entry in entries if isinstance(entry, dict)] if isinstance(entries, list) else []


def pooled_latencies_ms(scenarios: Iterable[Mapping[str, Any]]) -> list[float]:
    """Every latency measurement of the run, scenario by scenario (unsorted)."""
    values = (finite_number(entry.get("latency_ms")) for metrics in scenarios for entry in latency_entries(metrics))
    return [value for value in values if value is not None]


def with_run_directory(metrics: Mapping[str, Any], run_directory: str, scenario_directory: str) -> dict[str, Any]:
    """The document as the harness holds it after loading it from `<run_directory>/<scenario_directory>`."""
    return {**metrics, "scenario_directory": posixpath.join(run_directory, scenario_directory)}


def all_metrics_json(documents: Sequence[Mapping[str, Any]]) -> bytes:
    return json.dumps(list(documents), indent=2).encode("utf-8")


def _quoted(text: Any) -> str:
    return '"' + str(text).replace('"', '""') + '"'


def all_latencies_csv(documents: Sequence[Mapping[str, Any]]) -> bytes:
    rows = [CSV_HEADER]
    for metrics in documents:
        name = metrics.get("scenario_name")
        for entry in latency_entries(metrics):
            latency = finite_number(entry.get("latency_ms"))
            if latency is None:
                continue
            rows.append(
                f"{_quoted(name)},{_quoted(entry.get('user_transcript', ''))},"
                f"{_quoted(entry.get('agent_transcript', ''))},{latency:.1f}\n"
            )
    return "".join(rows).encode("utf-8")
