"""The `callqa` command line."""

from __future__ import annotations

import argparse
import errno
import json
import os
import shutil
import signal
import socket
import stat
import sys
import tempfile
import time
from contextlib import contextmanager
from typing import Any, Iterator

import msgspec

from models.events import DEFAULT_MIN_AGENT_TURNS
from models.results import CallResult
from models.wire import MAX_ITEMS_DEAD_LETTERED, MSGPACK_LOG, log_format, log_format_by_name, read_log, refuse_unreadable
from streams.broker import BrokerUnavailable
from streams.config import Settings, load_settings
from streams.output_files import STANDARD_INPUT, STANDARD_OUTPUT, STOP_SIGNALS, Terminated

# Addresses that listen everywhere and name no host (CALLQA_WEB_HOST must name one).
WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})
# Names that mean "this machine" to whoever uses them: another worker's, not this one's.
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def _settings(args: argparse.Namespace) -> Settings:
    settings = load_settings()
    return settings.with_overrides(
        broker=getattr(args, "broker", None),
        partitions=getattr(args, "partitions", None),
        topic_prefix=getattr(args, "topic_prefix", None),
        web_port=getattr(args, "web_port", None),
    )


def _count_records(path: str) -> int | None:
    if log_format(path) == MSGPACK_LOG:
        return None
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


@contextmanager
def _log_as_file(path: str) -> Iterator[str]:
    """The log LOG names, as a regular file. A stream (`-` for standard input, a pipe, a process
    substitution such as `<(zcat log.jsonl.gz)`) can be read only once, while a replay reads its log
    several times (to count its records, to tell its format, once in each job): it is copied to a
    temporary file first, removed at the end."""
    if path != STANDARD_INPUT and not _is_stream(path):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="callqa-log-") as directory:
        copy = os.path.join(directory, "log")  # no suffix: its format is told by its first byte
        with open(copy, "wb") as out:
            if path == STANDARD_INPUT:
                shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
            else:
                with open(path, "rb") as source:
                    shutil.copyfileobj(source, out, 1 << 20)
        with open(copy, "rb") as handle:
            first = handle.read(2)
        # (Said here: the copy's name would mean nothing.)
        refuse_unreadable(first, "standard input" if path == STANDARD_INPUT else path, piped=True)
        yield copy


def _is_stream(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # (reading it fails with the usual message)
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:  # (argparse would name this function in its message)
        raise argparse.ArgumentTypeError(f"must be a whole number, 0 or more, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


# ------------------------------------------------------------------------------------ commands


def cmd_broker(args: argparse.Namespace) -> int:
    import signal
    import time

    from streams.broker import EmbeddedBroker

    broker = EmbeddedBroker(port=args.port).start()
    print(f"embedded broker listening: {broker.bootstrap}  (CALLQA_BROKER={broker.url})", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        while broker.process is not None and broker.process.poll() is None:
            time.sleep(0.5)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        broker.stop()


def _refuse_a_taken_web_port(settings: Settings) -> None:
    """The HTTP API's address, tried before the worker starts: Faust would find it taken only once
    running, and stop with a page of traceback."""
    if settings.web_port == 0:
        return
    host = settings.web_listen_host
    try:
        infos = socket.getaddrinfo(host, settings.web_port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        return  # (a host name not resolvable here: left to the web server to say)
    for family, kind, _, _, address in infos:  # (the web server binds every address the name has)
        with socket.socket(family, kind) as probe:
            # As asyncio's server binds: reusing a port in TIME_WAIT, IPv6 apart from IPv4.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                shown = f"[{address[0]}]:{address[1]}" if family == socket.AF_INET6 else f"{address[0]}:{address[1]}"
                if exc.errno == errno.EADDRINUSE:
                    raise ValueError(f"the HTTP API's port {shown} is in use: another worker may run there; give "
                                     "it a free port (--web-port, or CALLQA_WEB_PORT)") from None
                raise ValueError(f"the HTTP API cannot listen on {shown} ({exc.strerror}): set CALLQA_WEB_BIND to an "
                                 "address of this machine (0.0.0.0 for all)") from None


def _run_worker(settings: Settings) -> int:
    import asyncio

    import faust

    from streams.app import create_app
    from streams.former_app_id import refuse_a_moved_group
    from streams.kafka_clients import ensure_topics
    from streams.log_repeats import collapse_aiokafka_repeats
    from streams.topics import TopicNames
    from streams.tuning import tune_gc

    # Checked before anything is created: Faust would fail on it later, with a traceback.
    try:
        os.makedirs(settings.data_dir, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=settings.data_dir, prefix=".callqa-write-check-")
        probe.close()
    except OSError as exc:
        raise ValueError(f"data_dir {settings.data_dir!r} (CALLQA_DATA_DIR) cannot be written: "
                         f"{exc.strerror or exc}") from None
    _refuse_a_taken_web_port(settings)
    # Create every topic with its partition count before Faust subscribes (see ensure_topics).
    asyncio.run(ensure_topics(settings, TopicNames(settings.topic_prefix).specs(settings.partitions),
                              check_partitions=True))
    asyncio.run(refuse_a_moved_group(settings))
    if settings.web_host in WILDCARD_ADDRESSES:
        print(f"callqa: CALLQA_WEB_HOST={settings.web_host} names no worker: another worker asked for "
              f"GET /alerts cannot pass it on to this one; set CALLQA_WEB_HOST to this worker's host name "
              f"and CALLQA_WEB_BIND={settings.web_host}", file=sys.stderr, flush=True)
    elif settings.web_bind in WILDCARD_ADDRESSES and settings.web_host in LOOPBACK_NAMES:
        print(f"callqa: CALLQA_WEB_BIND={settings.web_bind} with CALLQA_WEB_HOST={settings.web_host}: another "
              f"worker asked for GET /alerts would pass it on to its own loopback, not to this worker; set "
              f"CALLQA_WEB_HOST to this worker's host name", file=sys.stderr, flush=True)
    if not settings.api_token_in_force and settings.web_listen_host not in LOOPBACK_NAMES:
        print(f"callqa: the HTTP API listens on {settings.web_listen_host} with no CALLQA_API_TOKEN: "
              "whoever reaches it can create, change and delete cohorts; set CALLQA_API_TOKEN to ask writes "
              "for it", file=sys.stderr, flush=True)
    callqa = create_app(settings)
    tune_gc()
    collapse_aiokafka_repeats()
    worker = faust.Worker(callqa.app, loglevel=settings.log_level, quiet=True)
    # At log levels from WARNING up Faust keeps a spinner that turns the root logger to DEBUG, and
    # the debug records of every send then cost ~15 % of a worker (measured with py-spy).
    worker.spinner = None
    # A closed terminal's SIGHUP stops the worker as SIGTERM does, its offsets committed and its journal
    # written, where its default would end the process at once; one ignored at start (nohup) stays so.
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, _stop_as_on_sigterm)
    worker.execute_from_commandline()
    return 0


def _stop_as_on_sigterm(signum: int, frame: Any) -> None:
    signal.raise_signal(signal.SIGTERM)  # (the worker's own SIGTERM handler stops it)


def cmd_worker(args: argparse.Namespace) -> int:
    return _run_worker(_settings(args))


def cmd_up(args: argparse.Namespace) -> int:
    from streams.broker import EmbeddedBroker

    settings = _settings(args)
    if settings.web_port == args.port:
        raise ValueError(f"the broker and the HTTP API cannot share port {args.port}: give --web-port another")
    _refuse_a_taken_web_port(settings)  # (before a broker is started, only to be stopped)
    with EmbeddedBroker(port=args.port).start() as broker:
        print(f"embedded broker listening: {broker.bootstrap}  (CALLQA_BROKER={broker.url})", flush=True)
        settings = _settings(args).with_overrides(broker=broker.url)
        try:
            return _run_worker(settings)
        except KeyboardInterrupt:
            return 0


def cmd_send(args: argparse.Namespace) -> int:
    import asyncio

    from streams.log_repeats import collapse_aiokafka_repeats
    from streams.progress import progress_bar
    from streams.sender import send_log

    collapse_aiokafka_repeats()
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {args.batch_size}")
    settings = _settings(args)
    with _log_as_file(args.log) as log:
        total = _count_records(log)
        bar = progress_bar(total=total, desc="send", unit="record")
        handed_over = 0

        def sent_one(size: int) -> None:
            nonlocal handed_over
            handed_over += 1
            bar.update(1)

        try:
            report = asyncio.run(send_log(read_log(log), settings, batch_size=args.batch_size,
                                          end_of_input=not args.keep_open, on_record=sent_one))
        except KeyboardInterrupt:
            bar.close()
            from streams.acknowledgements import AGAIN

            print(f"callqa: stopped after reading {handed_over:,}{f' of {total:,}' if total else ''} records of the log, "
                  f"with no word that all it sent arrived; to finish, {AGAIN}", file=sys.stderr)
            raise
        bar.close()
    print(f"sent {report.records} records ({report.events} events) as {report.messages} messages to "
          f"{settings.topic_prefix}.events", file=sys.stderr)
    if report.refused:
        print(f"{report.refused} records over CALLQA_MAX_MESSAGE_BYTES ({settings.max_message_bytes}) were not sent: "
              f"dead-lettered to {settings.topic_prefix}.deadletter, as the worker refuses such messages", file=sys.stderr)
    if report.rest_refused:
        print(f"{report.rest_refused} batch records held more than {MAX_ITEMS_DEAD_LETTERED:,} bad items: the rest of "
              f"each were dead-lettered to {settings.topic_prefix}.deadletter in one letter, as the worker does",
              file=sys.stderr)
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from streams.output_files import refuse_clashes
    from streams.replay_parallel import default_jobs

    settings = _settings(args)
    jobs = default_jobs(settings.partitions) if args.jobs is None else min(args.jobs, settings.partitions)
    if jobs < 1:
        raise ValueError("--jobs must be at least 1")
    if args.record == STANDARD_INPUT:
        raise ValueError("--record needs a file: LOG2 is replayed once it is written, so it cannot go to standard output")
    refuse_clashes({"LOG": args.log, "--cohorts": args.cohorts, "--rules": args.rules},
                   {"--out": args.out, "--deadletter": args.deadletter, "--alerts-out": args.alerts_out,
                    "--record": args.record})
    with _log_as_file(args.log) as log:
        return _replay(args, settings, jobs, log)


def _replay(args: argparse.Namespace, settings: Settings, jobs: int, log: str) -> int:
    from streams.progress import progress_bar, shown
    from streams.replay_alerts import alerts_file
    from streams.replay_files import ReplayFiles
    from streams.replay_parallel import replay_log
    from streams.wiring import build_engine

    if args.judge and not args.record:
        from streams.judge_offline import NEEDS_RECORD

        raise ValueError(NEEDS_RECORD)
    if args.retry_judge_errors and not args.judge:
        from streams.judge_offline import RETRY_NEEDS_JUDGE

        raise ValueError(RETRY_NEEDS_JUDGE)
    # Every output opened and the rules read before any work: a path that cannot be written, or a bad
    # rules file, must fail before a recording's first pass and before any judge is paid.
    if args.record:
        # (Recorded with too few partitions, LOG2 would hold sweeps the workers never made: refused
        # before anything is written or any judge is paid, where a plain replay only warns.)
        from streams.replay import highest_partition_named

        named = highest_partition_named(read_log(log), settings.partitions)
        if named is not None:
            raise ValueError(partitions_warning(named, settings.partitions, recording=True))
    alerts = alerts_file(args.rules, args.alerts_out, settings.allowed_lateness_ms, settings.partitions,
                         settings.max_watermark_leap_ms)
    files = ReplayFiles.open(args.out, args.deadletter, alerts)
    recorded = False
    try:
        with files:  # no partial output: on a failure whatever was there before stays
            if args.record:  # write LOG2 (sweeps and judge answers recorded), then replay it
                log = _record(args, settings, log)
                recorded = True
            total = _count_records(log)  # (reads the log: a missing one fails here, before any output is kept)
            bar = progress_bar(total=total, desc="replay", unit="record")
            try:
                clock_ms = int(time.time() * 1000)  # (one reading for every job: scorers/future_time.py)
                report = replay_log(log, settings.partitions, jobs, lambda: build_engine(settings, args.cohorts, clock_ms),
                                    files, on_progress=(lambda records: bar.update(records - bar.n)) if shown(bar) else None,
                                    max_message_bytes=settings.max_message_bytes,
                                    max_result_bytes=settings.max_result_bytes)
            finally:
                bar.close()
    except BaseException:  # (the outputs' last bytes too, and Ctrl-C: what the recording cost need not be paid again)
        if recorded:
            print(f"callqa: {args.record} is complete: `callqa replay {args.record} --out …` scores it "
                  "without recording it again", file=sys.stderr)
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
        print(f"callqa: warning: none of the log's {report.records} records held an event, and each was dead-lettered: "
              "is it an event log (a JSON object a line, or MessagePack)?", file=sys.stderr)
    if report.partition_beyond is not None:
        print(partitions_warning(report.partition_beyond, settings.partitions), file=sys.stderr)
    return 0


def partitions_warning(named: int, partitions: int, recording: bool = False) -> str:
    """What a replay says when the log's watermarks name partition `named`, which its `partitions`
    do not have: the log was recorded from a topic of more, and its results differ from the workers'.
    `recording`: said before `--record` writes anything, as the reason it does not."""
    found = (f"the log's watermarks name partition {named}, but the replay has {partitions} (--partitions "
             f"{partitions}): the log comes from a topic of at least {named + 1} partitions. Replayed with fewer, "
             "the partitions' event times mix, calls are swept early and their later events refused")
    if recording:
        return (f"{found}, and LOG2 would record those sweeps. Record it with the topic's partition count "
                "(`callqa record` names it)")
    return (f"callqa: warning: {found}, so these results differ from the workers'. Replay it with the topic's "
            "partition count (`callqa record` names it)")


def _record(args: argparse.Namespace, settings: Settings, log: str) -> str:
    """Write LOG2 (`--record`) from `log`, judging its calls with `--judge`, with a bar for each step;
    returns LOG2's path."""
    from streams.judge_offline import RecordProgress, print_summary, record_log
    from streams.progress import progress_bar
    from streams.replay_parallel import every_so_many_records
    from streams.wiring import build_engine

    bars = [progress_bar(total=_count_records(log), desc="record", unit="record")]

    def judging(calls: int) -> None:
        bars[0].close()
        bars.append(progress_bar(total=calls, desc="judge", unit="call"))

    reading = bars[0]
    progress = RecordProgress(on_record=every_so_many_records(lambda records: reading.update(records - reading.n)),
                              on_judging=judging, on_judged=lambda: bars[-1].update(1))
    try:
        report = record_log(log, args.record, settings, build_engine(settings, args.cohorts), args.judge, progress,
                            retry_errors=args.retry_judge_errors)
    finally:
        for bar in bars:
            bar.close()
    print_summary(report, args.record)
    if report.stopped_by is not None:  # (also when every answer had come: the command was stopped)
        print(f"callqa: {'interrupted' if report.stopped_by == signal.SIGINT else 'terminated'} while judging: "
              f"{args.record} holds the {report.judged} answers that came; `callqa replay {args.record} --judge "
              f"--record LOG3 --out …` asks only for the other {report.interrupted} calls", file=sys.stderr)
        raise KeyboardInterrupt() if report.stopped_by == signal.SIGINT else Terminated()
    return args.record


def cmd_record(args: argparse.Namespace) -> int:
    from streams.output_files import AtomicOutput
    from streams.progress import progress_bar
    from streams.topic_log import record_events_topic
    from streams.topics import TopicNames

    settings = _settings(args)
    topic = TopicNames(settings.topic_prefix).events
    format_ = log_format_by_name(args.log)
    bar = progress_bar(total=None, desc="record", unit="message")

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    try:
        with AtomicOutput(args.log) as out:  # (complete or not at all)
            recording = record_events_topic(settings, topic, out.file.write, format_, progress)
    finally:
        bar.close()
    print(f"recorded {recording.events} events of {recording.messages} messages from {topic} "
          f"({recording.partitions} partitions) -> {args.log}", file=sys.stderr)
    left_out = []
    if recording.undecodable:
        left_out.append(f"{recording.undecodable} undecodable or oversized")
    if recording.strays:
        left_out.append(f"{recording.strays} on another partition than their call's")
    if left_out:
        print(f"left out, as the workers dead-lettered them: {' and '.join(left_out)}", file=sys.stderr)
    if recording.unwritable:
        print(f"left out, though the workers applied them: {recording.unwritable} events this log's encoding cannot "
              "hold as they are (" + ("an integer beyond 64 bits: record to a .jsonl log instead" if format_ == MSGPACK_LOG
              else "bytes, NaN or infinity: record to a .msgpack log instead") + ")", file=sys.stderr)
    for partition, first in sorted(recording.truncated.items()):
        print(f"partition {partition} begins at offset {first}: the topic's retention deleted what came before, "
              "so calls begun earlier are scored from what is left", file=sys.stderr)
    # (Without the cohorts in force, no cohort verdict would match the workers'.)
    log = "LOG" if args.log == STANDARD_OUTPUT else args.log
    print(f"score it: callqa replay {log} --partitions {recording.partitions} --cohorts COHORTS.json --out RESULTS.jsonl "
          f"(COHORTS.json: the cohorts in force, `curl WORKER:6066/cohorts > COHORTS.json`; no --cohorts when there "
          "are none; for the alerts too, add --rules RULES.json --alerts-out ALERTS.jsonl, RULES.json from "
          "`curl WORKER:6066/alerts/rules`)", file=sys.stderr)
    return 0


def cmd_tail(args: argparse.Namespace) -> int:
    from streams.tail import tail
    from streams.topics import TopicNames

    settings = _settings(args)
    names = TopicNames(settings.topic_prefix)
    topic = {"results": names.results, "deadletter": names.deadletter, "alerts": names.alerts}[args.topic]
    try:
        tail(settings, topic, args.topic, follow=not args.no_follow, raw=args.json)
    except KeyboardInterrupt:
        pass
    return 0


def _result_documents(path: str) -> Iterator[dict]:
    """The result documents of a results file (`callqa replay --out`, `callqa tail results --json`), each
    checked, one at a time; `-`: standard input."""
    name = "standard input" if path == STANDARD_INPUT else path
    with (open(sys.stdin.fileno(), "rb", closefd=False) if path == STANDARD_INPUT else open(path, "rb")) as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                yield _result_document(line, f"{name} line {number}")


def _run_results(args: argparse.Namespace) -> list[dict]:
    """The results of one run: from a results file (`callqa replay --out`) or the results topic."""
    import asyncio

    # Only the run's documents are kept: a results file or topic holds every run and production call.
    run: list[dict] = []
    others: set[str] = set()

    def keep(document: dict) -> None:
        run_id = document.get("run_id")
        if run_id == args.run_id:
            run.append(document)
        elif run_id:
            others.add(str(run_id))

    if args.results:
        for document in _result_documents(args.results):
            keep(document)
    else:
        from streams.tail import read_topic
        from streams.topics import TopicNames

        settings = _settings(args)
        topic = TopicNames(settings.topic_prefix).results
        asyncio.run(read_topic(settings, topic, 3.0, lambda key, value: keep(_result_document(value, f"a record of {topic}"))))
    if not run:
        raise ValueError(f"no results of run {args.run_id!r}; runs present: {sorted(others) or 'none'}")
    return run


def _result_document(line: bytes, where: str) -> dict:
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
    from scorers.runs import RunSummary, render_all_summary

    summary = RunSummary(run_id=args.run_id, min_agent_turns=args.min_agent_turns)
    for result in _run_results(args):
        summary.add(result)
    if args.json:
        print(json.dumps(summary.summary().to_dict(), indent=2))
    else:
        print(render_all_summary(summary.summary()))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from scorers.runs import export_run
    from streams.export import write_export

    written = write_export(export_run(_run_results(args), min_agent_turns=args.min_agent_turns), args.dir)
    print(f"wrote {len(written)} files under {args.dir}", file=sys.stderr)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """What re-scoring changed: the workers' results against a replay's, verdict by verdict."""
    from scorers.result_changes import compare_results
    from streams.render import result_changes_text

    if args.before == args.after == STANDARD_INPUT:
        raise ValueError("only one of BEFORE and AFTER can be - (standard input)")
    if args.calls < 0:
        raise ValueError(f"--calls must be 0 or more, got {args.calls}")
    report = compare_results(_result_documents(args.before), _result_documents(args.after))
    document = report.to_dict()
    print(json.dumps(document, indent=2) if args.json else result_changes_text(document, args.calls))
    if args.fail_on_regression and report.regressions:
        print(f"callqa: {report.regressions} verdicts passed before and fail now", file=sys.stderr)
        return 1
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    """Validate a file of cohorts or alert rules and publish each to its compacted topic."""
    import asyncio

    from models.alert_rules import encode_rule, load_rules
    from models.cohorts import encode_cohort
    from scorers.registry import qa_metric_names
    from streams.kafka_clients import ensure_topics, producer
    from streams.topics import TopicNames
    from streams.wiring import cohort_book, load_cohorts

    settings = _settings(args)
    names = TopicNames(settings.topic_prefix)
    if args.kind == "cohorts":
        book = cohort_book(settings)
        messages = [(d.cohort_id, encode_cohort(d)) for d in load_cohorts(args.file, book)]
        topic = names.cohorts
    else:
        messages = [(rule.name, encode_rule(rule)) for rule in load_rules(args.file, qa_metric_names())]
        topic = names.alert_rules

    async def publish() -> None:
        await ensure_topics(settings, names.only(settings.partitions, topic))
        kafka = producer(settings)
        await kafka.start()
        try:
            for key, value in messages:
                await kafka.send_and_wait(topic, value, key=key.encode())
        finally:
            await kafka.stop()

    asyncio.run(publish())
    print(f"published {len(messages)} {args.kind} to {topic}: {', '.join(k for k, _ in messages)}", file=sys.stderr)
    return 0


def cmd_watermark(args: argparse.Namespace) -> int:
    """Reset a partition's time (streams/send/watermark_reset.py)."""
    import asyncio

    from streams.send.watermark_reset import publish_reset

    try:
        event = asyncio.run(publish_reset(_settings(args), args.partition, args.to_ms))
    except ValueError as exc:
        print(f"callqa watermark reset: {exc}", file=sys.stderr)
        return 2
    print(f"published a watermark reset of partition {args.partition} to event time {event.ts_ms}", file=sys.stderr)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from streams.demo import run_demo

    partitions = 4 if args.partitions is None else args.partitions
    if args.log is None:
        return run_demo(None, partitions=partitions)
    with _log_as_file(args.log) as log:  # (read twice: by the replay, then by the sender)
        return run_demo(log, partitions=partitions)


def cmd_bench(args: argparse.Namespace) -> int:
    from streams.bench.runner import run_bench

    report = run_bench(args.out, quick=args.quick)
    print(f"bench report ({report['duration_s']:.0f} s) -> {args.out}", file=sys.stderr)
    return 0


# -------------------------------------------------------------------------------------- parser


def port_number(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 1 <= port <= 65_535:
        raise argparse.ArgumentTypeError(f"a port is 1 to 65535, got {port}")
    return port


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="callqa", description="Streaming quality scorer for voice-agent calls.")
    sub = parser.add_subparsers(dest="command", required=True)

    def kafka_options(p: argparse.ArgumentParser, broker: bool = True, partitions: bool = True) -> None:
        if broker:  # (`up` runs its own)
            p.add_argument("--broker", help="broker URL (kafka://host:9092, or tansu://host:port for the embedded one)")
        if partitions:  # (`record` reads the topic's own)
            p.add_argument("--partitions", type=int, help="partitions of the events topic (default 4)")
        p.add_argument("--topic-prefix", help="topic name prefix (default callqa)")

    p = sub.add_parser("broker", help="start the embedded broker and print its address")
    p.add_argument("--port", type=port_number, default=9092)
    p.set_defaults(func=cmd_broker)

    web_port_help = "the HTTP API's port (default: CALLQA_WEB_PORT, else 6066)"
    p = sub.add_parser("worker", help="run a scoring worker")
    kafka_options(p)
    p.add_argument("--web-port", type=port_number, help=web_port_help)
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("up", help="embedded broker + worker in one command (Ctrl-C stops both)")
    kafka_options(p, broker=False)
    p.add_argument("--port", type=port_number, default=9092, help="the embedded broker's port (default 9092)")
    p.add_argument("--web-port", type=port_number, help=web_port_help)
    p.set_defaults(func=cmd_up)

    p = sub.add_parser("send", help="publish a .jsonl or .msgpack event log, batching per partition in its order")
    kafka_options(p)
    p.add_argument("log", help="a JSON Lines or MessagePack log (MessagePack when named *.msgpack or when it "
                   "starts with a MessagePack map); - reads standard input")
    p.add_argument("--batch-size", type=int, default=50, help="events a message holds at most (the next events of one partition, in the log's order; default 50)")
    p.add_argument("--keep-open", action="store_true", help="do not send the end-of-input watermark")
    p.set_defaults(func=cmd_send)

    p = sub.add_parser("replay", help="score a log in-process (no broker), results as JSON Lines")
    p.add_argument("log", help="a JSON Lines or MessagePack log (MessagePack when named *.msgpack or when it "
                   "starts with a MessagePack map); - reads standard input")
    p.add_argument("--out", required=True, help="results as JSON Lines; - writes standard output")
    p.add_argument("--deadletter", help="write rejected records here as JSON Lines")
    p.add_argument("--partitions", type=int, help="the events topic's partition count, to reproduce live sweeps "
                   "(default 4; `callqa record` names a recorded topic's)")
    p.add_argument("--cohorts", help="cohort definitions (JSON or TOML) to score the calls against")
    p.add_argument("--rules", help="alert rules (TOML or JSON) to evaluate over the results")
    p.add_argument("--alerts-out", help="write the alert events here as JSON Lines (with --rules)")
    p.add_argument("--judge", action="store_true", help="ask the configured LLM judge about calls with no recorded answer (needs --record)")
    p.add_argument("--record", metavar="LOG2", help="write the log plus its sweep and judge.result events here, then score that")
    p.add_argument("--retry-judge-errors", action="store_true",
                   help="with --judge: ask again about the calls whose recorded answer is an error, "
                        "and write the new answer in its place")
    p.add_argument("--jobs", type=int, help="processes sharing the partitions, same output as one "
                   "(default: one per CPU, at most one per partition; 1: in this process)")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("record", help="write the events topic as a log that replay scores as the workers did")
    kafka_options(p, partitions=False)
    p.add_argument("log", help="the log to write: MessagePack when named *.msgpack, else JSON Lines; - writes "
                               "standard output")
    p.set_defaults(func=cmd_record)

    p = sub.add_parser("tail", help="print results, dead letters or alerts readably")
    kafka_options(p)
    p.add_argument("topic", choices=["results", "deadletter", "alerts"])
    p.add_argument("--no-follow", action="store_true", help="stop when no record came for 3 s")
    p.add_argument("--json", action="store_true", help="print the raw JSON documents")
    p.set_defaults(func=cmd_tail)

    for name, helptext in (("summary", "print a run's all_summary (from the results topic or a results file)"),
                           ("export", "write a run in the evaluation harness's layout (metrics.json, all_summary.txt)")):
        p = sub.add_parser(name, help=helptext)
        kafka_options(p)
        p.add_argument("run_id")
        if name == "export":
            p.add_argument("dir")
        else:
            p.add_argument("--json", action="store_true", help="the summary as JSON")
        p.add_argument("--results", help="a results file (JSON Lines) instead of the results topic")
        p.add_argument("--min-agent-turns", type=_non_negative_int, default=DEFAULT_MIN_AGENT_TURNS, metavar="N",
                       help="the floor of agent turns the stall warning states for a stalled scenario whose "
                            "result does not give its own (the evaluation runner's --min-agent-turns; default "
                            f"{DEFAULT_MIN_AGENT_TURNS}); a scenario's own min_agent_turns decides whether it stalled")
        p.set_defaults(func=cmd_summary if name == "summary" else cmd_export)

    p = sub.add_parser("compare", help="what re-scoring changed: two results files compared call by call, "
                                       "verdict by verdict")
    p.add_argument("before", help="results as the workers published them (`callqa tail results --json --no-follow "
                                  "> BEFORE`) or an earlier replay's; - reads standard input")
    p.add_argument("after", help="results of the same calls scored again (`callqa replay LOG --out AFTER`)")
    p.add_argument("--json", action="store_true", help="the comparison as JSON, every changed call in it")
    p.add_argument("--calls", type=int, default=20, metavar="N", help="changed calls listed (default 20)")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 when a verdict that passed before fails now")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("publish", help="validate cohorts or alert rules from a file and publish them to their topic")
    kafka_options(p)
    p.add_argument("kind", choices=["cohorts", "rules"])
    p.add_argument("file", help="JSON or TOML")
    p.set_defaults(func=cmd_publish)

    p = sub.add_parser("watermark", help="reset a partition's time when it was moved too far ahead")
    kafka_options(p)
    p.add_argument("action", choices=["reset"])
    p.add_argument("--partition", type=int, required=True, help="the events topic's partition")
    p.add_argument("--to-ms", type=int, help="the event time (Unix ms) to set it to; default: this machine's clock")
    p.set_defaults(func=cmd_watermark)

    p = sub.add_parser("demo", help="broker + worker + the bundled sample calls → scored table")
    p.add_argument("--log", help="another log instead of the bundled sample")
    p.add_argument("--partitions", type=int)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("bench", help="callqa and its Python peers side by side on an embedded broker → JSON report")
    p.add_argument("--out", required=True)
    p.add_argument("--quick", action="store_true", help="small counts, for a smoke run (the figures mean nothing)")
    p.set_defaults(func=cmd_bench)
    return parser


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def _broker_hint(exc: Exception) -> str:
    """What to do about a broker that could not be reached at all."""
    from aiokafka.errors import KafkaConnectionError

    if not isinstance(exc, KafkaConnectionError):
        return ""
    return ("; is the broker running there? `callqa broker` (or `callqa up`) starts the embedded one, and "
            "--broker or CALLQA_BROKER names another")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.func not in (cmd_worker, cmd_up):  # (the worker's own shutdown handles its signals)
        # SIGTERM, and a closed terminal's SIGHUP (whose default would end it at once, its outputs and
        # children left), stop a command as Ctrl-C does.
        for signum in STOP_SIGNALS[1:]:
            signal.signal(signum, _terminate)
    try:
        return args.func(args) or 0
    except KeyboardInterrupt as exc:
        # Ctrl-C: what a command writes is complete or not there at all (streams/output_files.py).
        terminated = isinstance(exc, Terminated)
        print(f"callqa: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        return 143 if terminated else 130
    except BrokenPipeError:
        # The reader of the output went away (`callqa summary … | head`): nothing is wrong and nothing
        # more can be said. Python would report the failing flush at exit, so stdout goes nowhere now.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ValueError, OSError, BrokerUnavailable) as exc:  # configuration, input and file errors: one clear line, no traceback
        print(f"callqa: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        from aiokafka.errors import KafkaError

        if isinstance(exc, KafkaError):  # an unreachable or failing broker
            print(f"callqa: Kafka: {exc}{_broker_hint(exc)}", file=sys.stderr)
            return 3
        raise


if __name__ == "__main__":
    sys.exit(main())
