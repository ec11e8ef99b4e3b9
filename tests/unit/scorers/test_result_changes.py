"""`callqa compare`: what re-scoring changed, call by call and verdict by verdict (each call by its
newest result in each file)."""

from __future__ import annotations

import json
from collections import Counter

from scorers.result_changes import Verdict, compare_results, verdicts
from streams.cli.main import main


def result(
    call_id: str,
    version: int = 1,
    metrics: dict | None = None,
    cohorts: dict | None = None,
    successful: bool | None = None,
) -> dict:
    """A result document; metrics and cohorts as {name: (score, passed)}."""
    return {
        "call_id": call_id,
        "version": version,
        "final": True,
        "agent_id": "a",
        "cohort_ids": [],
        "run_id": None,
        "ended_ts_ms": 1,
        "event_ts_ms": 1,
        "metrics": [
            {"metric": name, "value": score, "score": score, "passed": passed, "details": {}}
            for name, (score, passed) in (metrics or {}).items()
        ],
        "cohorts": [
            {"cohort_id": name, "weighted_score": score, "passed": passed, "metrics_counted": []}
            for name, (score, passed) in (cohorts or {}).items()
        ],
        "evaluation": {} if successful is None else {"is_successful": successful},
    }


def test_a_call_s_verdicts_are_its_metrics_cohorts_and_scenario_success():
    found = verdicts(result("c", metrics={"wer": (90.0, True)}, cohorts={"billing": (55.5, False)}, successful=True))
    assert found == {
        "wer": Verdict(90.0, True),
        "cohort billing": Verdict(55.5, False),
        "is_successful": Verdict(None, True),
    }


def test_each_call_is_compared_by_its_newest_result():
    before = [result("c", 1, {"hallucination": (40.0, False)}), result("c", 2, {"hallucination": (70.0, True)})]
    after = [result("c", 1, {"hallucination": (70.0, True)})]
    report = compare_results(before, after)
    assert report.changed_calls == [] and report.tallies[0].compared == 1 and report.tallies[0].changed == 0


def test_flips_and_the_mean_score_change_are_counted_per_verdict():
    before = [
        result("a", metrics={"latency": (80.0, True)}),
        result("b", metrics={"latency": (40.0, False)}),
        result("c", metrics={"latency": (None, None)}),
        result("d", metrics={"latency": (65.0, True)}),
    ]
    after = [
        result("a", metrics={"latency": (50.0, False)}),
        result("b", metrics={"latency": (90.0, True)}),
        result("c", metrics={"latency": (75.0, True)}),
        result("d", metrics={"latency": (65.0, True)}),
    ]
    tally = compare_results(before, after).tallies[0]
    assert (
        tally.compared,
        tally.changed,
        tally.passed_to_failed,
        tally.failed_to_passed,
        tally.became_judged,
        tally.became_unjudged,
    ) == (4, 3, 1, 1, 1, 0)
    assert tally.mean_score_change == ((50 - 80) + (90 - 40) + 0) / 3  # (c had no score before)


def test_calls_in_one_file_only_are_named_and_not_compared():
    report = compare_results([result("a"), result("gone")], [result("a"), result("new")])
    assert (report.only_before, report.only_after, report.to_dict()["calls_compared"]) == (["gone"], ["new"], 1)


def test_a_verdict_a_result_gained_is_a_change_of_that_call():
    report = compare_results([result("a")], [result("a", cohorts={"billing": (80.0, True)})])
    [call] = report.changed_calls
    assert call.call_id == "a" and [(c.name, c.before, c.after) for c in call.changes] == [
        ("cohort billing", None, Verdict(80.0, True))
    ]
    assert report.regressions == 0
    [tally] = report.tallies  # counted as added, not compared
    assert (tally.name, tally.compared, tally.added, tally.gone) == ("cohort billing", 0, 1, 0)
    [tally] = compare_results([result("a", cohorts={"billing": (80.0, True)})], [result("a")]).tallies
    assert (tally.compared, tally.added, tally.gone) == (0, 0, 1)


def _write(path, documents) -> str:
    path.write_text("".join(json.dumps(d) + "\n" for d in documents))
    return str(path)


def test_the_command_prints_the_changes_and_fails_on_a_regression_only_when_asked(tmp_path, capsys):
    before = _write(tmp_path / "before.jsonl", [result("call-1", metrics={"wer": (90.0, True)})])
    after = _write(tmp_path / "after.jsonl", [result("call-1", metrics={"wer": (60.0, False)})])
    assert main(["compare", before, after]) == 0
    out = capsys.readouterr().out
    assert "1 compared (before 1, after 1), 1 with a verdict changed" in out
    assert "call-1: wer 90.0 pass → 60.0 fail" in out
    assert main(["compare", before, after, "--fail-on-regression"]) == 1
    assert "1 verdicts passed before and fail now" in capsys.readouterr().err
    assert main(["compare", after, before, "--fail-on-regression", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["verdicts"] == [
        {
            "name": "wer",
            "compared": 1,
            "changed": 1,
            "mean_score_change": 30.0,
            "passed_to_failed": 0,
            "failed_to_passed": 1,
            "became_judged": 0,
            "became_unjudged": 0,
            "added": 0,
            "gone": 0,
        }
    ]


def test_a_line_that_is_no_result_is_named_with_its_file_and_line(tmp_path, capsys):
    good = _write(tmp_path / "good.jsonl", [result("c")])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(result("c")) + "\n" + '{"call_id": "c"}\n')
    assert main(["compare", good, str(bad)]) == 2
    assert f"{bad} line 2 is not a result document" in capsys.readouterr().err


def test_a_replay_after_a_change_of_cohorts_shows_what_the_cohorts_changed(tmp_path, capsys):
    """The re-scoring story on the bundled sample: the same log replayed without and then with cohorts."""
    plain, with_cohorts = tmp_path / "plain.jsonl", tmp_path / "cohorts.jsonl"
    assert main(["replay", "samples/calls.jsonl", "--out", str(plain), "--jobs", "1"]) == 0
    assert (
        main(
            [
                "replay",
                "samples/calls.jsonl",
                "--out",
                str(with_cohorts),
                "--jobs",
                "1",
                "--cohorts",
                "samples/cohorts.json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["compare", str(plain), str(with_cohorts), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["calls_compared"] == 240 and document["only_before"] == document["only_after"] == []
    assert all(t["changed"] == 0 for t in document["verdicts"])  # cohorts change no metric
    newest = {r["call_id"]: r for r in map(json.loads, with_cohorts.read_text().splitlines())}  # (versions ascend)
    in_a_cohort = {call_id for call_id, r in newest.items() if r["cohorts"]}
    assert document["calls_changed"] == len(in_a_cohort) > 0
    members = Counter(cohort["cohort_id"] for r in newest.values() for cohort in r["cohorts"])
    assert {t["name"]: t["added"] for t in document["verdicts"] if t["added"]} == {
        f"cohort {cohort_id}": count for cohort_id, count in members.items()
    }


def test_verdicts_are_listed_metrics_first_then_cohorts_by_id_then_the_scenario_s_success():
    def both(cohorts):
        return result("c", metrics={"wer": (1.0, True), "latency": (50.0, False)}, cohorts=cohorts, successful=True)

    # (The first call compared has no cohort: its success would come first in the order met.)
    before = [
        result("a", metrics={"wer": (1.0, True)}, successful=True),
        both({"zeta": (1.0, True), "alpha": (1.0, True)}),
    ]
    after = [
        result("a", metrics={"wer": (1.0, True)}, successful=True),
        both({"zeta": (1.0, True), "alpha": (1.0, True)}),
    ]
    assert [t.name for t in compare_results(before, after).tallies] == [
        "wer",
        "latency",
        "cohort alpha",
        "cohort zeta",
        "is_successful",
    ]


def test_listing_no_calls_lists_none_of_them(tmp_path, capsys):
    before = _write(
        tmp_path / "before.jsonl", [result("dropped-call"), result("kept-call", metrics={"wer": (90.0, True)})]
    )
    after = _write(tmp_path / "after.jsonl", [result("kept-call", metrics={"wer": (60.0, False)})])
    assert main(["compare", before, after, "--calls", "0"]) == 0
    out = capsys.readouterr().out
    assert "only before: 1" in out and "-call" not in out and "calls changed" not in out
