"""A result that cannot be assembled (a bug past the metrics, which contain their own failures) stops
neither the worker nor replay: the event stays applied, its dead letter says what failed, and every
other call is scored as before."""

from __future__ import annotations

from models.wire import encode_batch
from scorers.cohorts import CohortBook
from scorers.engine import CallEngine
from streams.replay.log_replay import PartitionReplay, ReplayOutputs
from streams.worker.live_scorer import LiveScorer
from tests.helpers.eventkit import T0, event
from tests.helpers.workerkit import message

BROKEN = "bad"


class CohortsFailingOnOneCall(CohortBook):
    """Cohort verdicts that raise for the call named BROKEN, as a bug in them would."""

    def verdicts(self, call, metrics, evaluation):
        if call.call_id == BROKEN:
            raise RuntimeError("cohort rule blew up")
        return super().verdicts(call, metrics, evaluation)


def test_the_engine_keeps_the_event_and_gives_the_reason_instead_of_raising():
    engine = CallEngine(cohorts=CohortsFailingOnOneCall())
    for call_id in (BROKEN, "good"):
        engine.process(event("call.started", {"agent_id": "a1"}, call_id=call_id, ts_ms=T0))
    processed = engine.process(
        event("call.ended", {"stop_reason": "[EXIT]"}, call_id=BROKEN, ts_ms=T0 + 1000, event_id="end-bad")
    )
    assert processed.status == "applied" and processed.result is None
    assert "'end-bad'" in processed.reason and "version 1" in processed.reason
    assert "RuntimeError: cohort rule blew up" in processed.reason
    assert engine.calls[BROKEN].has_ended and engine.latest_result(engine.calls[BROKEN]) is None
    good = engine.process(event("call.ended", {"stop_reason": "[EXIT]"}, call_id="good", ts_ms=T0 + 2000))
    assert good.result is not None and good.reason is None
    assert (engine.counters.unscored, engine.counters.results) == (1, 1)


def test_the_worker_journals_the_event_and_dead_letters_it_with_its_place_in_the_batch():
    live = LiveScorer(CallEngine(cohorts=CohortsFailingOnOneCall()))
    for offset, call_id in enumerate((BROKEN, "good")):
        live.handle(
            message("call.started", {"agent_id": "a1"}, f"s-{call_id}", T0, call_id), "callqa.events", 0, offset
        )
    alone = live.handle(
        message("turn", {"role": "user", "text": "hi"}, "t-bad", T0 + 500, BROKEN), "callqa.events", 0, 2
    )
    assert not alone.dead_letters and BROKEN in alone.journal
    batch = encode_batch(
        [
            event("call.ended", {"stop_reason": "[EXIT]"}, call_id="good", ts_ms=T0 + 900, event_id="end-good"),
            event("call.ended", {"stop_reason": "[EXIT]"}, call_id=BROKEN, ts_ms=T0 + 1000, event_id="end-bad"),
        ],
        None,
    )
    out = live.handle(batch, "callqa.events", 0, 3)
    assert [r.call_id for r in out.results] == ["good"]
    [letter] = out.dead_letters
    assert (letter.event_id, letter.call_id, letter.batch_index, letter.offset) == ("end-bad", BROKEN, 1, 3)
    assert "could not be assembled" in letter.reason
    assert BROKEN in out.journal  # applied: a restore ends the call as this worker did

    one_call = LiveScorer(CallEngine(cohorts=CohortsFailingOnOneCall()))
    one_call.handle(message("call.started", {"agent_id": "a1"}, "s", T0, BROKEN), "callqa.events", 1, 0)
    out = one_call.handle(
        message("call.ended", {"stop_reason": "[EXIT]"}, "end", T0 + 1000, BROKEN), "callqa.events", 1, 1
    )
    assert not out.results and [d.event_id for d in out.dead_letters] == ["end"] and BROKEN in out.journal


def test_replay_writes_the_dead_letter_and_goes_on():
    log = [message("call.started", {"agent_id": "a1"}, f"s-{c}", T0, c) for c in (BROKEN, "good")]
    log += [message("call.ended", {"stop_reason": "[EXIT]"}, f"end-{c}", T0 + 1000, c) for c in (BROKEN, "good")]
    results, letters = [], []
    outputs = ReplayOutputs(
        lambda key, result, line: results.append(result.call_id),
        lambda key, rejected, index: letters.append((index, rejected.event_id, rejected.reason)),
    )
    report = PartitionReplay(CallEngine(cohorts=CohortsFailingOnOneCall()), 1, outputs).run(log)
    assert results == ["good"]
    [(index, event_id, reason)] = letters
    assert (index, event_id) == (2, "end-bad") and "cohort rule blew up" in reason
    assert report.rejected == 1 and report.results == 1
