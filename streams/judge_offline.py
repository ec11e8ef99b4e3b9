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
import sys
from dataclasses import dataclass, field
from typing import BinaryIO, Callable, Iterable

import msgspec

from models.events import Event, JudgeResult
from models.results import CallResult
from models.wire import JSONL_LOG, MSGPACK_LOG, decode_message, encode_event, is_cut_short, log_format, read_log
from scorers.engine import CallEngine
from scorers.inactivity import INACTIVITY_ID_SUFFIX, is_inactivity_end
from scorers.judge.requests import JudgeRequests, build_requests
from scorers.judge.schemas import QA_ERROR_KEY
from streams.config import Settings
from streams.output_files import AtomicOutput
from streams.replay import replay

# Where a judge answer goes in LOG2: (N, -1) right after record N of LOG, (N, K) right after the K-th
# sweep event decided there. By place, not by event_id: a call_id taken up again after its call was
# forgotten is swept again under the same event_id, and each answer must follow its own call's end.
Anchor = tuple[int, int]
AFTER_THE_RECORD = -1

NEEDS_KEY = "--judge needs OPENAI_API_KEY (and OPENAI_BASE_URL for a server other than OpenAI's)"
NEEDS_RECORD = "--judge needs --record LOG2: the judge's answers must be kept to reproduce the results"
RETRY_NEEDS_JUDGE = "--retry-judge-errors needs --judge: the calls whose recorded answer is an error are asked again"
SAME_FORMAT = ("--record must have the format of the log it records: name it *.msgpack for a MessagePack log, "
               "anything else for JSON Lines")

_encode_json = msgspec.json.Encoder().encode


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
        self.anchor = (self.position, len(decided) - 1)

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


def output_format(path: str) -> str:
    """The format LOG2 is written in, by its name (it does not exist yet to be read)."""
    return MSGPACK_LOG if path.lower().endswith(".msgpack") else JSONL_LOG


@dataclass
class RecordProgress:
    """What `record_log` tells as it goes (each None: not told). The first pass reads every record of
    LOG, and judging thousands of calls takes minutes: the caller shows both."""

    on_record: Callable[[int], None] | None = None  # a record of LOG read (its size)
    on_judging: Callable[[int], None] | None = None  # judging starts, for this many calls
    on_judged: Callable[[], None] | None = None  # one more call's answer (or failure) is in


def record_log(log: str, record: str, settings: Settings, engine: CallEngine, judge: bool = False,
               progress: RecordProgress | None = None, retry_errors: bool = False) -> RecordReport:
    """Write `record` (LOG2) from `log`, judging the calls that need it when `judge` is set (and
    those whose recorded answer is an error, with `retry_errors`). `engine` is a fresh engine built
    like the one that will replay LOG2 (same cohorts and clocks)."""
    if judge and not settings.judge_enabled:
        raise ValueError(NEEDS_KEY)
    if retry_errors and not judge:
        raise ValueError(RETRY_NEEDS_JUDGE)
    if log_format(log) != output_format(record):
        raise ValueError(SAME_FORMAT)
    # Opened now: a path that cannot be written must fail before any judge is paid.
    with AtomicOutput(record) as output:
        return _record(_Source(log, retry_errors), output, settings, engine, judge, progress or RecordProgress())


@dataclass
class _Source:
    """LOG's records as both passes read them: all of them, or, to retry recorded errors, all but the
    records that are one `judge.result` recording a failure. The same records in the same order in
    both passes, so that an anchor's record number means one record."""

    log: str
    retry_errors: bool = False
    left_out: int = 0

    def records(self) -> Iterable[bytes]:
        self.left_out = 0
        for raw in read_log(self.log):
            if self.retry_errors and _recorded_failure(raw):
                self.left_out += 1
                continue
            yield raw


def _recorded_failure(raw: bytes) -> bool:
    """Whether a record is a single `judge.result` that recorded a failure of either request."""
    if b"judge.result" not in raw:  # (nearly every record: the tag is in its bytes in both formats)
        return False
    decoded = decode_message(raw, max(len(raw), 1))
    if decoded.is_batch or decoded.rejected or len(decoded.events) != 1:
        return False  # (an error inside a batch stays: the batch's other events cannot be left out)
    event = decoded.events[0]
    return type(event) is JudgeResult and (
        event.data.error is not None or (event.data.qa or {}).get(QA_ERROR_KEY) is not None)


def _record(source: _Source, output: AtomicOutput, settings: Settings, engine: CallEngine, judge: bool,
            progress: RecordProgress) -> RecordReport:
    first = _Pass(engine, judge, settings.judge_response_format)
    on_record = progress.on_record

    def counted(size: int) -> None:
        first.on_record(size)
        if on_record is not None:
            on_record(size)

    replayed = replay(source.records(), engine, settings.partitions, first.on_result,
                      on_recorded=first.on_recorded, on_record=counted, max_message_bytes=settings.max_message_bytes)
    report = RecordReport(records=replayed.records, swept=replayed.swept, errors_retried=source.left_out)
    to_judge = [(entry.anchor, entry.requests) for entry in first.pending if not entry.answered]
    report.already_judged = first.already_judged

    answers: dict[Anchor, list[Event]] = {}
    if to_judge:
        from streams.judge_client import judge_all

        if progress.on_judging is not None:
            progress.on_judging(len(to_judge))
        answered: dict[int, Event] = {}
        try:
            asyncio.run(judge_all(settings, [requests for _, requests in to_judge], progress.on_judged, answered))
        except KeyboardInterrupt:
            report.interrupted = len(to_judge) - len(answered)
        for index, event in sorted(answered.items()):
            anchor = to_judge[index][0]
            answers.setdefault(anchor, []).append(event)
            report.judged += 1
            failed = event.data.error is not None or (event.data.qa or {}).get("error") is not None
            report.judge_errors += failed
    report.swept = _write(source, output, replayed.records, first.sweeps, answers)
    return report


def _write(source: _Source, output: AtomicOutput, records: int, sweeps: dict[int, list[Event]],
           answers: dict[Anchor, list[Event]]) -> int:
    """LOG's records in order, each followed by what was decided right after it; then the sweep of
    the end of input (position `records`). Returns the sweeps written."""
    binary = output_format(output.path) == MSGPACK_LOG

    def emit(out: BinaryIO, events: Iterable[Event]) -> None:
        for event in events:
            out.write(encode_event(event) if binary else _encode_json(event) + b"\n")

    logged = _sweeps_in(source.log)

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
    for index, raw in enumerate(source.records()):
        if binary and index == records - 1 and is_cut_short(raw):
            # The log's last value, cut short: whatever was written after it would read as its
            # missing bytes. It goes last, after the end of input's sweep: the records that decode
            # and the decisions keep their order, and it is dead-lettered on replay as it was.
            cut_short = raw
        else:
            out.write(raw if binary else raw + b"\n")
        after(out, index)
    after(out, records)
    out.write(cut_short)
    return sum(1 for decided in sweeps.values() for event in decided if _sweep_key(event) not in logged)


def _sweep_key(event: Event) -> tuple[str, int]:
    """A sweep's end by its event_id and its time: a call_id taken up again after its call was
    forgotten is swept under the same event_id again, at another time, and that sweep is LOG's own."""
    return event.event_id, event.ts_ms


def _sweeps_in(log: str) -> set[tuple[str, int]]:
    """The sweeps' ends that `log` records (`_sweep_key`)."""
    found: set[tuple[str, int]] = set()
    marker = INACTIVITY_ID_SUFFIX.encode()
    for raw in read_log(log):
        if marker in raw:  # (a sweep's event_id says so: most records are skipped undecoded)
            found.update(_sweep_key(e) for e in decode_message(raw, max(len(raw), 1)).events if is_inactivity_end(e))
    return found


def summary(report: RecordReport, record: str) -> str:
    retried = f"{report.errors_retried} recorded errors asked again; " if report.errors_retried else ""
    return (f"recorded {report.records} records, {report.swept} sweep events and {report.judged} judge answers "
            f"({report.judge_errors} with errors; {retried}{report.already_judged} calls already judged) -> {record}")


def print_summary(report: RecordReport, record: str) -> None:
    print(summary(report, record), file=sys.stderr)
