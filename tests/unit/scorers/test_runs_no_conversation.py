"""A run summary's JSON counts the scenarios whose agent never spoke; all_summary.txt stays the
harness's text, without them."""

from __future__ import annotations

from scorers.runs import summary_text
from scorers.runs.aggregate import RunSummary


def result(call_id: str, dead: bool, version: int = 1) -> dict:
    return {
        "call_id": call_id,
        "version": version,
        "run_id": "r1",
        "no_conversation": dead,
        "evaluation": {"scenario_name": call_id, "is_successful": not dead},
    }


def test_the_json_summary_counts_scenarios_with_no_conversation_and_a_rescore_replaces_its_call():
    summary = RunSummary(run_id="r1")
    for r in (result("s1", False), result("s2", True), result("s3", True), result("s3", False, version=2)):
        summary.add(r)
    assert summary.summary().to_dict()["no_conversation_scenarios"] == 1


def test_the_text_summary_does_not_mention_them():
    summary = RunSummary(run_id="r1")
    summary.add(result("s1", True))
    text = summary_text(summary)  # (the file `callqa summary` and `callqa export` write)
    assert "Total Scenarios: 1" in text and "conversation" not in text
