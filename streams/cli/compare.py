"""`callqa compare BEFORE AFTER`: what re-scoring changed, call by call and verdict by verdict."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from streams.cli.runs import result_documents
from streams.files.output_files import STANDARD_INPUT


def run(args: argparse.Namespace) -> int:
    """What re-scoring changed: the workers' results against a replay's, verdict by verdict."""
    from scorers.result_changes import compare_results
    from streams.cli.render import result_changes_text

    if args.before == args.after == STANDARD_INPUT:
        raise ValueError("only one of BEFORE and AFTER can be - (standard input)")
    if args.calls < 0:
        raise ValueError(f"--calls must be 0 or more, got {args.calls}")
    report = compare_results(result_documents(args.before), result_documents(args.after))
    document = report.to_dict()
    print(json.dumps(document, indent=2) if args.json else result_changes_text(document, args.calls))
    if args.fail_on_regression and report.regressions:
        print(f"callqa: {report.regressions} verdicts passed before and fail now", file=sys.stderr)
        return 1
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "compare", help="what re-scoring changed: two results files compared call by call, verdict by verdict"
    )
    p.add_argument(
        "before",
        help="results as the workers published them (`callqa tail results --json --no-follow "
        "> BEFORE`) or an earlier replay's; - reads standard input",
    )
    p.add_argument("after", help="results of the same calls scored again (`callqa replay LOG --out AFTER`)")
    p.add_argument("--json", action="store_true", help="the comparison as JSON, every changed call in it")
    p.add_argument("--calls", type=int, default=20, metavar="N", help="changed calls listed (default 20)")
    p.add_argument(
        "--fail-on-regression", action="store_true", help="exit 1 when a verdict that passed before fails now"
    )
    p.set_defaults(func=run)
