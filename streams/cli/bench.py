"""`callqa bench`: callqa and its Python peers side by side on an embedded broker, as a JSON report."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def run(args: argparse.Namespace) -> int:
    from streams.bench.runner import run_bench

    report = run_bench(args.out, quick=args.quick)
    print(f"bench report ({report['duration_s']:.0f} s) -> {args.out}", file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("bench", help="callqa and its Python peers side by side on an embedded broker → JSON report")
    p.add_argument("--out", required=True)
    p.add_argument("--quick", action="store_true", help="small counts, for a smoke run (the figures mean nothing)")
    p.set_defaults(func=run)
