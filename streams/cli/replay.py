"""`callqa replay LOG`: score a recorded log in-process, optionally recording its sweeps and judge answers first."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from typing import Any, cast

from streams.cli.args import LOG_HELP, count_records, log_as_file, settings_from
from streams.config import Settings
from streams.files.event_log import read_log
from streams.files.output_files import STANDARD_INPUT, Terminated


def run(args: argparse.Namespace) -> int:
    from streams.files.output_files import refuse_clashes
    from streams.replay.parallel import default_jobs

    settings = settings_from(args)
    jobs = default_jobs(settings.partitions) if args.jobs is None else min(args.jobs, settings.partitions)
    if jobs < 1:
        raise ValueError("--jobs must be at least 1")
    if args.record == STANDARD_INPUT:
        raise ValueError(
            "--record needs a file: LOG2 is replayed once it is written, so it cannot go to standard output"
        )
    refuse_clashes(
        {"LOG": args.log, "--cohorts": args.cohorts, "--rules": args.rules},
        {"--out": args.out, "--deadletter": args.deadletter, "--alerts-out": args.alerts_out, "--record": args.record},
    )
    with log_as_file(args.log) as log:
        return _replay(args, settings, jobs, log)


def _replay(args: argparse.Namespace, settings: Settings, jobs: int, log: str) -> int:
    from streams.cli.progress import progress_bar, shown
    from streams.replay.alerts import alerts_file
    from streams.replay.outputs import ReplayFiles
    from streams.replay.parallel import replay_log
    from streams.wiring import build_engine

    if args.judge and not args.record:
        from streams.judge.offline import NEEDS_RECORD

        raise ValueError(NEEDS_RECORD)
    if args.retry_judge_errors and not args.judge:
        from streams.judge.offline import RETRY_NEEDS_JUDGE

        raise ValueError(RETRY_NEEDS_JUDGE)
    # Every output opened and the rules read before any work: a path that cannot be written, or a bad
    # rules file, must fail before a recording's first pass and before any judge is paid.
    if args.record:
        # (Recorded with too few partitions, LOG2 would hold sweeps the workers never made: refused
        # before anything is written or any judge is paid, where a plain replay only warns.)
        from streams.replay.log_replay import highest_partition_named

        named = highest_partition_named(read_log(log), settings.partitions)
        if named is not None:
            raise ValueError(partitions_warning(named, settings.partitions, recording=True))
    alerts = alerts_file(
        args.rules, args.alerts_out, settings.allowed_lateness_ms, settings.partitions, settings.max_watermark_leap_ms
    )
    files = ReplayFiles.open(args.out, args.deadletter, alerts)
    recorded = False
    try:
        with files:  # no partial output: on a failure whatever was there before stays
            if args.record:  # write LOG2 (sweeps and judge answers recorded), then replay it
                log = _record(args, settings, log)
                recorded = True
            total = count_records(log)  # (reads the log: a missing one fails here, before any output is kept)
            bar = progress_bar(total=total, desc="replay", unit="record")
            try:
                # One clock for every job, so that the same log replays the same (scorers/future_time.py).
                clock_ms = int(time.time() * 1000) if args.now_ms is None else args.now_ms
                report = replay_log(
                    log,
                    settings.partitions,
                    jobs,
                    lambda: build_engine(settings, args.cohorts, clock_ms),
                    files,
                    on_progress=(lambda records: bar.update(records - bar.n)) if shown(bar) else None,
                    max_message_bytes=settings.max_message_bytes,
                    max_result_bytes=settings.max_result_bytes,
                )
            finally:
                bar.close()
    except BaseException:  # (the outputs' last bytes too, and Ctrl-C: what the recording cost need not be paid again)
        if recorded:
            print(
                f"callqa: {args.record} is complete: `callqa replay {args.record} --out …` scores it "
                "without recording it again",
                file=sys.stderr,
            )
        raise
    print(
        f"replayed {report.records} records: {report.events} events; {report.applied} applied (with the "
        f"{report.swept} inactivity ends of the calls swept), {report.duplicates} duplicates ignored, "
        f"{report.rejected} dead-lettered{f', {report.watermarks} watermarks' if report.watermarks else ''}; "
        f"{report.results} results for {report.calls} calls in {report.seconds:.2f} s "
        f"({report.events_per_s:,.0f} events/s{f', {jobs} jobs' if jobs > 1 else ''}) -> {args.out}",
        file=sys.stderr,
    )
    if alerts is not None:
        print(f"{alerts.count} alert events -> {alerts.path}", file=sys.stderr)
    if report.records and not report.events:
        print(
            f"callqa: warning: none of the log's {report.records} records held an event, and each was dead-lettered: "
            "is it an event log (a JSON object a line, or MessagePack)?",
            file=sys.stderr,
        )
    if report.partition_beyond is not None:
        print(partitions_warning(report.partition_beyond, settings.partitions), file=sys.stderr)
    return 0


def partitions_warning(named: int, partitions: int, recording: bool = False) -> str:
    """What a replay says when the log's watermarks name partition `named`, which its `partitions`
    do not have: the log was recorded from a topic of more, and its results differ from the workers'.
    `recording`: said before `--record` writes anything, as the reason it does not."""
    found = (
        f"the log's watermarks name partition {named}, but the replay has {partitions} (--partitions "
        f"{partitions}): the log comes from a topic of at least {named + 1} partitions. Replayed with fewer, "
        "the partitions' event times mix, calls are swept early and their later events refused"
    )
    if recording:
        return (
            f"{found}, and LOG2 would record those sweeps. Record it with the topic's partition count "
            "(`callqa record` names it)"
        )
    return (
        f"callqa: warning: {found}, so these results differ from the workers'. Replay it with the topic's "
        "partition count (`callqa record` names it)"
    )


def _record(args: argparse.Namespace, settings: Settings, log: str) -> str:
    """Write LOG2 (`--record`) from `log`, judging its calls with `--judge`, with a bar for each step;
    returns LOG2's path."""
    from streams.cli.progress import progress_bar
    from streams.judge.offline import RecordProgress, print_summary, record_log
    from streams.replay.parallel import every_so_many_records
    from streams.wiring import build_engine

    bars = [progress_bar(total=count_records(log), desc="record", unit="record")]

    def judging(calls: int) -> None:
        bars[0].close()
        bars.append(progress_bar(total=calls, desc="judge", unit="call"))

    reading = bars[0]
    progress = RecordProgress(
        on_record=every_so_many_records(lambda records: reading.update(records - reading.n)),
        on_judging=judging,
        on_judged=lambda: bars[-1].update(1),
    )
    try:
        report = record_log(
            log,
            args.record,
            settings,
            build_engine(settings, args.cohorts),
            args.judge,
            progress,
            retry_errors=args.retry_judge_errors,
        )
    finally:
        for bar in bars:
            bar.close()
    print_summary(report, args.record)
    if report.stopped_by is not None:  # (also when every answer had come: the command was stopped)
        print(
            f"callqa: {'interrupted' if report.stopped_by == signal.SIGINT else 'terminated'} while judging: "
            f"{args.record} holds the {report.judged} answers that came; `callqa replay {args.record} --judge "
            f"--record LOG3 --out …` asks only for the other {report.interrupted} calls",
            file=sys.stderr,
        )
        raise KeyboardInterrupt() if report.stopped_by == signal.SIGINT else Terminated()
    return cast(str, args.record)  # (a path: `_record` runs only when --record names one)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("replay", help="score a log in-process (no broker), results as JSON Lines")
    p.add_argument("log", help=LOG_HELP)
    p.add_argument("--out", required=True, help="results as JSON Lines; - writes standard output")
    p.add_argument("--deadletter", help="write rejected records here as JSON Lines")
    p.add_argument(
        "--partitions",
        type=int,
        help="the events topic's partition count, to reproduce live sweeps "
        "(default 4; `callqa record` names a recorded topic's)",
    )
    p.add_argument("--cohorts", help="cohort definitions (JSON or TOML) to score the calls against")
    p.add_argument("--rules", help="alert rules (TOML or JSON) to evaluate over the results")
    p.add_argument("--alerts-out", help="write the alert events here as JSON Lines (with --rules)")
    p.add_argument(
        "--judge",
        action="store_true",
        help="ask the configured LLM judge about calls with no recorded answer (needs --record)",
    )
    p.add_argument(
        "--record", metavar="LOG2", help="write the log plus its sweep and judge.result events here, then score that"
    )
    p.add_argument(
        "--retry-judge-errors",
        action="store_true",
        help="with --judge: ask again about the calls whose recorded answer is an error, "
        "and write the new answer in its place",
    )
    p.add_argument(
        "--jobs",
        type=int,
        help="processes sharing the partitions, same output as one "
        "(default: one per CPU, at most one per partition; 1: in this process)",
    )
    p.add_argument(
        "--now-ms",
        type=int,
        metavar="MS",
        help="the clock events from the future are measured against (Unix ms; default: this machine's, "
        "read once at start); the time a log was recorded replays it as the workers scored it",
    )
    p.set_defaults(func=run)
