"""A run as the harness's files: `<scenario>/metrics.json`, `<scenario>/judge_result.json`, `all_summary.txt`.

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
from typing import Any, Iterable, Mapping

from models.results import CallResult
from scorers.runs.aggregate import DEFAULT_MIN_AGENT_TURNS, RunSummary, result_fields
from scorers.runs.signals import split_evaluation
from scorers.runs.text import DEFAULT_RESUME_COMMAND, render_all_summary

SUMMARY_FILE = "all_summary.txt"
METRICS_FILE = "metrics.json"
JUDGE_FILE = "judge_result.json"
_UNSAFE = re.compile(r"[/\\\x00-\x1f]")
_RESERVED = frozenset({"", ".", "..", SUMMARY_FILE})
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


def export_run(results: Iterable[AnyResult], *, min_agent_turns: int = DEFAULT_MIN_AGENT_TURNS,
               resume_command: str = DEFAULT_RESUME_COMMAND) -> dict[str, bytes]:
    """Relative path → content of the run's files: each scenario's metrics.json (the evaluation without
    the judge, indent=2, keys in document order), its judge_result.json when a judge ran, all_summary.txt."""
    run_id, latest = latest_results(results)
    summary = RunSummary(run_id=run_id, min_agent_turns=min_agent_turns)
    documents: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {}
    for call_id, result in latest.items():
        summary.add(result)
        documents[call_id] = split_evaluation(result_fields(result)[3])

    names = {call_id: _scenario_name(metrics, call_id) for call_id, (metrics, _) in documents.items()}
    files: dict[str, bytes] = {}
    for call_id, directory in sorted(scenario_directories(names).items(), key=lambda item: item[1]):
        metrics, judge = documents[call_id]
        if "scenario_directory" in metrics:  # where the scenario's files are now (as the harness refreshes it)
            metrics = {**metrics, "scenario_directory": directory}
        files[f"{directory}/{METRICS_FILE}"] = _json_file(metrics)
        if judge is not None:
            files[f"{directory}/{JUDGE_FILE}"] = _json_file(judge)
    files[SUMMARY_FILE] = render_all_summary(summary.summary(), resume_command=resume_command).encode("utf-8")
    return files


def _scenario_name(metrics: Mapping[str, Any], call_id: str) -> str:
    name = metrics.get("scenario_name")
    return name if isinstance(name, str) else call_id


KILLED_MARKER = "__KILLED__"


def load_run(files: Mapping[str, bytes], *, run_id: str | None = None,
             min_agent_turns: int = DEFAULT_MIN_AGENT_TURNS) -> RunSummary:
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
