"""`callqa replay --jobs N`: one log replayed by N processes, with exactly the outputs of one.

All engine state (calls, the sweep's watermarks, retention) is per partition, so job w owns the
partitions p with p % N == w and feeds its own engine only their events. Every job reads the whole
log itself, so no event travels between processes; it decodes the records of its own calls (and those
whose call cannot be read off cheaply: watermarks, batches of several calls), and of the others reads
only the call (`record_call`, a sixth of a decode; decoding every record took a fifth of a job). Each
job spools its encoded lines behind their place in the sequential order (`OutputKey`); the parent
merges the spools into the output files, and the alert engine sees the results in that same order.
"""

from __future__ import annotations

import heapq
import itertools
import multiprocessing
import os
import pickle
import signal
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from operator import itemgetter
from typing import Any, cast

from models.wire import MAX_MESSAGE_BYTES
from scorers.engine import CallEngine
from streams.files.event_log import read_log
from streams.files.output_files import STOP_SIGNALS
from streams.kafka.embedded_broker import killed_with_parent
from streams.replay.log_replay import PartitionReplay, ReplayOutputs, ReplayReport
from streams.replay.outputs import ReplayFiles
from streams.replay.spool import RESULT, SpoolWriter, read_spool
from streams.tuning import tune_gc

# How often the parent looks at the jobs' progress while it waits for their reports, and how often a
# job (or a replay in one process) tells how far it has read (every so many records: a progress bar
# on a terminal, updated for each record, cost some 2-3 % of a replay in one process).
PROGRESS_INTERVAL_S = 0.1
PROGRESS_EVERY_RECORDS = 256


class ReplayJobError(RuntimeError):
    """A replay job ended without a report (killed, or its error could not be passed on)."""


def default_jobs(partitions: int) -> int:
    """A job per CPU this process may run on, and no more jobs than partitions to share."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cpus, partitions))


def owned_partitions(job: int, jobs: int, partitions: int) -> frozenset[int]:
    return frozenset(p for p in range(partitions) if p % jobs == job)


@dataclass(frozen=True)
class ReplayJob:
    index: int
    log: str
    partitions: int
    owned: frozenset[int]
    new_engine: Callable[[], CallEngine]
    spool: str
    dead_letters: bool
    max_message_bytes: int
    max_result_bytes: int | None


@dataclass(frozen=True)
class JobFailure:
    """What a failed job sends its parent: its exception (when it survives pickling) and traceback."""

    error: BaseException
    traceback: str

    @classmethod
    def of(cls, exc: BaseException) -> JobFailure:
        try:
            error = pickle.loads(pickle.dumps(exc))
        except Exception:
            error = ReplayJobError(f"{type(exc).__name__}: {exc}")
        return cls(error, traceback.format_exc())


def run_job(job: ReplayJob, records_read: Any, report_to: Connection) -> None:
    """A child's whole life: replay its partitions into its spool, then send its report (or its failure)."""
    # A job is stopped by its parent (SIGTERM) only when the replay is over for it: it goes quietly.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)  # (the parent's handler raises where the parent is)
    killed_with_parent()  # (a replay killed outright leaves no job running on, writing a spool nobody reads)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_WHILE_FORKING)  # (held by the parent: see `_start`)
    try:
        engine = job.new_engine()
        tune_gc()

        def publish(records: int) -> None:
            records_read[job.index] = records

        with SpoolWriter(job.spool) as spool:
            outputs = ReplayOutputs(
                spool.result, spool.dead_letter if job.dead_letters else None, on_record=every_so_many_records(publish)
            )
            report = PartitionReplay(
                engine,
                job.partitions,
                outputs,
                owned=job.owned,
                report_rejections=job.index == 0,
                max_message_bytes=job.max_message_bytes,
                max_result_bytes=job.max_result_bytes,
            ).run(read_log(job.log))
        report_to.send(report)
    except BaseException as exc:
        report_to.send(JobFailure.of(exc))
    finally:
        report_to.close()


def replay_log(
    log: str,
    partitions: int,
    jobs: int,
    new_engine: Callable[[], CallEngine],
    files: ReplayFiles,
    on_progress: Callable[[int], None] | None = None,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    max_result_bytes: int | None = None,
) -> ReplayReport:
    """Replay `log` into `files`: in this process when `jobs` is 1, else in `jobs` processes; the same
    bytes either way. `on_progress` gets the number of records read so far, now and then; records
    larger than `max_message_bytes` are refused (the worker's setting of the same name), and results
    larger than `max_result_bytes` dead-lettered (None: no limit)."""
    if jobs > 1:
        return replay_parallel(
            log, partitions, jobs, new_engine, files, on_progress, max_message_bytes, max_result_bytes
        )
    engine = new_engine()
    tune_gc()
    on_record = None if on_progress is None else every_so_many_records(on_progress)
    outputs = ReplayOutputs(
        lambda key, result, line: files.write_result(line),
        lambda key, rejected, index: files.dead_letter(rejected, index),
        on_record=on_record,
    )
    report = PartitionReplay(
        engine, partitions, outputs, max_message_bytes=max_message_bytes, max_result_bytes=max_result_bytes
    ).run(read_log(log))
    if on_progress is not None:
        on_progress(report.records)
    return report


def every_so_many_records(on_progress: Callable[[int], None]) -> Callable[[int], None]:
    """A per-record callback that counts the records read and passes the count to `on_progress` every
    PROGRESS_EVERY_RECORDS of them (a call per record would cost more than it tells)."""
    read = itertools.count(1)

    def on_record(size: int) -> None:
        records = next(read)
        if records % PROGRESS_EVERY_RECORDS == 0:
            on_progress(records)

    return on_record


def replay_parallel(
    log: str,
    partitions: int,
    jobs: int,
    new_engine: Callable[[], CallEngine],
    files: ReplayFiles,
    on_progress: Callable[[int], None] | None = None,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    max_result_bytes: int | None = None,
) -> ReplayReport:
    """Replay `log` in `jobs` forked processes, each with an engine from `new_engine`, into `files`.

    `on_progress` gets the number of records every job has read, now and then. The first job to fail
    stops the others, and its exception is raised here.
    """
    started = time.perf_counter()
    context = multiprocessing.get_context("fork")
    records_read = context.RawArray("q", jobs)
    with tempfile.TemporaryDirectory(prefix="callqa-replay-") as spool_dir:
        plan = [
            ReplayJob(
                index,
                log,
                partitions,
                owned_partitions(index, jobs, partitions),
                new_engine,
                os.path.join(spool_dir, f"job-{index}.spool"),
                files.wants_dead_letters,
                max_message_bytes,
                max_result_bytes,
            )
            for index in range(jobs)
        ]
        processes: list[multiprocessing.process.BaseProcess] = []
        reports_from: dict[Any, ReplayJob] = {}
        process: multiprocessing.process.BaseProcess
        try:
            for job in plan:
                receive, send = context.Pipe(duplex=False)
                process = context.Process(
                    target=run_job, args=(job, records_read, send), name=f"callqa-replay-{job.index}"
                )
                _start(process)
                # Only the child holds the sending end now: its exit, however it comes, reads as EOF here.
                send.close()
                processes.append(process)
                reports_from[receive] = job
            reports = _collect(dict(reports_from), processes, records_read, on_progress)
        finally:
            for process in processes:
                if process.is_alive():
                    process.terminate()
                process.join()
            for receive in reports_from:
                receive.close()
        _merge([job.spool for job in plan], files)
    return _combined(reports, time.perf_counter() - started)


# Ctrl-C and SIGTERM raise where the parent is (streams/cli/main.py). Arriving during a fork, their handler
# ran inside a hook the fork calls (logging's), which ignores exceptions: the interruption was lost and
# the replay went on to its end. Held while a job is forked, they arrive just after, in plain code.
HELD_WHILE_FORKING = frozenset(STOP_SIGNALS)


def _start(process: multiprocessing.process.BaseProcess) -> None:
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_WHILE_FORKING)
    try:
        process.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _collect(
    reports_from: dict[Any, ReplayJob],
    processes: list[multiprocessing.process.BaseProcess],
    records_read: Any,
    on_progress: Callable[[int], None] | None,
) -> list[ReplayReport]:
    reports: dict[int, ReplayReport] = {}
    while reports_from:
        for connection in wait(list(reports_from), timeout=PROGRESS_INTERVAL_S):
            job = reports_from.pop(connection)
            try:
                message = cast("Connection[Any, ReplayReport | JobFailure]", connection).recv()
            except EOFError:
                process = processes[job.index]
                process.join()
                raise ReplayJobError(
                    f"replay job {job.index} exited (code {process.exitcode}) without a report"
                ) from None
            if isinstance(message, JobFailure):
                message.error.add_note(f"in replay job {job.index}:\n{message.traceback}")
                raise message.error
            reports[job.index] = message
        if on_progress is not None:
            on_progress(min(records_read))
    return [reports[index] for index in sorted(reports)]


def _merge(spools: list[str], files: ReplayFiles) -> None:
    # Within a spool the keys ascend, and a key's outputs all come from one job: a merge restores
    # the sequential order exactly.
    for _, kind, line in heapq.merge(*(read_spool(path) for path in spools), key=itemgetter(0)):
        if kind == RESULT:
            files.write_result(line)
        else:
            files.write_dead_letter(line)


def _combined(reports: list[ReplayReport], seconds: float) -> ReplayReport:
    """The jobs' reports as one: each job read every record, and counted only its own events and the
    rejections it reported."""
    return ReplayReport(
        records=reports[0].records,
        events=sum(r.events for r in reports),
        applied=sum(r.applied for r in reports),
        duplicates=sum(r.duplicates for r in reports),
        rejected=sum(r.rejected for r in reports),
        results=sum(r.results for r in reports),
        swept=sum(r.swept for r in reports),
        calls=sum(r.calls for r in reports),
        watermarks=sum(r.watermarks for r in reports),
        partition_beyond=max((r.partition_beyond for r in reports if r.partition_beyond is not None), default=None),
        seconds=seconds,
    )
