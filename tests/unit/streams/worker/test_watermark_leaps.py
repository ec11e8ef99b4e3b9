"""One call's clock does not move its partition's time: a leap of the watermark waits to be borne out."""

from __future__ import annotations

import random

import msgspec

from models.alert_rules import AlertRule
from models.wire import encode_event
from scorers.alerting.calls import scored_call
from scorers.alerting.engine import AlertEngine
from scorers.alerting.ordering import EventTimeOrder
from scorers.alerting.rulebook import RuleBook
from scorers.engine import CallEngine
from scorers.inactivity import InactivitySweeper
from scorers.watermarks import LatestTwo, watermark_of_times
from streams.alerts.live import AlertsRuntime
from streams.replay.log_replay import replay
from streams.worker.clock import idle_ticks, implausible_leaps
from streams.worker.live_scorer import LiveScorer
from tests.helpers.alertkit import result as alert_result
from tests.helpers.eventkit import T0
from tests.helpers.workerkit import handle_as_the_worker_does, message

LIMIT = 600_000
YEAR = 365 * 86_400_000
ALERT_RULE = AlertRule(
    name="agent latency",
    scope="agent:*",
    metric="latency",
    window_s=300,
    fire_below=0.5,
    clear_above=0.8,
    min_calls=5,
    for_s=60,
    severity="critical",
)


def test_a_lone_leap_is_held_and_the_same_calls_events_do_not_bear_it_out():
    sweeper = InactivitySweeper(max_leap_ms=LIMIT)
    sweeper.observe(0, T0, "a")
    assert sweeper.watermark(0) == T0  # a partition's first event sets its time: nothing to compare with
    sweeper.observe(0, T0 + LIMIT, "a")  # at the limit: an ordinary step
    sweeper.observe(0, T0 + YEAR, "skewed")
    sweeper.observe(0, T0 + YEAR + 5, "skewed")
    assert sweeper.watermark(0) == T0 + LIMIT and sweeper.ahead(0) == (T0 + YEAR + 5, "skewed")
    sweeper.observe(0, T0 + LIMIT + 9, "a")  # the others go on as before
    assert sweeper.watermark(0) == T0 + LIMIT + 9 and sweeper.ahead(0) == (T0 + YEAR + 5, "skewed")


def test_another_calls_leap_moves_the_time_to_where_both_have_got():
    sweeper = InactivitySweeper(max_leap_ms=LIMIT)
    sweeper.observe(0, T0, "a")
    sweeper.observe(0, T0 + 3_600_000, "b")  # an hour later: after a quiet hour, or a clock an hour fast
    sweeper.observe(0, T0 + 3_600_000 + 200, "c")  # a second call says the hour passed
    assert sweeper.watermark(0) == T0 + 3_600_200 and sweeper.ahead(0) is None
    sweeper.observe(0, T0 + YEAR, "skewed")
    sweeper.observe(0, T0 + 7_200_000, "d")  # beyond the limit too, but far short of the skewed call
    assert sweeper.watermark(0) == T0 + 7_200_000 and sweeper.ahead(0) == (T0 + YEAR, "skewed")


def test_a_held_leap_the_time_comes_within_the_limit_of_moves_it():
    sweeper = InactivitySweeper(max_leap_ms=LIMIT)
    sweeper.observe(0, T0, "a")
    sweeper.observe(0, T0 + 2 * LIMIT, "b")
    sweeper.observe(0, T0 + LIMIT, "a")
    assert sweeper.watermark(0) == T0 + 2 * LIMIT and sweeper.ahead(0) is None


def test_a_watermark_event_is_believed_whatever_the_distance_and_catches_up_with_a_held_leap():
    sweeper = InactivitySweeper(max_leap_ms=LIMIT)
    sweeper.observe(0, T0, "a")
    sweeper.observe(0, T0 + YEAR, "b")
    sweeper.observe(0, T0 + YEAR - 1_000)  # no call: a producer's promise, or the worker's tick
    assert sweeper.watermark(0) == T0 + YEAR and sweeper.ahead(0) is None


def test_no_limit_lets_any_event_move_the_time():
    sweeper = InactivitySweeper(max_leap_ms=0)
    sweeper.observe(0, T0, "a")
    sweeper.observe(0, T0 + YEAR, "b")
    assert sweeper.watermark(0) == T0 + YEAR and sweeper.ahead(0) is None


def _skewed_call_among_others() -> list[bytes]:
    """Two calls talking, one call stamped a year ahead, then a new call and the first ones' ends."""
    return [
        message("call.started", {"agent_id": "a1", "inactivity_timeout_s": 60}, "a1", T0, call_id="A"),
        message("call.started", {"agent_id": "a1", "inactivity_timeout_s": 60}, "b1", T0 + 10, call_id="B"),
        message("call.started", {"agent_id": "a1"}, "s1", T0 + YEAR, call_id="S"),
        message("turn", {"role": "user", "text": "hello"}, "s2", T0 + YEAR + 500, call_id="S"),
        message("turn", {"role": "user", "text": "hi"}, "a2", T0 + 20_000, call_id="A"),
        message("call.started", {"agent_id": "a1"}, "n1", T0 + 30_000, call_id="N"),
        message("call.ended", {"stop_reason": "[EXIT]"}, "a3", T0 + 40_000, call_id="A"),
        message("call.ended", {"stop_reason": "[EXIT]"}, "b2", T0 + 41_000, call_id="B"),
        message("call.ended", {"stop_reason": "[EXIT]"}, "s3", T0 + YEAR + 900, call_id="S"),
    ]


def _live(log: list[bytes], engine: CallEngine) -> tuple[list[tuple[str, int, str]], list[str]]:
    live, results, letters = LiveScorer(engine), [], []
    for offset, raw in enumerate(log):
        out = live.handle(raw, "callqa.events", 0, offset)
        results += [(r.call_id, r.version, r.evaluation["stop_reason"]) for r in out.results]
        letters += [letter.event_id for letter in out.dead_letters]
    return results, letters


def test_a_call_stamped_a_year_ahead_neither_sweeps_the_others_nor_makes_new_calls_too_late():
    results, letters = _live(_skewed_call_among_others(), CallEngine(max_watermark_leap_ms=LIMIT))
    assert letters == []
    assert results == [("A", 1, "[EXIT]"), ("B", 1, "[EXIT]"), ("S", 1, "[EXIT]")]
    # Without the limit the same log swept A and B at once, a year early, and refused the rest.
    results, letters = _live(_skewed_call_among_others(), CallEngine(max_watermark_leap_ms=0))
    assert ("A", 1, "[INACTIVITY_TIMEOUT]") in results and ("B", 1, "[INACTIVITY_TIMEOUT]") in results
    assert {"a2", "n1", "a3", "b2"} <= set(letters)


def test_replay_holds_the_leap_back_exactly_as_the_live_worker_does():
    log = [
        *_skewed_call_among_others(),  # (replay ends every call still open at the end of its log)
        message("watermark", {"end_of_input": True, "partition": 0}, "w", T0 + 50_000, call_id="__watermark__"),
    ]
    live_results, _ = _live(log, CallEngine())
    assert ("N", 1, "[INACTIVITY_TIMEOUT]") in live_results
    replayed = []
    replay(
        log,
        CallEngine(),
        1,
        lambda r: replayed.append((r.call_id, r.version, r.evaluation["stop_reason"])),
        lambda rejected, index: None,
    )
    assert replayed == live_results


def _worker_and_its_restart(log: list[bytes], **engine_options) -> tuple[LiveScorer, LiveScorer, dict[bytes, bytes]]:
    """A worker that handled `log` (its segments written after each message), one restored from its
    journal, and the journal."""
    table: dict[bytes, bytes] = {}
    first = LiveScorer(CallEngine(**engine_options))
    for offset, raw in enumerate(log):
        handle_as_the_worker_does(first, raw, offset, table)
    restarted = LiveScorer(CallEngine(**engine_options))
    restarted.restore_partition(0, table.items())
    return first, restarted, table


def test_a_restarted_worker_still_holds_the_leap_back():
    first, restarted, _ = _worker_and_its_restart(_skewed_call_among_others()[:5])
    for live in (first, restarted):
        assert live.engine.sweeper.watermark(0) == T0 + 20_000
        assert live.engine.sweeper.ahead(0) == (T0 + YEAR + 500, "S")


def test_a_restored_worker_whose_journal_begins_with_the_leaping_calls_keeps_its_time_and_its_calls():
    # Once the calls before it are forgotten, the leaping call's entries come first in the journal:
    # re-folded in step with the partition's time, it was believed (the first event of a time not yet
    # set), and every call after it was refused as too late and lost from the restored worker.
    log = [
        message("call.started", {"agent_id": "a1"}, "a1", T0, call_id="A"),
        message("call.ended", {"stop_reason": "[EXIT]"}, "a2", T0 + 1_000, call_id="A"),
        message("call.started", {"agent_id": "a1"}, "x1", T0 + YEAR, call_id="X"),
        message("call.started", {"agent_id": "a1"}, "b1", T0 + 100_000, call_id="B"),  # A is forgotten
        message("turn", {"role": "user", "text": "hi"}, "b2", T0 + 110_000, call_id="B"),
    ]
    first, restarted, _table = _worker_and_its_restart(log, retention_after_end_ms=0)
    for live in (first, restarted):
        assert sorted(live.engine.calls) == ["B", "X"]
        assert (live.engine.sweeper.watermark(0), live.engine.sweeper.ahead(0)) == (T0 + 110_000, (T0 + YEAR, "X"))
    out = restarted.handle(
        message("call.ended", {"stop_reason": "[EXIT]"}, "b3", T0 + 120_000, call_id="B"), "callqa.events", 0, len(log)
    )
    assert out.dead_letters == [] and [r.call_id for r in out.results] == ["B"]


def test_a_leap_goes_with_its_call_when_the_call_is_forgotten_as_a_restored_worker_would_know_it():
    # A post-call annotation a year fast leaves the ended call X as the leap held; then X is forgotten.
    log = [
        message("call.started", {"agent_id": "a1"}, "a1", T0, call_id="A"),
        message("call.started", {"agent_id": "a1"}, "x1", T0, call_id="X"),
        message("call.ended", {"stop_reason": "[EXIT]"}, "x2", T0 + 1_000, call_id="X"),
        message("call.annotated", {"user_sentiment": "Positive"}, "x3", T0 + YEAR, call_id="X"),
        message("turn", {"role": "user", "text": "hi"}, "a2", T0 + 40_000, call_id="A"),
    ]
    first, restarted, table = _worker_and_its_restart(log, retention_after_end_ms=0)
    later_call = message("call.started", {"agent_id": "a1"}, "b1", T0 + 7_200_000, call_id="B")
    for live in (first, restarted):
        assert sorted(live.engine.calls) == ["A"] and live.engine.sweeper.ahead(0) is None
        # B's leap is its own, not borne out by the forgotten X's: A is not swept.
        out = handle_as_the_worker_does(live, later_call, len(log), dict(table))
        assert out.results == [] and live.engine.sweeper.ahead(0) == (T0 + 7_200_000, "B")


def _quiet_partition_with_a_leap(ts_ms: int) -> LiveScorer:
    """A call, then nothing for a while, then a call whose first event leaps past the limit."""
    live = LiveScorer(CallEngine())
    live.handle(message("call.started", {"agent_id": "a1"}, "a1", T0, call_id="A"), "callqa.events", 0, 0)
    live.handle(message("call.ended", {"stop_reason": "[EXIT]"}, "a2", T0 + 1_000, call_id="A"), "callqa.events", 0, 1)
    live.handle(message("call.started", {"agent_id": "a1"}, "b1", ts_ms, call_id="B"), "callqa.events", 0, 2)
    live.mark_busy(0, now=100.0, watermark_ms=live.engine.sweeper.watermark(0))
    return live


def test_the_workers_tick_bears_out_a_leap_its_own_clock_agrees_with():
    # The worker was down for a day; one call came back: no other call vouches for the day that passed.
    day_later = T0 + 86_400_000
    live = _quiet_partition_with_a_leap(day_later)
    assert live.engine.sweeper.watermark(0) == T0 + 1_000
    (tick,) = idle_ticks(live, now=106.0, idle_s=5, wall_ms=day_later + 6_000)
    assert tick.ts_ms == day_later and implausible_leaps(live, wall_ms=day_later + 6_000) == []
    live.handle(encode_event(tick), "callqa.events", 0, 3)
    assert live.engine.sweeper.watermark(0) == day_later and live.engine.sweeper.ahead(0) is None


def test_the_workers_tick_does_not_bear_out_a_leap_ahead_of_its_own_clock():
    live = _quiet_partition_with_a_leap(T0 + YEAR)
    wall_ms = T0 + 60_000
    assert implausible_leaps(live, wall_ms) == [(0, T0 + YEAR, "B")]
    # Alone, the fast call is no reason to tick: its deadline lies a year ahead, and so would the ticks.
    assert idle_ticks(live, now=106.0, idle_s=5, wall_ms=wall_ms) == []
    live.handle(message("call.started", {"agent_id": "a1"}, "c1", T0 + 2_000, call_id="C"), "callqa.events", 0, 3)
    live.mark_busy(0, now=100.0, watermark_ms=live.engine.sweeper.watermark(0))
    (tick,) = idle_ticks(live, now=106.0, idle_s=5, wall_ms=wall_ms)
    assert tick.ts_ms == T0 + 2_000 + 6_000  # the watermark moved by the time that passed, as on any quiet partition


# ------------------------------------------------------------------------------ alert windows


def test_rebuilding_from_kept_times_holds_back_a_last_lone_leap_only():
    assert watermark_of_times([], LIMIT) == (None, None)
    assert watermark_of_times([(T0, "a")], LIMIT) == (T0, None)
    assert watermark_of_times([(T0 + YEAR, "s"), (T0, "a"), (T0 + 5, "b")], LIMIT) == (T0 + 5, (T0 + YEAR, "s"))
    assert watermark_of_times([(T0, "a"), (T0 + YEAR, "s"), (T0 + YEAR + 5, "t")], LIMIT) == (T0 + YEAR + 5, None)
    assert watermark_of_times([(T0, "a"), (T0 + YEAR, "s")], 0) == (T0 + YEAR, None)


def test_the_latest_two_sources_kept_as_events_pass_are_those_of_all_their_times():
    rng = random.Random(3)
    for _ in range(2_000):
        latest, highest = LatestTwo(), {}
        for _ in range(rng.randint(1, 12)):
            ts_ms, source = rng.randint(0, 20), rng.choice("abcde")
            latest.note(ts_ms, source)
            highest[source] = max(ts_ms, highest.get(source, ts_ms))
        assert latest.times() == sorted((ts_ms, source) for source, ts_ms in highest.items())[-2:]


def _alerts_around_a_skewed_result(max_leap_ms: int) -> tuple[AlertEngine, list[dict]]:
    """Agent a1's calls pass for a minute, one call stamped a year ahead comes, then a1's calls fail."""
    engine = AlertEngine([ALERT_RULE], max_leap_ms)
    stream = [alert_result(f"ok-{s}", "a1", T0 + s * 1000, True) for s in range(0, 60, 10)]
    stream.append(alert_result("skewed", "a2", T0 + YEAR, True))
    stream += [alert_result(f"bad-{s}", "a1", T0 + s * 1000, False) for s in range(60, 300, 10)]
    return engine, [alert for r in stream for alert in engine.observe(r)]


def test_a_result_stamped_a_year_ahead_leaves_the_alert_windows_counting():
    engine, alerts = _alerts_around_a_skewed_result(LIMIT)
    assert [(a["state"], a["scope"]) for a in alerts] == [("pending", "agent:a1"), ("firing", "agent:a1")]
    assert engine.counters.stale == 0 and engine.windows.ahead == (T0 + YEAR, "skewed")
    # Without the limit every window emptied and every later result was too late to count.
    engine, alerts = _alerts_around_a_skewed_result(0)
    assert alerts == [] and engine.counters.stale == 24


def test_restored_alert_windows_hold_the_leap_back_as_before_the_restart():
    engine, _ = _alerts_around_a_skewed_result(LIMIT)
    restored = AlertEngine([ALERT_RULE], LIMIT)
    restored.restore(list(engine.kept_calls()), engine.episodes_document(), engine.state_document())
    assert (restored.windows.watermark, restored.windows.ahead) == (engine.windows.watermark, engine.windows.ahead)


def test_a_result_stamped_a_year_ahead_leaves_the_results_released_in_event_time_order():
    def released(max_leap_ms: int) -> list[str]:
        order, engine = EventTimeOrder(30_000, sources=1, max_leap_ms=max_leap_ms), AlertEngine([])
        arrivals = [
            alert_result("a", "a1", T0, True),
            alert_result("skewed", "a2", T0 + YEAR, True),
            alert_result("c", "a1", T0 + 20_000, True),
            alert_result("b", "a1", T0 + 10_000, True),
            alert_result("d", "a1", T0 + 100_000, True),
        ]
        out = [call.call_id for r in arrivals for call in order.add(engine.read(r), 0)]
        return out + [call.call_id for call in order.release_all()]  # (the quiet input, or the end of the log)

    assert released(LIMIT) == ["a", "b", "c", "d", "skewed"]
    assert released(0) == ["a", "c", "b", "d", "skewed"]  # before: everything after it in the order it came


def test_the_alert_ordering_keeps_its_leaps_across_a_take_over_and_drops_them_once_released():
    def relayed(call_id: str, ts_ms: int) -> bytes:
        return msgspec.json.encode(
            {**scored_call(alert_result(call_id, "a1", ts_ms, True)).to_document(), "source_partition": 0}
        )

    arrivals = [
        relayed("a", T0),
        relayed("s1", T0 + YEAR),
        relayed("s2", T0 + YEAR + 100),
        relayed("c", T0 + 20_000),
        relayed("b", T0 + 10_000),
    ]
    uninterrupted, table = AlertsRuntime(RuleBook.from_file_rules([ALERT_RULE])), {}
    taken_over: AlertsRuntime | None = None
    for n, value in enumerate(arrivals):
        uninterrupted.ensure_ready({})
        uninterrupted.count_in_order({}, value)
        runtime = taken_over = AlertsRuntime(RuleBook.from_file_rules([ALERT_RULE]))  # a new worker each time
        runtime.ensure_ready(table)
        runtime.count_in_order(table, value)
        assert (runtime.order.latest_by_source, runtime.order.ahead_by_source, runtime.order.held) == (
            uninterrupted.order.latest_by_source,
            uninterrupted.order.ahead_by_source,
            uninterrupted.order.held,
        ), n
    assert taken_over is not None and taken_over.order.ahead_by_source == {}  # s2 bore s1 out
    lone = AlertsRuntime(RuleBook.from_file_rules([ALERT_RULE]))
    lone.ensure_ready({})
    lone.count_in_order({}, relayed("a", T0))
    lone.count_in_order({}, relayed("s1", T0 + YEAR))
    assert lone.order.ahead_by_source == {0: (T0 + YEAR, "s1")}
    lone.release_held({})  # the quiet input: s1 is counted, and its leap goes with it
    assert lone.order.ahead_by_source == {} and lone.order.held == []


def test_alert_windows_taken_over_keep_the_time_they_had_whatever_order_their_calls_were_counted_in():
    # The very first result sets the windows' time; results of a lagging producer, counted later,
    # are older by more than the limit. Rebuilt from the kept calls, the time went back 20 minutes.
    minute = 60_000
    hour_rule = msgspec.structs.replace(ALERT_RULE, window_s=3_600)
    engine = AlertEngine([hour_rule], LIMIT)
    for call_id, ts_ms in (("c0", T0), ("c1", T0 - 30 * minute), ("c2", T0 - 20 * minute)):
        engine.count(scored_call(alert_result(call_id, "a1", ts_ms, True)))
    assert (engine.windows.watermark, engine.windows.ahead) == (T0, None) and engine.take_changes().time
    for time in (engine.time_document(), msgspec.json.decode(msgspec.json.encode(engine.time_document()))):
        taken_over = AlertEngine([hour_rule], LIMIT)
        taken_over.restore(engine.kept_calls(), engine.episodes_document(), engine.state_document(), time)
        assert (taken_over.windows.watermark, taken_over.windows.ahead) == (T0, None)
    rebuilt = AlertEngine([hour_rule], LIMIT)  # (a table written before the time was kept)
    rebuilt.restore(engine.kept_calls(), engine.episodes_document(), engine.state_document())
    assert (rebuilt.windows.watermark, rebuilt.windows.ahead) == (T0 - 20 * minute, (T0, "c0"))
    # The worker keeps the time in its alert table, and the worker taking over reads it back.
    table: dict[bytes, bytes] = {}
    first = AlertsRuntime(RuleBook.from_file_rules([hour_rule]))
    first.ensure_ready(table)
    for call_id, ts_ms in (("c0", T0), ("c1", T0 - 30 * minute), ("c2", T0 - 20 * minute)):
        first.engine.count(scored_call(alert_result(call_id, "a1", ts_ms, True)))
    first.persist(table)
    second = AlertsRuntime(RuleBook.from_file_rules([hour_rule]))
    second.ensure_ready(table)
    assert (second.engine.windows.watermark, second.engine.windows.ahead) == (T0, None)


def test_a_result_whose_own_arrival_bears_out_a_leap_past_every_window_is_not_kept_by_either_worker():
    # c1 is as far ahead as the held "fast" result: the windows' time moves to fast's, 500 s past c1,
    # beyond the 30 s window. Kept anyway, only the uninterrupted worker counted it in a longer window
    # added later (a restore drops what lies behind every window).
    second = 1_000

    def rule(window_s: int) -> AlertRule:
        return msgspec.structs.replace(ALERT_RULE, window_s=window_s, min_calls=1, for_s=0)

    engine = AlertEngine([rule(30)], LIMIT)
    for call_id, agent, ts_ms, passed in (
        ("c0", "a1", T0, True),
        ("fast", "a2", T0 + 700 * second, True),
        ("c1", "a1", T0 + 200 * second, False),
    ):
        engine.count(scored_call(alert_result(call_id, agent, ts_ms, passed)))
    taken_over = AlertEngine([rule(30)], LIMIT)
    taken_over.restore(engine.kept_calls(), engine.episodes_document(), engine.state_document(), engine.time_document())
    assert sorted(engine.windows.calls) == sorted(taken_over.windows.calls) == ["fast"]
    assert engine.set_rules([rule(900)]) == taken_over.set_rules([rule(900)]) == []
