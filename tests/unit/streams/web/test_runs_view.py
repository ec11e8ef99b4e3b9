"""What the HTTP API serves of runs: `/runs` lists runs only, and `/runs/{id}/summary.txt` is the text
`callqa summary` prints (both read the workers' view of the results, streams/web/results_view.py)."""

from __future__ import annotations

import json

import msgspec

from scorers.runs import summary_text
from streams.cli.main import main
from streams.web.results_view import ResultsView
from tests.helpers.harness_runkit import judged_run
from tests.helpers.runkit import call_result, metrics_doc


def test_calls_without_a_run_are_not_a_run():
    view = ResultsView()
    for result in judged_run():
        view.add(result)
    view.add(call_result("prod-1", metrics_doc("prod-1"), run_id=None))
    view.add(call_result("prod-2", metrics_doc("prod-2"), run_id=""))
    assert sorted(view.runs) == ["run-1"]
    assert len(view.runs["run-1"]) == 3


def test_the_served_summary_text_is_what_callqa_summary_prints(tmp_path, capsys):
    results = judged_run()
    view = ResultsView()
    for result in results:
        view.add(result)
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(msgspec.to_builtins(r)) + "\n" for r in results))
    capsys.readouterr()
    assert main(["summary", "run-1", "--results", str(path)]) == 0
    assert capsys.readouterr().out == summary_text(view.runs["run-1"])
