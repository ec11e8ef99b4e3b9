"""The DB diff of a failed db_state_match, shaped as the harness's `compute_db_diff`
(nemo_voice_agent/evaluation/db_hash.py), and where it shows: the result's evaluation and the
scenario's exported db_state_diff.json."""

from __future__ import annotations

import json

from models.db_hash import db_state_hash
from models.scenario import Scenario
from scorers.evaluation.db_diff import compute_db_diff
from scorers.runs import export_run
from tests.helpers.eventkit import event, run_call
from tests.helpers.runkit import call_result

EXPECTED = {
    "users": {"u1": {"name": "Ann", "bookings": ["b1", "b2"], "miles": 100}},
    "flights": {"f1": {"seats": 3}},
    "settings": ["x"],
}


def test_equal_dbs_give_an_empty_diff():
    assert compute_db_diff(EXPECTED, json.loads(json.dumps(EXPECTED))) == {
        "tables_added": [],
        "tables_removed": [],
        "tables_modified": {},
    }


def test_tables_and_records_added_and_removed_are_listed_sorted():
    actual = {"users": {"u2": {}, "u1": EXPECTED["users"]["u1"]}, "settings": ["x"], "payments": {}, "audit": {}}
    diff = compute_db_diff(EXPECTED, actual)
    assert (diff["tables_added"], diff["tables_removed"]) == (["audit", "payments"], ["flights"])
    assert diff["tables_modified"] == {
        "users": {"records_added": ["u2"], "records_removed": [], "records_modified": {}}
    }


def test_a_changed_field_is_a_value_mismatch_under_its_record():
    actual = json.loads(json.dumps(EXPECTED))
    actual["users"]["u1"]["miles"] = 250
    assert compute_db_diff(EXPECTED, actual)["tables_modified"] == {
        "users": {
            "records_added": [],
            "records_removed": [],
            "records_modified": {
                "u1": {
                    "fields_added": [],
                    "fields_removed": [],
                    "fields_modified": {"miles": {"type": "value_mismatch", "expected": 100, "actual": 250}},
                }
            },
        }
    }


def test_differences_the_hash_ignores_are_not_reported():
    # 100.0 is 100, "null" is null, and bookings is an order-independent list, as in the hash.
    actual = json.loads(json.dumps(EXPECTED))
    actual["users"]["u1"].update(miles=100.0, bookings=["b2", "b1"])
    assert compute_db_diff(EXPECTED, actual)["tables_modified"] == {}
    assert db_state_hash(actual) == db_state_hash(EXPECTED)


def test_lists_report_their_length_or_their_differing_items_and_types_their_mismatch():
    assert (
        compute_db_diff({"t": {"r": {"l": [1, 2]}}}, {"t": {"r": {"l": [1]}}})["tables_modified"]["t"][
            "records_modified"
        ]["r"]["fields_modified"]["l"]["type"]
        == "list_length_mismatch"
    )
    item = compute_db_diff({"t": {"r": {"l": [1, 2]}}}, {"t": {"r": {"l": [1, 3]}}})["tables_modified"]["t"][
        "records_modified"
    ]["r"]["fields_modified"]["l"]
    assert item == {
        "type": "list_differences",
        "differences": [{"index": 1, "diff": {"type": "value_mismatch", "expected": 2, "actual": 3}}],
    }
    typed = compute_db_diff({"t": {"r": 1}}, {"t": {"r": "1"}})["tables_modified"]["t"]["records_modified"]["r"]
    assert (typed["type"], typed["expected_type"], typed["actual_type"]) == ("type_mismatch", "int", "str")
    assert compute_db_diff({"settings": ["x"]}, {"settings": ["y"]})["tables_modified"] == {
        "settings": {"type": "non_dict_table", "expected": ["x"], "actual": ["y"]}
    }


def scored(actual_db, send_expected_db=True):
    scenario = Scenario(name="airline__1", expected_scenario_db=EXPECTED, send_expected_db=send_expected_db)
    events = [
        event("call.started", scenario.to_call_started("a1"), ts_ms=1_000),
        event("db.state", {"side": "agent", "db": actual_db}, ts_ms=2_000),
        event("call.ended", {"stop_reason": "[EXIT]"}, ts_ms=3_000),
    ]
    _, results = run_call(events)
    return results[-1]


def test_a_failed_match_carries_the_diff_in_the_result_and_the_export_writes_it_beside_metrics_json():
    actual = json.loads(json.dumps(EXPECTED))
    actual["flights"]["f1"]["seats"] = 2
    result = scored(actual)
    assert result.evaluation["db_state_match"] is False
    assert result.evaluation["db_state_diff"] == compute_db_diff(EXPECTED, actual)
    files = export_run([call_result("c1", result.evaluation)])
    assert json.loads(files["airline__1/db_state_diff.json"]) == compute_db_diff(EXPECTED, actual)
    assert "db_state_diff" not in json.loads(files["airline__1/metrics.json"])  # (metrics.json stays the harness's)


def test_no_diff_when_the_db_matches_or_the_scenario_does_not_send_its_expected_db():
    assert "db_state_diff" not in scored(json.loads(json.dumps(EXPECTED))).evaluation
    changed = {**EXPECTED, "flights": {}}
    assert "db_state_diff" not in scored(changed, send_expected_db=False).evaluation
