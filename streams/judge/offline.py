"""`callqa replay LOG --judge --record LOG2`: judge a recorded log's calls offline, once.

1. Replay LOG (no output) and note, for every call that ends without a recorded judge answer, its
   judge requests — built from the call's state when its first result is published, exactly as the
   live worker builds them — and where that was decided: after which record of LOG, or after which
   event of the inactivity sweep.
2. Ask the configured judge for all of them (bounded concurrency, timeout, retries).
3. Write LOG2: every record of LOG unchanged, each sweep event right after the record that caused it,
   each `judge.result` right after the record or sweep event where its call ended. `callqa replay
   LOG2` then needs neither the judge nor the network, and the results of the judged run are those
   of LOG2 — the caller replays LOG2 to produce them — so the two are the same byte for byte.

Without `--judge`, LOG2 is LOG plus its sweep events. A call with a `judge.result` already in LOG
(an answer or an error) is not judged again; with `--retry-judge-errors`, a recorded error is left
out of LOG2 and its call asked again, its answer written where the error stood (right after the
call's end). LOG2 has LOG's format (.jsonl or .msgpack). Every judged
call's requests are held in memory until the judge has answered them all.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from models.events import Event, JudgeResult
from models.results import CallResult
from models.wire import MSGPACK_LOG, decode_message, encode_record
from scorers.engine import CallEngine
from scorers.inactivity import INACTIVITY_ID_SUFFIX, is_inactivity_end
from scorers.judge.requests import JudgeRequests, build_requests
from scorers.judge.schemas import QA_ERROR_KEY
from streams.config import Settings
from streams.files.event_log import (
    is_cut_short,
    log_format,
    log_format_by_name,
    read_log,
)
from streams.files.output_files import STOP_SIGNALS, AtomicOutput, Terminated
from streams.replay.log_replay import replay

# Where a judge answer goes in LOG2: (N, -1) right after record N of LOG, (N, K) right after the K-th
# sweep event decided there. By place, not by event_id: a call_id taken up again after its call was
# forgotten is swept again under the same event_id, and each answer must follow its own call's end.
Anchor = tuple[int, int]
AFTER_THE_RECORD = -1

NEEDS_KEY = "--judge needs OPENAI_API_KEY (and OPENAI_BASE_URL for a server other than OpenAI's)"
NEEDS_RECORD = "--judge needs --record LOG2: the judge's answers must be kept to reproduce the results"
RETRY_NEEDS_JUDGE = "--retry-judge-errors needs --judge: the calls whose recorded answer is an error are asked again"
SAME_FORMAT = (
    "--record must have the format of the log it records: name it *.msgpack for a MessagePack log, "
    "anything else for JSON Lines"
)


@dataclass
class RecordReport:
    records: int = 0
    swept: int = 0
    judged: int = 0
    judge_errors: int = 0
    already_judged: int = 0
    # Calls left unjudged because the judging was interrupted (Ctrl-C): LOG2 holds the answers that
    # came, and recording LOG2 again with the judge asks only for these.
    interrupted: int = 0
    # Recorded errors left out to be asked again (`retry_errors`).
    errors_retried: int = 0
    # The signal that interrupted the judging (SIGINT, SIGTERM), when one did.
    stopped_by: int | None = None


@dataclass
class _Pending:
    """An ended call to judge: its requests, where its answer goes, and whether LOG answered it later."""

    anchor: Anchor
    requests: JudgeRequests
    answered: bool = False


@dataclass
class _Pass:
    """What the first replay decides, and where."""

    engine: CallEngine
    judge: bool
    answer_format: str
    # The sweeps' ends LOG records (LOG is itself a recorded log), by `_sweep_key`, at their record's
    # place: decided again on the way, their answers go after that record, not before it.
    logged: dict[tuple[str, int], int] = field(default_factory=dict)
    position: int = 0
    anchor: Anchor = (0, AFTER_THE_RECORD)
    sweeps: dict[int, list[Event]] = field(default_factory=dict)
    # Each ended call to judge, in the order they ended.
    pending: list[_Pending] = field(default_factory=list)
    # By call_id, what concerns the call it names now: its pending entry (None: it has none) and
    # whether it has an answer. A call_id taken up again after its call was forgotten names another
    # call, whose first result starts both afresh: one call's answer is never another's.
    current: dict[str, _Pending | None] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)
    already_judged: int = 0  # calls with an answer in LOG

    def on_recorded(self, event: Event) -> None:
        decided = self.sweeps.setdefault(self.position, [])
        decided.append(event)
        recorded_at = self.logged.get(_sweep_key(event))
        self.anchor = (self.position, len(decided) - 1) if recorded_at is None else (recorded_at, AFTER_THE_RECORD)

    def on_record(self, size: int) -> None:
        self.position += 1
        self.anchor = (self.position, AFTER_THE_RECORD)

    def on_result(self, result: CallResult) -> None:
        call = self.engine.calls.get(result.call_id)
        if call is None:
            return
        call_id = call.call_id
        if result.version == 1:  # the first result of the call the call_id now names
            self.current[call_id] = None
            self.answered.discard(call_id)
        if call.judge is not None:
            if call_id not in self.answered:
                self.answered.add(call_id)
                self.already_judged += 1
            entry = self.current.get(call_id)
            if entry is not None:
                entry.answered = True  # LOG answered it after its first result: not asked again
        elif self.judge and result.version == 1 and result.final:
            requests = build_requests(call, self.engine.cohorts, self.answer_format)
            if requests is not None:
                entry = self.current[call_id] = _Pending(self.anchor, requests)
                self.pending.append(entry)


@dataclass
class RecordProgress:
    """What `record_log` tells as it goes (each None: not told). The first pass reads every record of
    LOG, and judging thousands of calls takes minutes: the caller shows both."""

    on_record: Callable[[int], None] | None = None  # a record of LOG read (its size)
    on_judging: Callable[[int], None] | None = None  # judging starts, for this many calls
    on_judged: Callable[[], None] | None = None  # one more call's answer (or failure) is in


def record_log(
    log: str,
    record: str,
    settings: Settings,
    engine: CallEngine,
    judge: bool = False,
    progress: RecordProgress | None = None,
    retry_errors: bool = False,
) -> RecordReport:
    """Write `record` (LOG2) from `log`, judging the calls that need it when `judge` is set (and
    those whose recorded answer is an error, with `retry_errors`). `engine` is a fresh engine built
    like the one that will replay LOG2 (same cohorts and clocks)."""
    if judge and not settings.judge_enabled:
        raise ValueError(NEEDS_KEY)
    if retry_errors and not judge:
        raise ValueError(RETRY_NEEDS_JUDGE)
    if log_format(log) != log_format_by_name(record):
        raise ValueError(SAME_FORMAT)
    # Opened now: a path that cannot be written must fail before any judge is paid.
    held = _HeldSignals()
    try:
        with AtomicOutput(record) as output:
            return _record(
                _Source(log, retry_errors), output, settings, engine, judge, progress or RecordProgress(), held
            )
    finally:
        held.release()


class _HeldSignals:
    """Ctrl-C, SIGTERM and SIGHUP ignored from an interrupted judging until LOG2 is written and in place: a
    second Ctrl-C then threw away every answer paid for, or left a temporary file of the whole log.
    The handlers in place when the recording began are put back after (the judging, once stopped,
    leaves both ignored: streams/judge/client.py)."""

    def __init__(self) -> None:
        self._found: list[tuple[int, Any]] = []
        self._held = False
        if threading.current_thread() is threading.main_thread():  # (signals reach the main thread only)
            self._found = [(signum, signal.getsignal(signum)) for signum in STOP_SIGNALS]

    def hold(self) -> None:
        for signum, _ in self._found:
            signal.signal(signum, signal.SIG_IGN)
        self._held = True

    def release(self) -> None:
        if self._held:
            for signum, found in self._found:
                signal.signal(signum, found if found is not None else signal.SIG_DFL)
            self._held = False


@dataclass
class _Source:
    """LOG's records as both passes read them: all of them, or, to retry recorded errors, all but the
    records that are one `judge.result` recording a failure. The same records in the same order in
    both passes, so that an anchor's record number means one record."""

    log: str
    retry_errors: bool = False
    # By record number, the call_id of each recorded failure: found by the first pass read to its
    # end, so that the passes after it do not decode every `judge.result` again.
    _failures: dict[int, str] | None = field(default=None, repr=False)

    def records(self) -> Iterable[bytes]:
        for raw, failure_of in self.all_records():
            if failure_of is None:
                yield raw

    def all_records(self) -> Iterable[tuple[bytes, str | None]]:
        """Every record of LOG, each with the call_id of the failure it records when it is left out."""
        if not self.retry_errors:
            for raw in read_log(self.log):
                yield raw, None
            return
        known, found = self._failures, {}
        for index, raw in enumerate(read_log(self.log)):
            failure_of = known.get(index) if known is not None else _recorded_failure(raw)
            if failure_of is not None:
                found[index] = failure_of
            yield raw, failure_of
        self._failures = found


def _recorded_failure(raw: bytes) -> str | None:
    """The call_id of a record that is a single `judge.result` recording a failure of either
    request; None for any other record."""
    if b"judge.result" not in raw:  # (nearly every record: the tag is in its bytes in both formats)
        return None
    decoded = decode_message(raw, max(len(raw), 1))
    if decoded.is_batch or decoded.rejected or len(decoded.events) != 1:
        return None  # (an error inside a batch stays: the batch's other events cannot be left out)
    event = decoded.events[0]
    return event.call_id if type(event) is JudgeResult and _records_a_failure(event) else None


def _records_a_failure(answer: JudgeResult) -> bool:
    """Whether a judge's recorded answer is the failure of either of its requests."""
    return answer.data.error is not None or (answer.data.qa or {}).get(QA_ERROR_KEY) is not None


def _record(
    source: _Source,
    output: AtomicOutput,
    settings: Settings,
    engine: CallEngine,
    judge: bool,
    progress: RecordProgress,
    held: _HeldSignals,
) -> RecordReport:
    logged = _sweeps_in(source)
    first = _Pass(engine, judge, settings.judge_response_format, logged)
    on_record = progress.on_record

    def counted(size: int) -> None:
        first.on_record(size)
        if on_record is not None:
            on_record(size)

    replayed = replay(
        source.records(),
        engine,
        settings.partitions,
        first.on_result,
        on_recorded=first.on_recorded,
        on_record=counted,
        max_message_bytes=settings.max_message_bytes,
    )
    report = RecordReport(records=replayed.records, swept=replayed.swept)
    to_judge = [(entry.anchor, entry.requests) for entry in first.pending if not entry.answered]
    report.already_judged = first.already_judged
    # A recorded error is left out only for a call asked again: one of a call that never started, or
    # was forgotten, stays where it was (dead-lettered on replay, as before).
    asked = {requests.call_id for _, requests in to_judge}

    answers: dict[Anchor, list[Event]] = {}
    if to_judge:
        from streams.judge.client import JudgingInterrupted, judge_all

        if progress.on_judging is not None:
            progress.on_judging(len(to_judge))
        answered: dict[int, JudgeResult] = {}
        try:
            asyncio.run(judge_all(settings, [requests for _, requests in to_judge], progress.on_judged, answered))
        except JudgingInterrupted as stop:
            report.stopped_by = stop.signum
        except KeyboardInterrupt as stop:  # (before the judging's own handling was in place)
            report.stopped_by = signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT
        if report.stopped_by is not None:
            report.interrupted = len(to_judge) - len(answered)
            held.hold()
        for index, event in sorted(answered.items()):
            anchor = to_judge[index][0]
            answers.setdefault(anchor, []).append(event)
            report.judged += 1
            report.judge_errors += _records_a_failure(event)
    report.swept, report.errors_retried = _write(source, output, replayed.records, first.sweeps, answers, logged, asked)
    return report


def _write(
    source: _Source,
    output: AtomicOutput,
    records: int,
    sweeps: dict[int, list[Event]],
    answers: dict[Anchor, list[Event]],
    logged: dict[tuple[str, int], int],
    asked: set[str],
) -> tuple[int, int]:
    """LOG's records in order, each followed by what was decided right after it; then the sweep of
    the end of input (position `records`). Returns the sweeps written and the recorded errors left
    out (their calls asked again)."""
    written_as = log_format_by_name(output.path)
    binary = written_as == MSGPACK_LOG

    def emit(out: BinaryIO, events: Iterable[Event]) -> None:
        for event in events:
            out.write(encode_record(event, written_as))

    def copy(out: BinaryIO, raw: bytes) -> None:
        out.write(raw if binary else raw + b"\n")

    def after(out: BinaryIO, position: int) -> None:
        emit(out, answers.get((position, AFTER_THE_RECORD), ()))
        for index, event in enumerate(sweeps.get(position, ())):
            # A sweep LOG already records (LOG is itself a LOG2) is decided again at the same place
            # on replay: written once more, each recording would add a copy.
            if _sweep_key(event) not in logged:
                emit(out, [event])
            emit(out, answers.get((position, index), ()))

    out = output.file
    cut_short = b""
    index, left_out = 0, 0
    for raw, failure_of in source.all_records():
        if failure_of is not None:
            if failure_of in asked:
                left_out += 1  # (its call's new answer goes after its end)
            else:
                copy(out, raw)
            continue
        if binary and index == records - 1 and is_cut_short(raw):
            # The log's last value, cut short: whatever was written after it would read as its
            # missing bytes. It goes last, after the end of input's sweep: the records that decode
            # and the decisions keep their order, and it is dead-lettered on replay as it was.
            cut_short = raw
        else:
            copy(out, raw)
        after(out, index)
        index += 1
    after(out, records)
    out.write(cut_short)
    return sum(1 for decided in sweeps.values() for event in decided if _sweep_key(event) not in logged), left_out


def _sweep_key(event: Event) -> tuple[str, int]:
    """A sweep's end by its event_id and its time: a call_id taken up again after its call was
    forgotten is swept under the same event_id again, at another time, and that sweep is LOG's own."""
    return event.event_id, event.ts_ms


def _sweeps_in(source: _Source) -> dict[tuple[str, int], int]:
    """The sweeps' ends that LOG records (`_sweep_key`), each with its record's place among the
    records the passes read."""
    found: dict[tuple[str, int], int] = {}
    marker = INACTIVITY_ID_SUFFIX.encode()
    for index, raw in enumerate(source.records()):
        if marker in raw:  # (a sweep's event_id says so: most records are skipped undecoded)
            for event in decode_message(raw, max(len(raw), 1)).events:
                if is_inactivity_end(event):
                    found.setdefault(_sweep_key(event), index)
    return found


def summary(report: RecordReport, record: str) -> str:
    retried = f"{report.errors_retried} recorded errors asked again; " if report.errors_retried else ""
    return (
        f"recorded {report.records} records, {report.swept} sweep events and {report.judged} judge answers "
        f"({report.judge_errors} with errors; {retried}{report.already_judged} calls already judged) -> {record}"
    )


def print_summary(report: RecordReport, record: str) -> None:
    print(summary(report, record), file=sys.stderr)
