"""`callqa demo`: the whole path on one machine, from nothing to a table of scored calls.

Starts the embedded broker and a worker, sends the bundled sample log, waits until every call's
latest result is on `callqa.results`, prints the table and totals, checks the live results against
an in-process replay of the same log and against the replay of the events topic as `callqa record`
writes it, and stops everything it started.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import msgspec

from models.results import CallResult
from models.wire import MSGPACK_LOG
from streams.cli.args import log_as_file
from streams.cli.progress import progress_bar
from streams.cli.render import alert_line, results_table, totals_block
from streams.config import Settings, load_settings
from streams.files.event_log import read_log
from streams.kafka.embedded_broker import EmbeddedBroker
from streams.kafka.topic_reader import read_topic
from streams.replay.log_replay import ReplayReport, replay
from streams.replay.record import record_events_topic
from streams.send.sender import send_log
from streams.topics import TopicNames
from streams.wiring import build_engine
from streams.worker.processes import WorkerProcess

SAMPLE_LOG = Path(__file__).resolve().parents[2] / "samples" / "calls.jsonl"
SAMPLE_COHORTS = SAMPLE_LOG.with_name("cohorts.json")
SAMPLE_RULES = SAMPLE_LOG.with_name("alert-rules.toml")


def replay_latest(log: str, settings: Settings, cohorts_file: str | None) -> tuple[dict[str, dict], ReplayReport]:
    latest: dict[str, dict] = {}

    def keep(result: CallResult) -> None:
        document = json.loads(msgspec.json.encode(result))
        latest[document["call_id"]] = document

    report = replay(
        read_log(log),
        build_engine(settings, cohorts_file),
        settings.partitions,
        keep,
        max_message_bytes=settings.max_message_bytes,
        max_result_bytes=settings.max_result_bytes,
    )
    return latest, report


def collect_live(settings: Settings, expected: dict[str, dict], timeout_s: float) -> dict[str, dict]:
    latest: dict[str, dict] = {}
    bar = progress_bar(total=len(expected), desc="results", unit="call")

    def keep(key: bytes, value: bytes) -> None:
        document = json.loads(value)
        previous = latest.get(document["call_id"])
        if previous is None or document["version"] >= previous["version"]:
            if previous is None:
                bar.update(1)
            latest[document["call_id"]] = document

    def complete() -> bool:
        return all(c in latest and latest[c]["version"] >= e["version"] for c, e in expected.items())

    asyncio.run(
        read_topic(settings, TopicNames(settings.topic_prefix).results, None, keep, until=complete, timeout_s=timeout_s)
    )
    bar.close()
    return latest


def firing_alerts(worker: WorkerProcess, results: int, wait_s: float = 20.0) -> list[dict] | None:
    """The worker's firing alerts (GET /alerts) once its alert evaluation has seen `results` results."""
    deadline = time.monotonic() + wait_s
    answer = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{worker.web_port}/alerts", timeout=2) as response:
                answer = json.loads(response.read())
        except (OSError, ValueError):
            answer = None
        if answer is not None and answer.get("counters", {}).get("observed", 0) >= results:
            break
        time.sleep(0.5)
    return None if answer is None else answer.get("firing", [])


def run_demo(log: str | None = None, partitions: int = 4, timeout_s: float = 180.0) -> int:
    log = log or str(SAMPLE_LOG)
    cohorts_file = str(SAMPLE_COHORTS) if SAMPLE_COHORTS.exists() else None
    started = time.perf_counter()
    # The settings the worker reads too (it inherits this environment): a topic prefix, the lateness or
    # the retention set there must be the replay's and the sender's as well, or the two do not compare.
    configured = load_settings().with_overrides(partitions=partitions)
    expected, replay_report = replay_latest(log, configured, cohorts_file)
    workdir = tempfile.mkdtemp(prefix="callqa-demo-")
    try:
        return _run(log, partitions, timeout_s, workdir, configured, cohorts_file, expected, replay_report, started)
    except BaseException:  # (Ctrl-C, SIGTERM, a failure: what happened is in the logs)
        print(f"callqa demo: stopped; the broker's and the worker's logs are kept in {workdir}", file=sys.stderr)
        raise


def _run(
    log: str,
    partitions: int,
    timeout_s: float,
    workdir: str,
    configured: Settings,
    cohorts_file: str | None,
    expected: dict[str, dict],
    replay_report: ReplayReport,
    started: float,
) -> int:
    print(
        f"callqa demo: {log}\n  replay (in-process): {replay_report.events} events, {len(expected)} calls "
        f"in {replay_report.seconds:.2f} s ({replay_report.events_per_s:,.0f} events/s)"
    )
    with EmbeddedBroker().start(log_path=f"{workdir}/broker.log") as broker:
        print(f"  embedded broker at {broker.bootstrap}; logs in {workdir} (removed when the demo succeeds)")
        settings = configured.with_overrides(broker=broker.url, data_dir=f"{workdir}/data")
        # No LLM judge: its answers would rescore the calls live that the replay, which asks none,
        # scores once, and the demo would compare versions that were never meant to agree.
        worker_env = {"CALLQA_PARTITIONS": str(partitions), "CALLQA_OPENAI_API_KEY": ""}
        if configured.judge_enabled:
            print(
                "  the LLM judge configured here is not asked in the demo (so that live and replay compare); "
                "`callqa up` and `callqa replay --judge --record` use it"
            )
        if cohorts_file:
            worker_env["CALLQA_COHORTS_FILE"] = cohorts_file
        if SAMPLE_RULES.exists():
            worker_env["CALLQA_ALERT_RULES_FILE"] = str(SAMPLE_RULES)
        with WorkerProcess(broker.url, f"{workdir}/data", log_path=f"{workdir}/worker.log", env=worker_env) as worker:
            worker.wait_ready(assigned=True)
            print(f"  worker ready (joined its group) after {time.perf_counter() - started:.1f} s")
            records = list(read_log(log))
            bar = progress_bar(total=len(records), desc="send", unit="record")
            sent_at = time.perf_counter()
            send = asyncio.run(send_log(records, settings, on_record=lambda n: bar.update(1)))
            bar.close()
            live = collect_live(settings, expected, timeout_s)
            scored_in = time.perf_counter() - sent_at
            health = worker.health() or {}
            alerts = firing_alerts(worker, sum(doc["version"] for doc in expected.values()))
        # What re-scoring history starts from: the events topic itself, the worker's ticks and sweeps included.
        recorded_log = f"{workdir}/events.msgpack"
        with open(recorded_log, "wb") as out:
            record_events_topic(settings, TopicNames(settings.topic_prefix).events, out.write, MSGPACK_LOG)
        from_topic, _ = replay_latest(recorded_log, configured, cohorts_file)
    print()
    print(results_table(live.values()))
    print()
    print(totals_block(list(live.values())))
    same = sum(1 for call_id, doc in expected.items() if live.get(call_id) == doc)
    missing = [c for c in expected if c not in live]
    extra = [c for c in live if c not in expected]  # (those read before the last expected result came)
    # The worker's dead letters and those `send` wrote itself (records too large to send) against
    # replay's. (Counted when the last result came: one after it may still be on its way.)
    dead_live = health.get("dead_lettered")
    dead_live = dead_live + send.refused if isinstance(dead_live, int) else None
    print(
        f"\nrecords: {send.records}, events: {send.events}, messages sent: {send.messages}; "
        f"worker: applied {health.get('applied', '?')} (with its own inactivity ends), duplicates ignored "
        f"{health.get('duplicate', '?')}, "
        f"dead-lettered {health.get('dead_lettered', '?')}"
        + (f" (+ {send.refused} too large to send)" if send.refused else "")
        + f" (replay: {replay_report.rejected})"
    )
    same_recorded = sum(1 for call_id, doc in live.items() if from_topic.get(call_id) == doc)
    print(
        f"calls scored live: {len(live)}/{len(expected)}; identical to replay: {same}/{len(expected)}, "
        f"to the replay of the events topic recorded (`callqa record`): {same_recorded}/{len(live)}"
    )
    print(
        f"send → all results: {scored_in:.1f} s ({send.events / scored_in:,.0f} events/s end to end); "
        f"demo total {time.perf_counter() - started:.1f} s"
    )
    if alerts is not None:
        print(f"alerts firing now (rules {SAMPLE_RULES.name}): {len(alerts)}")
        for alert in alerts:
            print("  " + alert_line(alert))
    if missing:
        print(f"MISSING results for {len(missing)} calls, e.g. {missing[:5]}")
    if extra:
        print(f"EXTRA results, for {len(extra)} calls replay did not score, e.g. {extra[:5]}")
    if dead_live is not None and dead_live != replay_report.rejected:
        print(f"DIFFERENT dead letters: {dead_live} live, {replay_report.rejected} in replay")
    if same_recorded != len(live) or len(from_topic) != len(live):
        print(f"DIFFERENT from the replay of the recorded topic ({recorded_log}): {len(live) - same_recorded} calls")
    if missing or extra or same != len(expected) or same_recorded != len(live) or len(from_topic) != len(live):
        print(f"the broker's and the worker's logs are kept in {workdir}")
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


def run(args: argparse.Namespace) -> int:
    from streams.cli.demo import run_demo

    partitions = 4 if args.partitions is None else args.partitions
    if args.log is None:
        return run_demo(None, partitions=partitions)
    with log_as_file(args.log) as log:  # (read twice: by the replay, then by the sender)
        return run_demo(log, partitions=partitions)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="broker + worker + the bundled sample calls → scored table")
    p.add_argument("--log", help="another log instead of the bundled sample")
    p.add_argument("--partitions", type=int)
    p.set_defaults(func=run)
