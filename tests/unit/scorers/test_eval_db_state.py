"""The DB hash, db_state_match and db_state_assertions (metrics dictionary,
docs/concepts/evaluation-rules.md#db-state-hash)."""

from __future__ import annotations

import hashlib

import pytest

from models.db_hash import db_state_hash
from scorers.engine import CallEngine
from scorers.evaluation.db_state import (
    PredicateRegistry,
    count,
    default_predicates,
    exists,
    field_equals,
)
from scorers.registry import ScorerRegistry, qa_metrics, signal_scorers
from tests.helpers.eventkit import event, run_call


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# ------------------------------------------------------------------------------------------ hash


def test_the_hash_of_a_small_db_is_the_sha256_of_its_canonical_json():
    db = {
        "session": {"token": "abc"},  # dropped at the top level
        "flights": {"F1": {"seats": 3.0, "status": "NULL", "fare": 99.5}},  # 3.0 -> 3, "NULL" -> null
        "bookings": [{"id": "b2"}, {"id": "b1"}],  # order-independent: sorted
        "log": ["z", "a"],  # any other list keeps its order
    }
    canonical = (
        '{"bookings":[{"id":"b1"},{"id":"b2"}],"flights":{"F1":{"fare":99.5,"seats":3,"status":null}},"log":["z","a"]}'
    )
    assert db_state_hash(db) == sha256(canonical)


def test_order_independent_lists_are_sorted_at_any_depth_by_their_json():
    db = {"users": {"u1": {"notifications": [{"b": 1, "a": 2}, {"a": 1}], "group_memberships": ["g2", "g1"]}}}
    # Sort keys: '{"a": 1}' < '{"a": 2, "b": 1}' and '"g1"' < '"g2"'.
    canonical = '{"users":{"u1":{"group_memberships":["g1","g2"],"notifications":[{"a":1},{"a":2,"b":1}]}}}'
    assert db_state_hash(db) == sha256(canonical)


@pytest.mark.parametrize(
    "key", ["standby_list", "notifications", "bookings", "system_accounts", "group_memberships", "asset_recoveries"]
)
def test_each_order_independent_key_ignores_element_order(key):
    assert db_state_hash({key: [2, 1, 3]}) == db_state_hash({key: [3, 2, 1]}) == sha256(f'{{"{key}":[1,2,3]}}')


def test_other_lists_keep_their_order():
    assert db_state_hash({"items": [2, 1]}) != db_state_hash({"items": [1, 2]})


def test_null_strings_of_any_case_become_null_and_others_stay():
    db = {"a": "None", "b": " null ", "c": "nonesuch", "d": "NULL"}
    assert db_state_hash(db) == sha256('{"a":null,"b":null,"c":"nonesuch","d":null}')


def test_only_whole_floats_become_ints_and_session_is_dropped_only_at_the_top():
    db = {"x": {"session": 1, "v": 2.0, "w": 2.5}}
    assert db_state_hash(db) == sha256('{"x":{"session":1,"v":2,"w":2.5}}')


# ------------------------------------------------------------------------------------ predicates


DB = {"users": {"u1": {"name": "Ada", "bookings": [{"id": "b1"}, {"id": "b2"}], "phone": None}}}


def test_field_equals_returns_the_value_at_a_dotted_path():
    assert field_equals(DB, "users.u1.name") == "Ada"
    assert field_equals(DB, "users.u1.bookings.1.id") == "b2"


def test_count_returns_the_size_of_a_list_or_object():
    assert count(DB, "users.u1.bookings") == 2
    assert count(DB, "users") == 1


def test_exists_tells_whether_a_path_leads_somewhere():
    assert exists(DB, "users.u1.phone") is True
    assert exists(DB, "users.u2") is False
    assert exists(DB, "users.u1.bookings.5") is False


def test_field_equals_raises_on_a_missing_path():
    with pytest.raises(KeyError):
        field_equals(DB, "users.u9.name")


def test_a_predicate_name_cannot_be_registered_twice_in_one_scope():
    predicates = default_predicates()
    with pytest.raises(ValueError):
        predicates.register(lambda db: 1, name="count")
    predicates.register(lambda db: 1, name="count", domain="telecom")  # a domain is its own scope


def test_a_domain_predicate_wins_in_its_domain_only():
    predicates = default_predicates()

    @predicates.register(name="count", domain="telecom")
    def always_seven(db, path):
        return 7

    assert predicates.lookup("count", "telecom") is always_seven
    assert predicates.lookup("count", "airline") is count
    assert predicates.lookup("count") is count
    assert predicates.lookup("nope", "telecom") is None


def test_default_registries_are_independent():
    first, second = default_predicates(), default_predicates()
    first.register(lambda db: True, name="extra")
    assert first.lookup("extra") is not None
    assert second.lookup("extra") is None


# ---------------------------------------------------------------------------- db_state_match


EXPECTED_DB = {"orders": {"o1": {"status": "placed", "total": 20.0}}}


def started(**scenario) -> object:
    return event("call.started", {"agent_id": "a1", "scenario": {"name": "airline__1", **scenario}})


def db_state(side: str, db: dict | None = None, hash_: str | None = None) -> object:
    data: dict = {"side": side}
    if db is not None:
        data["db"] = db
    if hash_ is not None:
        data["hash"] = hash_
    return event("db.state", data)


def evaluation(*events: object, engine: CallEngine | None = None) -> dict:
    _, results = run_call([*events, event("call.ended", {"stop_reason": "[EXIT]"})], engine)
    return results[-1].evaluation


def test_a_matching_agent_hash_matches():
    expected = db_state_hash(EXPECTED_DB)
    doc = evaluation(started(expected_db_hash=expected), db_state("agent", hash_=expected))
    assert (doc["db_state_expected_hash"], doc["db_state_actual_hash"], doc["db_state_match"]) == (
        expected,
        expected,
        True,
    )


def test_an_agent_db_without_a_hash_is_hashed_here():
    # The same end state written differently: 20 instead of 20.0 hashes equally.
    expected = db_state_hash(EXPECTED_DB)
    doc = evaluation(
        started(expected_db_hash=expected), db_state("agent", db={"orders": {"o1": {"status": "placed", "total": 20}}})
    )
    assert doc["db_state_actual_hash"] == expected
    assert doc["db_state_match"] is True


def test_a_different_agent_db_does_not_match():
    expected = db_state_hash(EXPECTED_DB)
    doc = evaluation(started(expected_db_hash=expected), db_state("agent", db={"orders": {}}))
    assert doc["db_state_actual_hash"] == sha256('{"orders":{}}')
    assert doc["db_state_match"] is False


def test_a_missing_agent_hash_is_a_failed_match_not_na():
    expected = db_state_hash(EXPECTED_DB)
    doc = evaluation(started(expected_db_hash=expected), db_state("user", hash_=expected))
    assert doc["db_state_actual_hash"] is None
    assert doc["db_state_match"] is False


def test_a_db_state_sent_after_the_end_rescores_the_call():
    # A harness asks the agent for its end state once the conversation is over; a call ended by the
    # inactivity sweep can have it only after its end.
    expected = db_state_hash(EXPECTED_DB)
    _, results = run_call(
        [
            started(expected_db_hash=expected),
            event("call.ended", {"stop_reason": "[EXIT]"}),
            db_state("agent", hash_=expected),
        ]
    )
    assert [(r.version, r.evaluation["db_state_match"]) for r in results] == [(1, False), (2, True)]


def test_a_db_state_before_the_start_still_opens_the_call_as_any_event_of_a_running_call_does():
    expected = db_state_hash(EXPECTED_DB)
    _, results = run_call(
        [
            db_state("agent", hash_=expected),
            started(expected_db_hash=expected),
            event("call.ended", {"stop_reason": "[EXIT]"}),
        ]
    )
    assert [(r.version, r.evaluation["db_state_match"]) for r in results] == [(1, True)]


def test_the_latest_agent_state_wins():
    expected = db_state_hash(EXPECTED_DB)
    doc = evaluation(
        started(expected_db_hash=expected), db_state("agent", hash_=expected), db_state("agent", db={"orders": {}})
    )
    assert doc["db_state_match"] is False


def test_db_state_keys_are_absent_without_an_expected_hash():
    doc = evaluation(started(), db_state("agent", db=EXPECTED_DB))
    assert not {"db_state_expected_hash", "db_state_actual_hash", "db_state_match"} & set(doc)
    assert not {"db_state_assertion_verdicts", "db_state_assertion_pass_rate"} & set(doc)


def test_a_call_without_a_scenario_has_no_db_state_keys():
    doc = evaluation(event("call.started", {"agent_id": "a1"}), db_state("agent", db=EXPECTED_DB))
    assert not any(key.startswith("db_state") for key in doc)


# ------------------------------------------------------------------------- db_state_assertions


AGENT_DB = {"lines": {"L1": {"status": "active", "roaming": True}}, "bills": [{"id": 1}, {"id": 2}]}
USER_DB = {"device": {"airplane_mode": False}}


def test_assertions_give_one_verdict_each_and_their_pass_rate():
    assertions = [
        {
            "func_name": "field_equals",
            "side": "agent",
            "arguments": {"path": "lines.L1.status"},
            "assert_value": "active",
            "message": "line active",
        },
        {"func_name": "count", "side": "agent", "arguments": {"path": "bills"}, "assert_value": 3},
        {
            "func_name": "field_equals",
            "side": "user",
            "arguments": {"path": "device.airplane_mode"},
            "assert_value": False,
        },
    ]
    doc = evaluation(
        started(db_state_assertions=assertions), db_state("agent", db=AGENT_DB), db_state("user", db=USER_DB)
    )
    assert doc["db_state_assertion_verdicts"] == [
        {
            "func_name": "field_equals",
            "side": "agent",
            "passed": True,
            "expected": "active",
            "actual": "active",
            "message": "line active",
            "error": None,
        },
        {
            "func_name": "count",
            "side": "agent",
            "passed": False,
            "expected": 3,
            "actual": 2,
            "message": None,
            "error": None,
        },
        {
            "func_name": "field_equals",
            "side": "user",
            "passed": True,
            "expected": False,
            "actual": False,
            "message": None,
            "error": None,
        },
    ]
    assert doc["db_state_assertion_pass_rate"] == pytest.approx(2 / 3)  # 2 of 3 predicates hold


def test_a_side_without_a_db_fails_its_assertions_with_an_error():
    assertions = [{"func_name": "exists", "side": "user", "arguments": {"path": "device"}, "assert_value": True}]
    doc = evaluation(started(db_state_assertions=assertions), db_state("agent", db=AGENT_DB))
    (verdict,) = doc["db_state_assertion_verdicts"]
    assert (verdict["passed"], verdict["actual"]) == (False, None)
    assert verdict["error"] == "no user DB available: the call sent no db.state with a db for side 'user'"
    assert doc["db_state_assertion_pass_rate"] == 0.0


def test_a_hash_only_state_leaves_no_db_for_the_assertions():
    assertions = [{"func_name": "exists", "side": "agent", "arguments": {"path": "lines"}, "assert_value": True}]
    doc = evaluation(
        started(db_state_assertions=assertions), db_state("agent", db=AGENT_DB), db_state("agent", hash_="abc")
    )
    assert doc["db_state_assertion_verdicts"][0]["error"].startswith("no agent DB available: ")
    assert "latest db.state of side 'agent' carried a hash but no db" in doc["db_state_assertion_verdicts"][0]["error"]


def test_an_unknown_predicate_fails_with_an_error():
    assertions = [{"func_name": "assert_roaming", "side": "agent", "arguments": {}, "assert_value": True}]
    doc = evaluation(started(db_state_assertions=assertions), db_state("agent", db=AGENT_DB))
    (verdict,) = doc["db_state_assertion_verdicts"]
    assert verdict["passed"] is False
    assert verdict["error"].startswith("No predicate 'assert_roaming' registered under domain=")


def test_a_raising_predicate_fails_with_its_error():
    assertions = [
        {
            "func_name": "field_equals",
            "side": "agent",
            "arguments": {"path": "lines.L9.status"},
            "assert_value": "active",
        }
    ]
    doc = evaluation(started(db_state_assertions=assertions), db_state("agent", db=AGENT_DB))
    (verdict,) = doc["db_state_assertion_verdicts"]
    assert (verdict["passed"], verdict["actual"]) == (False, None)
    assert verdict["error"].startswith("Predicate raised: KeyError")


def test_an_unknown_side_fails_with_an_error():
    assertions = [{"func_name": "exists", "side": "bridge", "arguments": {"path": "x"}, "assert_value": True}]
    doc = evaluation(started(db_state_assertions=assertions), db_state("agent", db=AGENT_DB))
    assert doc["db_state_assertion_verdicts"][0]["error"] == "Unknown side 'bridge'; expected 'user' or 'agent'."


def test_an_assertion_without_a_side_fails_as_the_harness_fails_it():
    # Mirrors the harness's evaluate_db_state_assertion (tests/unit/test_db_state_assertions.py): no
    # side is "Unknown side None", even with the agent's DB at hand.
    assertions = [{"func_name": "exists", "arguments": {"path": "lines"}, "assert_value": True}]
    doc = evaluation(started(db_state_assertions=assertions), db_state("agent", db=AGENT_DB))
    (verdict,) = doc["db_state_assertion_verdicts"]
    assert (verdict["side"], verdict["passed"], verdict["error"]) == (
        None,
        False,
        "Unknown side None; expected 'user' or 'agent'.",
    )
    assert doc["db_state_assertion_pass_rate"] == 0.0


def test_a_custom_registry_reaches_the_engine_through_signal_scorers():
    predicates = default_predicates()

    @predicates.register(domain="telecom")
    def roaming_enabled(db, line):
        return db["lines"][line]["roaming"]

    engine = CallEngine(registry=ScorerRegistry.build(signal_scorers(predicates=predicates), qa_metrics()))
    assertions = [{"func_name": "roaming_enabled", "side": "agent", "arguments": {"line": "L1"}, "assert_value": True}]
    doc = evaluation(
        started(domain="telecom", db_state_assertions=assertions), db_state("agent", db=AGENT_DB), engine=engine
    )
    assert doc["db_state_assertion_verdicts"][0]["passed"] is True
    assert doc["db_state_assertion_pass_rate"] == 1.0


def test_a_domain_predicate_is_not_found_for_another_domain():
    predicates = PredicateRegistry()
    predicates.register(lambda db: True, name="ok", domain="telecom")
    engine = CallEngine(registry=ScorerRegistry.build(signal_scorers(predicates=predicates), qa_metrics()))
    assertions = [{"func_name": "ok", "side": "agent", "assert_value": True}]
    doc = evaluation(
        started(domain="retail", db_state_assertions=assertions), db_state("agent", db=AGENT_DB), engine=engine
    )
    assert doc["db_state_assertion_verdicts"][0]["passed"] is False
