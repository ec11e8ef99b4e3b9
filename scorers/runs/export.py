"""A run as the harness's files: `<scenario>/metrics.json`, `<scenario>/judge_result.json`, `all_summary.txt`,
`all_metrics.json`, `all_latencies.csv`.

Pure: `export_run` returns relative path → bytes and `load_run` reads such a mapping back into a
`RunSummary`; writing and reading a directory is `streams.files.exported_runs`. A call counts once, at its highest
version. Scenario directories are named after `scenario_name`; when several calls of the run share a
name, each of them gets `<name>.<call_id>` instead, so no call is favoured by arrival order. Characters
that would leave the directory (`/`, `\\`, control characters) become `_`, and any name still taken
(`.`, `..`, `all_summary.txt`, or a pathological clash) gets `-2`, `-3`, … in call_id order. A name
longer than a directory name may be (240 bytes here) keeps its head and a digest of the whole. Each
`metrics.json`'s `scenario_directory` names the directory it was exported to.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from models.results import CallResult
from scorers.runs.aggregate import RunSummary, result_fields
from scorers.runs.harness_fold import ScenarioFiles
from scorers.runs.harness_text import DEFAULT_RETRY_COMMAND, render_harness_summary
from scorers.runs.run_files import (
    ALL_LATENCIES_FILE,
    ALL_METRICS_FILE,
    all_latencies_csv,
    all_metrics_json,
    with_run_directory,
)
from scorers.runs.signals import DB_STATE_DIFF_KEY

SUMMARY_FILE = "all_summary.txt"
METRICS_FILE = "metrics.json"
JUDGE_FILE = "judge_result.json"
DB_DIFF_FILE = "db_state_diff.json"
_UNSAFE = re.compile(r"[/\\\x00-\x1f]")
_RESERVED = frozenset({"", ".", "..", SUMMARY_FILE, "all_metrics.json", "all_latencies.csv"})
# A published result, typed or as decoded JSON.
AnyResult = CallResult | Mapping[str, Any]


# File systems allow 255 bytes a name; leave room for the "-2" of a name taken twice.
MAX_DIRECTORY_BYTES = 240


def _safe(name: str) -> str:
    return _fit(_UNSAFE.sub("_", name))


def _fit(name: str) -> str:
    """`name`, or when too long for a directory, its head and a digest of the whole (still unique)."""
    encoded = name.encode("utf-8")
    if len(encoded) <= MAX_DIRECTORY_BYTES:
        return name
    digest = hashlib.sha256(encoded).hexdigest()[:12]
    head = encoded[: MAX_DIRECTORY_BYTES - len(digest) - 1].decode("utf-8", "ignore")
    return f"{head}.{digest}"


def scenario_directories(names: Mapping[str, str]) -> dict[str, str]:
    """call_id → directory name, given call_id → scenario_name (see the module's naming rule)."""
    shared = Counter(_safe(name) for name in names.values())
    taken = set(_RESERVED)
    directories: dict[str, str] = {}
    for call_id in sorted(names):
        base = _safe(names[call_id])
        candidate = base if shared[base] == 1 else _fit(f"{base}.{_safe(call_id)}")
        unique, suffix = candidate, 1
        while unique in taken:
            suffix += 1
            unique = f"{candidate}-{suffix}"
        taken.add(unique)
        directories[call_id] = unique
    return directories


def _json_file(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, indent=2).encode("utf-8")


def latest_results(results: Iterable[AnyResult]) -> tuple[str | None, dict[str, AnyResult]]:
    """The run's id and each call's highest version; the results must all be of one run."""
    latest: dict[str, tuple[int, AnyResult]] = {}
    run_ids: set[str | None] = set()
    for result in results:
        call_id, version, run_id, _ = result_fields(result)
        run_ids.add(run_id)
        if call_id not in latest or version >= latest[call_id][0]:
            latest[call_id] = (version, result)
    if len(run_ids) > 1:
        raise ValueError(f"an export holds one run, got {sorted(map(str, run_ids))}")
    return next(iter(run_ids), None), {call_id: result for call_id, (_, result) in latest.items()}


def ordered_scenarios(summary: RunSummary) -> list[tuple[str, ScenarioFiles]]:
    """(directory, documents) of each scenario counted in the run, in directory order: the order the
    harness lists them in, as it loads a run's scenario directories by name."""
    files = summary.scenario_files()
    calls = {key[1]: _scenario_name(documents.metrics, key[1]) for key, documents in files.items() if key[0] == "call"}
    directories = scenario_directories(calls)
    named = [(directories[key[1]] if key[0] == "call" else key[1], documents) for key, documents in files.items()]
    return sorted(named, key=lambda item: item[0])


def summary_text(summary: RunSummary, *, retry_command: str = DEFAULT_RETRY_COMMAND) -> str:
    """The run's all_summary.txt, as the harness writes it, at the summary's floor of agent turns."""
    scenarios = [documents for _, documents in ordered_scenarios(summary)]
    return render_harness_summary(scenarios, min_agent_turns=summary.min_agent_turns, retry_command=retry_command)


def export_run(
    results: Iterable[AnyResult],
    *,
    min_agent_turns: int | None = None,
    run_directory: str = "",
    retry_command: str = DEFAULT_RETRY_COMMAND,
) -> dict[str, bytes]:
    """Relative path → content of the run's files: each scenario's metrics.json (the evaluation without
    the judge, indent=2, keys in document order), its judge_result.json when a judge ran, and the run's
    all_summary.txt, all_metrics.json and all_latencies.csv.

    `run_directory` is the directory as the harness would have been given it (`callqa export`'s DIR):
    all_metrics.json names each scenario's directory under it. `min_agent_turns`: the run-wide floor of
    agent turns, or None for each scenario's own."""
    run_id, latest = latest_results(results)
    summary = RunSummary(run_id=run_id, min_agent_turns=min_agent_turns)
    for result in latest.values():
        summary.add(result)
    # (the DB diff is not part of what the harness reads back: kept beside the summary's documents)
    names = {call_id: _scenario_name(result_fields(result)[3], call_id) for call_id, result in latest.items()}
    directories = scenario_directories(names)
    diffs = {
        directories[call_id]: result_fields(result)[3].get(DB_STATE_DIFF_KEY) for call_id, result in latest.items()
    }
    files: dict[str, bytes] = {}
    loaded: list[dict[str, Any]] = []
    for directory, documents in ordered_scenarios(summary):
        metrics = dict(documents.metrics)
        if "scenario_directory" in metrics:  # where the scenario's files are now (as the harness refreshes it)
            metrics["scenario_directory"] = directory
        files[f"{directory}/{METRICS_FILE}"] = _json_file(metrics)
        if documents.judge is not None:
            files[f"{directory}/{JUDGE_FILE}"] = _json_file(documents.judge)
        if (diff := diffs.get(directory)) is not None:
            files[f"{directory}/{DB_DIFF_FILE}"] = _json_file(diff)
        loaded.append(with_run_directory(metrics, run_directory, directory))
    files[SUMMARY_FILE] = summary_text(summary, retry_command=retry_command).encode("utf-8")
    files[ALL_METRICS_FILE] = all_metrics_json(loaded)
    files[ALL_LATENCIES_FILE] = all_latencies_csv(loaded)
    return files


def _scenario_name(metrics: Mapping[str, Any], call_id: str) -> str:
    name = metrics.get("scenario_name")
    return name if isinstance(name, str) else call_id


KILLED_MARKER = "__KILLED__"


def load_run(
    files: Mapping[str, bytes], *, run_id: str | None = None, min_agent_turns: int | None = None
) -> RunSummary:
    """Re-aggregate a run from its exported scenario files alone (all_summary.txt is not read).

    A directory holding a `__KILLED__` marker is an attempt the runner discarded (an automatic retry's
    `<scenario>.killed.autoretry<N>.<timestamp>/`, or one `--resume` moved aside): its scenario was
    run again, so it is not a scenario of the run."""
    summary = RunSummary(run_id=run_id, min_agent_turns=min_agent_turns)
    for path in sorted(files):
        directory, _, filename = path.rpartition("/")
        if filename != METRICS_FILE or f"{directory}/{KILLED_MARKER}" in files:
            continue
        judge_bytes = files.get(f"{directory}/{JUDGE_FILE}")
        judge = json.loads(judge_bytes) if judge_bytes is not None else None
        summary.add_scenario_files(json.loads(files[path]), judge, key=directory)
    return summary
