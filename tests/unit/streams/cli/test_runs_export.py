"""Exporting a run as the harness's files, and re-aggregating it from those files alone."""

from __future__ import annotations

import json

import msgspec
import pytest

from scorers.runs import (
    RunSummary,
    export_run,
    load_run,
    parse_all_summary,
    render_all_summary,
    summary_text,
)
from scorers.runs.export import scenario_directories
from streams.files.exported_runs import read_export, write_export
from tests.helpers.runkit import RUN, call_result, db_verdicts, judge_doc, metrics_doc


def live_run():
    """A run with rescores, a stall, a judge, assertions of both kinds and three domains."""
    return [
        call_result("c1", metrics_doc("eva_airline__1", is_successful=False, db_state_match=False), version=1),
        call_result(
            "c1",
            metrics_doc(
                "eva_airline__1",
                db_state_match=True,
                latencies_ms=(640.0, 910.5),
                agent_tokens=(4, 800, 120),
                user_tokens=(3, 300, 40),
            ),
            version=2,
        ),
        call_result(
            "c2",
            metrics_doc(
                "eva_airline__2",
                is_successful=False,
                clean_exit=False,
                db_state_match=True,
                is_task_successful=True,
                latencies_ms=(702.25,),
            ),
        ),
        call_result(
            "c3",
            metrics_doc(
                "tau2_retail__7",
                is_successful=False,
                db_state_match=False,
                judge_score=0.4,
                judge_passed=False,
                nl_assertion_pass_rate=1 / 3,
            ),
            judge=judge_doc(0.4, nl_verdicts=[True, False, False]),
        ),
        call_result(
            "c4",
            metrics_doc(
                "tau2_telecom__3",
                db_state_assertion_verdicts=db_verdicts(True, True, False),
                db_state_assertion_pass_rate=2 / 3,
                judge_score=0.95,
                judge_passed=True,
                nl_assertion_pass_rate=1.0,
            ),
            judge=judge_doc(0.95, nl_verdicts=[True]),
        ),
        call_result(
            "c5",
            metrics_doc(
                "tau2_telecom__4",
                is_successful=False,
                is_task_successful=False,
                insufficient_agent_turns=True,
                agent_tokens=(1, 90, 12),
            ),
        ),
        call_result("c6", metrics_doc("qa__1", is_successful="N/A", is_action_match=True)),
    ]


def live_summary(results):
    run = RunSummary(run_id=RUN)
    for result in results:
        run.add(result)
    return run.summary()


def test_each_scenario_gets_its_metrics_and_judge_files_and_the_run_its_summary():
    files = export_run(live_run())
    assert sorted(files) == [
        "all_latencies.csv",
        "all_metrics.json",
        "all_summary.txt",
        "eva_airline__1/metrics.json",
        "eva_airline__2/metrics.json",
        "qa__1/metrics.json",
        "tau2_retail__7/judge_result.json",
        "tau2_retail__7/metrics.json",
        "tau2_telecom__3/judge_result.json",
        "tau2_telecom__3/metrics.json",
        "tau2_telecom__4/metrics.json",
    ]


def test_metrics_json_is_the_evaluation_without_the_judge_pretty_printed_in_document_order():
    result = call_result("c3", metrics_doc("tau2_retail__7", judge_score=0.4), judge=judge_doc(0.4, [True]))
    files = export_run([result])
    expected = {key: value for key, value in result.evaluation.items() if key != "judge_result"}
    assert files["tau2_retail__7/metrics.json"] == json.dumps(expected, indent=2).encode()
    assert list(json.loads(files["tau2_retail__7/metrics.json"])) == list(expected)
    assert json.loads(files["tau2_retail__7/judge_result.json"]) == result.evaluation["judge_result"]


def test_the_export_holds_each_calls_highest_version():
    files = export_run(
        [
            call_result("c1", metrics_doc("d__a", is_successful=True), version=2),
            call_result("c1", metrics_doc("d__a", is_successful=False), version=1),
        ]
    )
    assert json.loads(files["d__a/metrics.json"])["is_successful"] is True
    assert "Overall Success Rate: 100.00% (1/1 scenarios" in files["all_summary.txt"].decode()


def test_colliding_scenario_names_each_get_their_call_id_whatever_the_arrival_order():
    results = [
        call_result("c2", metrics_doc("d__same")),
        call_result("c1", metrics_doc("d__same")),
        call_result("c3", metrics_doc("d__other")),
    ]
    forward, backward = export_run(results), export_run(list(reversed(results)))
    assert forward == backward
    assert sorted(path for path in forward if path.endswith("/metrics.json")) == [
        "d__other/metrics.json",
        "d__same.c1/metrics.json",
        "d__same.c2/metrics.json",
    ]


def test_directory_names_cannot_leave_the_export_or_shadow_the_summary():
    directories = scenario_directories({"c1": "../up/and/away", "c2": "all_summary.txt", "c3": "."})
    assert directories == {"c1": ".._up_and_away", "c2": "all_summary.txt-2", "c3": ".-2"}


def test_results_of_several_runs_cannot_be_exported_together():
    with pytest.raises(ValueError):
        export_run(
            [call_result("c1", metrics_doc("d__a"), run_id="r1"), call_result("c2", metrics_doc("d__b"), run_id="r2")]
        )


def test_the_exported_summary_is_the_live_summary_rendered():
    results = live_run()
    run = RunSummary(run_id=RUN)
    for result in results:
        run.add(result)
    assert export_run(results)["all_summary.txt"].decode() == summary_text(run)


def test_re_aggregating_the_exported_files_alone_gives_the_live_rates():
    results = live_run()
    live = live_summary(results)
    files = export_run(results)
    scenario_files = {path: content for path, content in files.items() if path != "all_summary.txt"}
    reloaded = load_run(scenario_files, run_id=RUN).summary()
    live_rates = parse_all_summary(render_all_summary(live))
    # Hand-computed from live_run (c1 at version 2; c5 stalled; c6 "N/A"):
    # success 2/5 (c1, c4 of c1-c5); DB-State match 2/3 (c1, c2; c3 false); predicates 2/3; NL assertions
    # 1 + 1 of 3 + 1 = 4; judge mean (0.4 + 0.95) / 2 = 0.675; judge pass 1/2; clean exit 4/5 (c2 false; c5
    # stalled, so skipped).
    assert live_rates["Overall Success Rate"] == 2 / 5
    assert live_rates["DB-State match"] == 2 / 3
    assert live_rates["DB-State-Assertion pass"] == 2 / 3
    assert live_rates["NL-Assertion pass"] == 2 / 4
    assert live_rates["Judge score mean"] == 0.675
    assert live_rates["Judge passed (>= threshold)"] == 1 / 2
    assert live_rates["Clean exit"] == 4 / 5
    assert parse_all_summary(render_all_summary(reloaded)) == live_rates
    assert reloaded == live


def test_re_aggregating_with_colliding_names_keeps_every_call():
    results = [
        call_result("c1", metrics_doc("d__same", is_successful=True)),
        call_result("c2", metrics_doc("d__same", is_successful=False)),
    ]
    files = export_run(results)
    reloaded = load_run(files, run_id=RUN).summary()
    # Both calls count: 1 of 2, as live.
    assert reloaded.success_rate == live_summary(results).success_rate
    assert reloaded.scenarios == 2


def test_a_discarded_attempts_directory_is_not_a_scenario_of_the_run():
    results = [call_result("c1", metrics_doc("d__a", is_successful=True))]
    files = export_run(results)
    (kept,) = [path for path in files if path.endswith("/metrics.json")]
    killed = "d__a.killed.autoretry1.20251006_090000"
    failed_attempt = export_run([call_result("c0", metrics_doc("d__a", is_successful=False))])[kept]
    files = {**files, f"{killed}/metrics.json": failed_attempt, f"{killed}/__KILLED__": b""}
    reloaded = load_run(files, run_id=RUN).summary()
    assert reloaded.scenarios == 1 and reloaded.success_rate == live_summary(results).success_rate


def test_a_run_written_to_disk_and_read_back_summarizes_the_same(tmp_path):
    results = live_run()
    files = export_run(results)
    write_export(files, tmp_path / "run")
    assert (tmp_path / "run" / "tau2_retail__7" / "judge_result.json").is_file()
    on_disk = read_export(tmp_path / "run")
    assert on_disk == files
    reloaded = load_run(on_disk, run_id=RUN)
    assert summary_text(reloaded).encode() == on_disk["all_summary.txt"]


class _CutShort(dict):
    """An export whose writing is interrupted (Ctrl-C, a full disk) after its first file."""

    def items(self):
        first = next(iter(super().items()))
        yield first
        raise KeyboardInterrupt


def test_an_export_cut_short_leaves_nothing_behind_and_the_same_command_then_succeeds(tmp_path):
    files = export_run(live_run())
    target = tmp_path / "exports" / "run"
    with pytest.raises(KeyboardInterrupt):
        write_export(_CutShort(files), target)
    assert list((tmp_path / "exports").iterdir()) == []  # no half-written run, nothing hidden
    write_export(files, target)
    assert read_export(target) == files
    assert list((tmp_path / "exports").iterdir()) == [target]


def test_an_export_into_an_empty_directory_fills_it_where_it_is_and_empties_it_again_if_cut_short(
    tmp_path, monkeypatch
):
    # `.`, a mount point, or a directory whose mode was set for the run: it stays the same directory.
    files = export_run(live_run())
    target = tmp_path / "run"
    target.mkdir(mode=0o750)
    target.chmod(0o750)
    inode = target.stat().st_ino
    with pytest.raises(KeyboardInterrupt):
        write_export(_CutShort(files), target)
    assert list(target.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    monkeypatch.chdir(target)
    write_export(files, ".")
    assert read_export(target) == files
    assert (target.stat().st_ino, target.stat().st_mode & 0o777) == (inode, 0o750)


def test_writing_refuses_a_path_outside_the_export_directory(tmp_path):
    with pytest.raises(ValueError):
        write_export({"../escape.txt": b"x"}, tmp_path / "run")


def test_results_given_as_decoded_dicts_export_the_same_files():
    results = live_run()
    assert export_run([msgspec.to_builtins(result) for result in results]) == export_run(results)


def test_results_straight_from_the_engine_export_and_reload_the_same():
    from tests.helpers.eventkit import event, run_call

    def scenario_call(call_id: str, name: str, agent_llm_calls: int):
        tokens = [{"prompt_tokens": 10, "completion_tokens": 2}] * agent_llm_calls
        return run_call(
            [
                event(
                    "call.started",
                    {
                        "agent_id": "a",
                        "run_id": RUN,
                        "scenario": {"name": name, "success_signals": ["clean_exit"], "min_agent_turns": 2},
                    },
                    call_id=call_id,
                ),
                event("turn", {"role": "user", "text": "hi"}, call_id=call_id),
                event("turn", {"role": "agent", "text": "hello"}, call_id=call_id),
                event(
                    "rtvi",
                    {"side": "agent", "message": {"type": "metrics", "data": {"tokens": tokens}}},
                    call_id=call_id,
                ),
                event("call.ended", {"stop_reason": "[EXIT]", "end_conversation_tool_called": True}, call_id=call_id),
            ]
        )[1]

    results = scenario_call("k1", "eva__1", agent_llm_calls=2) + scenario_call("k2", "qa__1", agent_llm_calls=1)
    live = live_summary(results)
    # k1 exits cleanly with 2 agent LLM calls: success; k2 made 1 call (< 2), a counted failure: 1/2.
    assert live.success_rate.passed == 1 and live.success_rate.total == 2
    assert live.stall_warning.scenarios == ("qa__1",)
    # The stalled k2 is skipped in the clean-exit bucket: 1 of 1.
    assert (live.clean_exit_rate.passed, live.clean_exit_rate.total) == (1, 1)
    assert load_run(export_run(results), run_id=RUN).summary() == live


def test_each_metrics_json_names_the_directory_it_was_exported_to():
    results = [
        call_result("c2", metrics_doc("d__same")),
        call_result("c1", metrics_doc("d__same")),
        call_result("c3", metrics_doc("d__other")),
    ]
    files = export_run(results)
    for path, content in files.items():
        if path.endswith("/metrics.json"):
            assert json.loads(content)["scenario_directory"] == path.rsplit("/", 1)[0]


def test_a_name_too_long_for_a_directory_keeps_its_head_and_a_digest_and_stays_unique(tmp_path):
    long = "d__" + "x" * 300
    directories = scenario_directories({"c1": long, "c2": long, "c3": long + "y"})
    assert all(len(name.encode()) <= 240 for name in directories.values())
    assert len(set(directories.values())) == 3 and all(name.startswith("d__xxx") for name in directories.values())
    write_export(export_run([call_result(c, metrics_doc(n)) for c, n in (("c1", long), ("c2", long))]), str(tmp_path))
