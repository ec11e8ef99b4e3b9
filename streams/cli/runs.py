"""`callqa summary` and `callqa export`: a run's files as the evaluation harness writes them, from a results
file or the results topic."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any

import msgspec

from models.results import CallResult
from streams.cli.args import kafka_options, non_negative_int, settings_from
from streams.files.output_files import STANDARD_INPUT


def result_documents(path: str) -> Iterator[dict[str, Any]]:
    """The result documents of a results file (`callqa replay --out`, `callqa tail results --json`), each
    checked, one at a time; `-`: standard input."""
    name = "standard input" if path == STANDARD_INPUT else path
    with open(sys.stdin.fileno(), "rb", closefd=False) if path == STANDARD_INPUT else open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                yield _result_document(line, f"{name} line {number}")


def _run_results(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The results of one run: from a results file (`callqa replay --out`) or the results topic."""
    import asyncio

    # Only the run's documents are kept: a results file or topic holds every run and production call.
    run: list[dict[str, Any]] = []
    others: set[str] = set()

    def keep(document: dict[str, Any]) -> None:
        run_id = document.get("run_id")
        if run_id == args.run_id:
            run.append(document)
        elif run_id:
            others.add(str(run_id))

    if args.results:
        for document in result_documents(args.results):
            keep(document)
    else:
        from streams.kafka.topic_reader import read_topic
        from streams.topics import TopicNames

        settings = settings_from(args)
        topic = TopicNames(settings.topic_prefix).results
        asyncio.run(
            read_topic(settings, topic, 3.0, lambda key, value: keep(_result_document(value, f"a record of {topic}")))
        )
    if not run:
        raise ValueError(f"no results of run {args.run_id!r}; runs present: {sorted(others) or 'none'}")
    return run


def _result_document(line: bytes, where: str) -> dict[str, Any]:
    try:
        document = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{where} is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ValueError(f"{where} is not a result document (a JSON object)")
    try:  # the shape callqa publishes (schemas/result.json), checked before any is summed
        msgspec.convert(document, CallResult)
    except msgspec.ValidationError as exc:
        raise ValueError(f"{where} is not a result document: {exc}") from None
    return document


def cmd_summary(args: argparse.Namespace) -> int:
    from scorers.runs import RunSummary, summary_text

    summary = RunSummary(run_id=args.run_id, min_agent_turns=args.min_agent_turns)
    for result in _run_results(args):
        summary.add(result)
    if args.json:
        print(json.dumps(summary.summary().to_dict(), indent=2))
    else:
        sys.stdout.write(summary_text(summary))  # (the file's bytes: it ends with its own newline)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from scorers.runs import export_run
    from streams.files.exported_runs import write_export

    files = export_run(_run_results(args), min_agent_turns=args.min_agent_turns, run_directory=args.dir)
    written = write_export(files, args.dir)
    print(f"wrote {len(written)} files under {args.dir}", file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    for name, helptext in (
        ("summary", "print a run's all_summary (from the results topic or a results file)"),
        (
            "export",
            "write a run in the evaluation harness's layout (metrics.json, judge_result.json, "
            "all_summary.txt, all_metrics.json, all_latencies.csv)",
        ),
    ):
        p = sub.add_parser(name, help=helptext)
        kafka_options(p)
        p.add_argument("run_id")
        if name == "export":
            p.add_argument("dir")
        else:
            p.add_argument("--json", action="store_true", help="the summary as JSON")
        p.add_argument("--results", help="a results file (JSON Lines) instead of the results topic")
        p.add_argument(
            "--min-agent-turns",
            type=non_negative_int,
            default=None,
            metavar="N",
            help="one floor of agent LLM responses for every scenario, as the evaluation harness's "
            "--min-agent-turns (token_usage.agent.n_calls below N: stalled, counted as a failure; "
            "0: none stalls); default: each scenario's own floor, as it was scored",
        )
        p.set_defaults(func=cmd_summary if name == "summary" else cmd_export)
