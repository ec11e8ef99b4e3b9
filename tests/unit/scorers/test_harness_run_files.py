"""A run with judge scores, NL assertions and DB-state assertions written as the harness writes it.

The expected all_summary.txt (tests/data/harness-run/) was worked out line by line from the harness's
`run_dynamic_evaluation` (nemo_voice_agent/evaluation/runner.py); the resume path it mirrors is
`RunAggregator.add_scenario`, as tests/unit/test_runner_aggregation.py and test_runner_resume.py
exercise it: per-scenario judge and NL lines, assertions counted per predicate and per assertion, the
stalled scenario kept out of every per-signal rate, and the per-domain blocks of buckets that span
more than one domain.
"""

from __future__ import annotations

import json

from scorers.runs import RunSummary, export_run, load_run, summary_text
from tests.helpers.harness_runkit import judged_run
from tests.helpers.paths import REPO
from tests.helpers.runkit import call_result, metrics_doc

EXPECTED = REPO / "tests" / "data" / "harness-run" / "all_summary.txt"


def test_the_exported_summary_is_the_harness_file_line_for_line():
    assert export_run(judged_run())["all_summary.txt"] == EXPECTED.read_bytes()


def test_the_judge_and_nl_lines_read_as_the_harness_writes_them():
    text = EXPECTED.read_text()
    for line in (
        "    NL-assertion pass rate: 33.33%\n    Judge score: 0.40\n    Judge passed: False\n",
        "  NL-Assertion pass:            50.00% (2/4 assertions)\n",
        "  Judge score mean:            0.675 (across 2 scenarios)\n",
        "  Judge passed (>= threshold):  50.00% (1/2 scenarios)\n",
        "  DB-State-Assertion pass:      66.67% (2/3 predicates)\n",
        "Per-Domain NL-Assertion Pass Rate:\n" + "-" * 80 + "\n  retail: 33.33% (1/3)\n  telecom: 100.00% (1/1)\n",
    ):
        assert line in text


def test_the_live_view_and_the_files_read_back_give_the_same_text():
    live = RunSummary(run_id="run-1")
    for result in judged_run():
        live.add(result)
    files = export_run(judged_run())
    assert summary_text(live).encode() == EXPECTED.read_bytes()
    assert summary_text(load_run(files, run_id="run-1")).encode() == EXPECTED.read_bytes()


def test_at_min_agent_turns_0_the_stalled_scenario_counts_in_every_rate():
    # The harness's add_scenario with min_agent_turns=0: no stall check, so telecom__2's own verdicts
    # count: judge 0.5 (mean 1.85 / 3), its one predicate (3 of 4), its clean exit (3 of 3).
    run = RunSummary(run_id="run-1", min_agent_turns=0)
    for result in judged_run():
        run.add(result)
    text = summary_text(run)
    assert "WARNING" not in text
    assert "  Judge score mean:            0.617 (across 3 scenarios)\n" in text
    assert "  DB-State-Assertion pass:      75.00% (3/4 predicates)\n" in text
    assert "  Clean exit: 100.00% (3/3 scenarios)\n" in text
    # Its per-scenario block still says how it was scored.
    assert "  Turns: 0\n  [COUNTED AS FAILURE: insufficient agent turns / stalled" in text


def test_all_metrics_json_lists_each_scenario_under_the_run_directory():
    documents = json.loads(export_run(judged_run(), run_directory="eval_x")["all_metrics.json"])
    assert [d["scenario_directory"] for d in documents] == [
        "eval_x/retail__1",
        "eval_x/telecom__1",
        "eval_x/telecom__2",
    ]
    assert "judge_result" not in documents[0]


def test_all_latencies_csv_doubles_quotes_and_writes_one_decimal():
    document = metrics_doc("d__a", latencies_ms=(1234.56,))
    document["latencies"][0].update(user_transcript='He said "hi"', agent_transcript="a, b")
    csv = export_run([call_result("c1", document)])["all_latencies.csv"].decode()
    assert csv == 'Scenario,User_Transcript,Agent_Transcript,Latency_ms\n"d__a","He said ""hi""","a, b",1234.6\n'


def test_a_run_without_any_applicable_verdict_says_so_as_the_harness_does():
    text = export_run([call_result("c1", metrics_doc("d__a", is_successful="N/A", clean_exit=True))])[
        "all_summary.txt"
    ].decode()
    assert "\n\n\nOverall Success Rate: N/A (no scenarios had any applicable signal)\n" in text
    assert "Token Usage" not in text and "Per-Domain" not in text
    assert "  Total Measurements: 0\n  Mean: -1.0ms\n" in text
