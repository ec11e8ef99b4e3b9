"""The live worker's alert evaluation without a broker: state kept in a table (a dict here), restored
by whichever worker takes the evaluation over, and rule changes from the rule book."""

from __future__ import annotations

import msgspec

from models.alert_rules import AlertRule
from scorers.alerting.calls import scored_call
from scorers.alerting.engine import AlertEngine
from scorers.alerting.rulebook import RuleBook
from streams.alerts.live import (
    CALL_KEY_PREFIX,
    EPISODES_KEY,
    SOURCE_FIELD,
    SOURCE_OFFSET_FIELD,
    AlertsRuntime,
)
from tests.helpers.alertkit import agent_stream

RULE = AlertRule(
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
STREAM = agent_stream(2000, lambda agent, s: agent == "a1" and 600 <= s < 1200)


def evaluate(runtime: AlertsRuntime, table: dict, results: list[dict]) -> list[dict]:
    """What the evaluating agent does per message: ready, observe, (publish), persist."""
    alerts = []
    for r in results:
        alerts.extend(runtime.ensure_ready(table))
        # The relay hands the agent the compact document as JSON bytes.
        alerts.extend(runtime.engine.observe(msgspec.json.encode(runtime_doc(r))))
        runtime.persist(table)
    return alerts


def runtime_doc(result: dict) -> dict:
    return scored_call(result).to_document()


def test_a_worker_taking_over_from_the_table_raises_the_same_alerts():
    engine = AlertEngine([RULE])
    expected = [a for r in STREAM for a in engine.observe(r)]
    table: dict[bytes, bytes] = {}
    first = AlertsRuntime(RuleBook.from_file_rules([RULE]))
    alerts = evaluate(first, table, STREAM[:240])  # up to second 790: pending
    second = AlertsRuntime(RuleBook.from_file_rules([RULE]))
    alerts += evaluate(second, table, STREAM[240:])
    assert alerts == expected and [a["state"] for a in alerts] == ["pending", "firing", "resolved"]


def test_the_table_keeps_only_the_calls_of_the_longest_window_and_the_open_episodes():
    table: dict[bytes, bytes] = {}
    runtime = AlertsRuntime(RuleBook.from_file_rules([RULE]))
    evaluate(runtime, table, STREAM[:300])  # up to second 990: firing
    calls = [key for key in table if key.startswith(CALL_KEY_PREFIX)]
    assert len(calls) == 90  # 30 calls of 300 s for each of 3 agents
    episodes = msgspec.json.decode(table[EPISODES_KEY])
    assert [(e["scope"], e["state"]) for e in episodes] == [("agent:a1", "firing")]


def test_results_redelivered_after_a_take_over_raise_nothing_twice():
    table: dict[bytes, bytes] = {}
    first = AlertsRuntime(RuleBook.from_file_rules([RULE]))
    before = evaluate(first, table, STREAM[:300])
    second = AlertsRuntime(RuleBook.from_file_rules([RULE]))
    assert evaluate(second, table, STREAM[250:300]) == []  # already counted: same versions
    assert [a["state"] for a in before] == ["pending", "firing"]


def test_a_rule_deleted_on_the_topic_resolves_its_firing_alert_before_the_next_result():
    table: dict[bytes, bytes] = {}
    book = RuleBook.from_file_rules([RULE])
    runtime = AlertsRuntime(book)
    firing = evaluate(runtime, table, STREAM[:300])[-1]
    book.apply(RULE.name, None)
    closed = runtime.ensure_ready(table)
    assert [(a["state"], a["dedupe_key"]) for a in closed] == [("resolved", firing["dedupe_key"])]
    assert runtime.engine.firing() == []


def test_a_deleted_rules_resolved_event_carries_its_window_as_it_stood():
    table: dict[bytes, bytes] = {}
    book = RuleBook.from_file_rules([RULE])
    runtime = AlertsRuntime(book)
    firing = evaluate(runtime, table, STREAM[:300])[-1]
    book.apply(RULE.name, None)  # no other rule keeps its window
    (resolved,) = runtime.ensure_ready(table)
    assert resolved["state"] == "resolved" and resolved["total"] == 30 and resolved["pass_rate"] is not None
    assert resolved["total"] >= firing["total"] and resolved["sample_call_ids"]


def test_a_rule_edited_away_and_back_at_one_watermark_starts_an_episode_with_a_new_key():
    table: dict[bytes, bytes] = {}
    book = RuleBook.from_file_rules([RULE])
    runtime = AlertsRuntime(book)
    evaluate(runtime, table, STREAM[:300])
    new = msgspec.structs.replace(RULE, name="new latency", for_s=0)
    book.apply(new.name, new)  # an episode started by a rule change, not by a result
    first = runtime.ensure_ready(table)
    book.apply(new.name, msgspec.structs.replace(new, scope="agent:a2"))  # a2 is healthy
    resolved = runtime.ensure_ready(table)
    book.apply(new.name, new)  # back as it was, the watermark where it was
    again = runtime.ensure_ready(table)
    assert [a["state"] for a in first + resolved + again] == ["pending", "firing", "resolved", "pending", "firing"]
    assert first[0]["dedupe_key"] == resolved[0]["dedupe_key"] != again[0]["dedupe_key"]


def test_a_rule_added_while_no_worker_evaluated_is_evaluated_when_one_takes_over():
    new = msgspec.structs.replace(RULE, name="new latency", for_s=0)
    uninterrupted_book = RuleBook.from_file_rules([RULE])
    uninterrupted = AlertsRuntime(uninterrupted_book)
    expected = evaluate(uninterrupted, {}, STREAM[:300])
    uninterrupted_book.apply(new.name, new)
    expected += uninterrupted.ensure_ready({})

    table: dict[bytes, bytes] = {}
    book = RuleBook.from_file_rules([RULE])
    alerts = evaluate(AlertsRuntime(book), table, STREAM[:300])
    book.apply(new.name, new)  # published while the evaluating worker was gone
    alerts += AlertsRuntime(book).ensure_ready(table)  # the worker taking over, before any result
    assert alerts == expected and [(a["rule"], a["state"]) for a in alerts[-2:]] == [
        ("new latency", "pending"),
        ("new latency", "firing"),
    ]


def test_a_worker_taking_the_evaluation_over_counts_what_is_held_only_after_a_quiet_spell_of_its_own():
    # After a hard failover the partitions handed over are restored and resume seconds later: the
    # results held for event-time order must wait for them, not be counted the moment they are restored.
    import time

    from tests.helpers.alertkit import result as alert_result
    from tests.helpers.eventkit import T0

    def relayed(call_id: str, ts_ms: int, partition: int) -> bytes:
        return msgspec.json.encode(
            {**scored_call(alert_result(call_id, "a1", ts_ms, True)).to_document(), "source_partition": partition}
        )

    table: dict[bytes, bytes] = {}
    first = AlertsRuntime(RuleBook.from_file_rules([RULE]), sources=2, quiet_release_s=2.0)
    first.ensure_ready(table)
    first.count_in_order(table, relayed("a", T0, 0))  # held: results partition 1 has said nothing yet
    second = AlertsRuntime(RuleBook.from_file_rules([RULE]), sources=2, quiet_release_s=2.0)  # never took input
    second.ensure_ready(table)
    assert len(second.order) == 1
    assert not second.quiet_long_enough(time.monotonic())
    assert second.quiet_long_enough(second.last_input + 2.0)
    # A release request the first worker sent before it died, read back at once, counts nothing...
    assert second.release_if_quiet(table, second.last_input + 0.5) == [] and len(second.order) == 1
    # ...one read after a quiet spell of the second worker's own counts what is held.
    second.release_if_quiet(table, second.last_input + 2.0)
    assert len(second.order) == 0


def test_a_release_is_asked_for_once_a_quiet_spell_and_again_if_the_request_goes_unanswered():
    import time

    from tests.helpers.alertkit import result as alert_result
    from tests.helpers.eventkit import T0

    runtime = AlertsRuntime(RuleBook.from_file_rules([RULE]), sources=2, quiet_release_s=2.0)
    table: dict[bytes, bytes] = {}
    runtime.ensure_ready(table)
    runtime.count_in_order(
        table,
        msgspec.json.encode({**scored_call(alert_result("a", "a1", T0, True)).to_document(), "source_partition": 0}),
    )
    quiet = runtime.last_input = time.monotonic() - 2.0
    assert runtime.should_ask_for_release(quiet + 2.0)
    runtime.release_requested_at = quiet + 2.0  # asked (as the timer does)
    assert not runtime.should_ask_for_release(quiet + 3.0)  # on its way: not asked twice
    assert runtime.should_ask_for_release(quiet + 4.0)  # lost on its way: asked again a spell later
    runtime.release_if_quiet(table, quiet + 4.1)
    assert runtime.release_requested_at is None and len(runtime.order) == 0
    assert not runtime.should_ask_for_release(quiet + 10.0)  # nothing held


def test_results_relayed_again_after_a_crash_are_repeated_not_stale_even_behind_every_window():
    def relayed(results: list[dict], first_offset: int) -> list[bytes]:
        return [
            msgspec.json.encode({**runtime_doc(r), SOURCE_FIELD: 0, SOURCE_OFFSET_FIELD: first_offset + n})
            for n, r in enumerate(results)
        ]

    table: dict[bytes, bytes] = {}
    first = AlertsRuntime(RuleBook.from_file_rules([RULE]))
    for value in relayed(STREAM[:600], 0):  # the windows move on past the first results
        first.ensure_ready(table)
        first.count_in_order(table, value)
        first.persist(table)
    first.release_held(table)
    first.persist(table)
    # A crash: the relay had committed nothing, so every result comes again, from offset 0.
    second = AlertsRuntime(RuleBook.from_file_rules([RULE]))
    for value in relayed(STREAM[:600], 0):
        second.ensure_ready(table)
        second.count_in_order(table, value)
    second.release_held(table)
    counters = second.engine.counters
    assert (counters.stale, counters.repeated, counters.counted) == (0, 600, 0)
