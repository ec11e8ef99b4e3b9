"""Run-level summaries: every all_summary aggregate over its own denominator, incrementally."""

from __future__ import annotations

import pytest

from scorers.runs import RunSummary, parse_all_summary, render_all_summary
from scorers.runs import aggregate as aggregate_module
from scorers.runs.report import Mean, Rate, SideTokens
from tests.helpers.runkit import RUN, call_result, db_verdicts, judge_doc, metrics_doc


def summarize(*results, min_agent_turns: int | None = None):
    run = RunSummary(run_id=RUN, min_agent_turns=min_agent_turns)
    for result in results:
        run.add(result)
    return run.summary()


def calls(*documents):
    return [call_result(f"c{i}", document) for i, document in enumerate(documents)]


# --------------------------------------------------------------------------------------- success rates


def test_success_rate_excludes_scenarios_whose_is_successful_is_na():
    summary = summarize(
        *calls(
            metrics_doc("d__a", is_successful=True),
            metrics_doc("d__b", is_successful=False),
            metrics_doc("d__c", is_successful="N/A"),
        )
    )
    # 1 passed of the 2 with a boolean is_successful; the "N/A" one is in neither count.
    assert summary.success_rate == Rate(1, 2)
    assert summary.scenarios == 3


def test_task_success_rate_drops_clean_exit_over_the_same_scenarios():
    summary = summarize(
        *calls(
            metrics_doc("d__a", is_successful=False, is_task_successful=True, clean_exit=False),
            metrics_doc("d__b", is_successful=True),
            metrics_doc("d__c", is_successful="N/A"),
        )
    )
    # Same denominator as the success rate (2); both did the work: 2/2, while only 1/2 succeeded.
    assert summary.task_success_rate == Rate(2, 2)
    assert summary.success_rate == Rate(1, 2)


def test_task_success_is_not_counted_where_is_successful_is_na():
    # A document with a task verdict but an "N/A" composite stays out of the task rate's set too.
    summary = summarize(
        *calls(
            metrics_doc("d__a", is_successful="N/A") | {"is_task_successful": True},
            metrics_doc("d__b", is_successful=False, is_task_successful=False),
        )
    )
    assert summary.task_success_rate == Rate(0, 1)


def test_action_match_rate_counts_only_scenarios_where_it_was_a_bool():
    summary = summarize(
        *calls(
            metrics_doc("d__a", is_action_match=True),
            metrics_doc("d__b", is_action_match=False),
            metrics_doc("d__c", is_action_match="N/A"),
            metrics_doc("d__d", is_action_match=False),
        )
    )
    # Bools: True, False, False → 1/3; the "N/A" scenario is out of the denominator.
    assert summary.action_match_rate == Rate(1, 3)


def test_db_state_match_counts_only_scenarios_that_declared_an_expected_db():
    summary = summarize(
        *calls(metrics_doc("d__a", db_state_match=True), metrics_doc("d__b", db_state_match=False), metrics_doc("d__c"))
    )
    # d__c has no db_state_match key: 1 of 2 declared scenarios.
    assert summary.db_state_success_rate == Rate(1, 2)


def test_db_state_assertion_rate_is_over_predicates_not_scenarios():
    summary = summarize(
        *calls(
            metrics_doc("d__a", db_state_assertion_verdicts=db_verdicts(True), db_state_assertion_pass_rate=1.0),
            metrics_doc(
                "d__b", db_state_assertion_verdicts=db_verdicts(True, False, False), db_state_assertion_pass_rate=1 / 3
            ),
        )
    )
    # Predicates: 1 + 3 = 4, passing 1 + 1 = 2 → 2/4 (per scenario it would have been 1/2 passing at 1.0).
    assert summary.db_state_assertion_success_rate == Rate(2, 4)


def test_nl_assertion_rate_is_over_assertions_from_the_judge_result():
    one = call_result("c1", metrics_doc("d__a", nl_assertion_pass_rate=1.0), judge=judge_doc(nl_verdicts=[True]))
    three = call_result(
        "c2", metrics_doc("d__b", nl_assertion_pass_rate=1 / 3), judge=judge_doc(nl_verdicts=[False, True, False])
    )
    # Assertions 1 + 3 = 4, passing 1 + 1 = 2 → 2/4, not scenarios (1 of 2).
    assert summarize(one, three).nl_assertion_success_rate == Rate(2, 4)


def test_nl_assertions_count_only_from_the_verdict_list_beside_a_pass_rate():
    # Mirrors the harness's RunAggregator.add_scenario: verdicts are re-read from judge_result.json, and
    # only for a metrics.json with a numeric nl_assertion_pass_rate; the pass count alone counts nothing.
    counts_only = {"score": 1.0, "reason": "r", "nl_assertion_pass_count": 2, "nl_assertion_total": 5}
    assert (
        summarize(
            call_result("c1", metrics_doc("d__a", nl_assertion_pass_rate=0.4), judge=counts_only)
        ).nl_assertion_success_rate
        is None
    )
    no_rate = call_result("c1", metrics_doc("d__a"), judge=judge_doc(nl_verdicts=[True, False]))
    assert summarize(no_rate).nl_assertion_success_rate is None
    with_rate = call_result(
        "c1", metrics_doc("d__a", nl_assertion_pass_rate=0.5), judge=judge_doc(nl_verdicts=[True, False])
    )
    assert summarize(with_rate).nl_assertion_success_rate == Rate(1, 2)


def test_judge_score_mean_is_over_judged_scenarios_only():
    summary = summarize(
        *calls(metrics_doc("d__a", judge_score=0.9), metrics_doc("d__b", judge_score=0.6), metrics_doc("d__c"))
    )
    # (0.9 + 0.6) / 2 = 0.75; the unjudged scenario is not a zero.
    assert summary.judge_score_mean == Mean(0.75, 2)


def test_judge_pass_rate_counts_scenarios_with_a_judge_passed_bool():
    summary = summarize(
        *calls(
            metrics_doc("d__a", judge_score=0.95, judge_passed=True),
            metrics_doc("d__b", judge_score=0.5, judge_passed=False),
            metrics_doc("d__c", judge_score=0.7),
        )
    )
    # d__c was judged but had no threshold, hence no judge_passed: 1/2.
    assert summary.judge_pass_rate == Rate(1, 2)
    assert summary.judge_score_mean.count == 3


def test_clean_exit_rate_is_over_completed_scenarios():
    summary = summarize(
        *calls(
            metrics_doc("d__a", clean_exit=True),
            metrics_doc("d__b", clean_exit=False),
            metrics_doc("d__c", clean_exit=False),
        )
    )
    # 1 of 3.
    assert summary.clean_exit_rate == Rate(1, 3)


def test_a_rate_with_an_empty_bucket_is_none_and_left_out_of_the_text():
    summary = summarize(*calls(metrics_doc("d__a", is_successful="N/A")))
    assert summary.success_rate is None
    assert summary.db_state_success_rate is None
    assert summary.judge_score_mean is None
    text = render_all_summary(summary)
    assert "Overall Success Rate" not in text
    assert "DB-State match" not in text
    assert "Judge score mean" not in text
    assert "Clean exit: 100.00% (1/1)" in text


# --------------------------------------------------------------------------------------- domains


def three_domain_run():
    return calls(
        metrics_doc("eva_airline__1", is_successful=True, db_state_match=True),
        metrics_doc("eva_airline__2", is_successful=False, db_state_match=False),
        metrics_doc("tau2_retail__1", is_successful=True, db_state_match=True),
        metrics_doc(
            "tau2_telecom__1",
            is_successful=False,
            is_task_successful=True,
            clean_exit=False,
            db_state_assertion_verdicts=db_verdicts(True, False, True),
        ),
    )


def test_a_run_over_three_domains_has_a_block_per_domain():
    summary = summarize(*three_domain_run())
    assert [domain.domain for domain in summary.domains] == ["eva_airline", "tau2_retail", "tau2_telecom"]
    eva, retail, telecom = summary.domains
    # eva_airline: 1 of 2 succeeded, 1 of 2 DB states matched; no assertions → no assertion rate.
    assert (eva.scenarios, eva.success_rate, eva.db_state_success_rate) == (2, Rate(1, 2), Rate(1, 2))
    assert eva.db_state_assertion_success_rate is None
    assert retail.success_rate == Rate(1, 1)
    # tau2_telecom: 2 of 3 predicates; failed only on clean exit, so its task succeeded.
    assert telecom.db_state_assertion_success_rate == Rate(2, 3)
    assert telecom.task_success_rate == Rate(1, 1)
    text = render_all_summary(summary)
    assert "Per-Domain Breakdown:" in text
    assert "  eva_airline (2 scenarios):\n    Overall Success Rate: 50.00% (1/2)\n" in text
    assert "  tau2_telecom (1 scenario):\n" in text


def test_a_domain_block_shows_only_the_five_per_domain_rates():
    summary = summarize(
        *calls(
            metrics_doc("a__1", judge_score=0.5, judge_passed=False, is_action_match=True),
            metrics_doc("b__1", judge_score=0.5, judge_passed=False, is_action_match=True),
        )
    )
    block = render_all_summary(summary).split("Per-Domain Breakdown:")[1].split("Overall Latency Statistics")[0]
    assert "Overall Success Rate" in block and "Task Success Rate (excl. clean_exit)" in block
    for label in ("Judge", "Action-list match", "Clean exit"):
        assert label not in block


def test_a_single_domain_run_has_no_per_domain_blocks():
    summary = summarize(*calls(metrics_doc("eva_airline__1"), metrics_doc("eva_airline__2")))
    assert summary.domains == ()
    assert "Per-Domain Breakdown" not in render_all_summary(summary)


def test_a_scenario_name_without_separator_is_its_own_domain():
    summary = summarize(*calls(metrics_doc("restaurant"), metrics_doc("qa__1")))
    assert [domain.domain for domain in summary.domains] == ["qa", "restaurant"]


# --------------------------------------------------------------------------------------- latency, tokens


def test_overall_latency_is_pooled_over_every_sample_of_the_run():
    summary = summarize(
        *calls(metrics_doc("d__a", latencies_ms=(100.0, 300.0)), metrics_doc("d__b", latencies_ms=(200.0,)))
    )
    # Sorted [100, 200, 300]: mean 200, p50 = s[3 // 2] = 200, p95 = s[int(3 * 0.95)] = s[2] = 300.
    assert summary.overall_latency_stats == {
        "count": 3,
        "mean_ms": 200.0,
        "p50_ms": 200.0,
        "p95_ms": 300.0,
        "min_ms": 100.0,
        "max_ms": 300.0,
    }


def test_overall_latency_is_minus_one_for_each_figure_when_nothing_was_measured():
    summary = summarize(*calls(metrics_doc("d__a")))
    assert summary.overall_latency_stats == {
        "count": -1,
        "mean_ms": -1,
        "p50_ms": -1,
        "p95_ms": -1,
        "min_ms": -1,
        "max_ms": -1,
    }
    assert "  count: -1\n  mean_ms: -1\n" in render_all_summary(summary)


def test_token_usage_sums_each_side_and_the_run_total():
    summary = summarize(
        *calls(
            metrics_doc("d__a", agent_tokens=(3, 300, 60), user_tokens=(2, 100, 20)),
            metrics_doc("d__b", agent_tokens=(1, 50, 10)),
        )
    )
    # Agent 3 + 1 = 4 calls, 350 prompt, 70 completion (420 tokens); user 2 calls, 100 + 20 = 120 tokens.
    assert summary.token_usage.agent == SideTokens(4, 350, 70)
    assert summary.token_usage.user == SideTokens(2, 100, 20)
    assert summary.token_usage.run_total == SideTokens(6, 450, 90)
    text = render_all_summary(summary)
    assert "  agent: n_calls=4 prompt=350 completion=70 total=420\n" in text
    assert "  Run total: n_calls=6 prompt=450 completion=90 total=540\n" in text


def test_token_block_is_suppressed_when_no_token_events_were_received():
    summary = summarize(*calls(metrics_doc("d__a"), metrics_doc("d__b")))
    assert summary.token_usage is None
    assert "Token Usage" not in render_all_summary(summary)


# --------------------------------------------------------------------------------------- stalled scenarios


def stalled_doc(name: str, **signals):
    return metrics_doc(name, is_successful=False, is_task_successful=False, insufficient_agent_turns=True, **signals)


def test_stall_warning_lists_the_stalled_scenarios_with_the_floor_and_a_resume_command():
    summary = summarize(
        *calls(stalled_doc("d__b", min_agent_turns=3), metrics_doc("d__c"), stalled_doc("d__a", min_agent_turns=3))
    )
    assert summary.stall_warning.scenarios == ("d__a", "d__b")
    text = render_all_summary(summary, resume_command="callqa replay calls.jsonl")
    assert (
        "WARNING: 2 scenario(s) had fewer than 3 agent turn(s) (insufficient_agent_turns) and were counted as "
        "failures.\n  d__a\n  d__b\nResume them with: callqa replay calls.jsonl\n"
    ) in text


def test_stall_warning_states_the_floor_each_result_gives_and_the_default_for_the_others():
    summary = summarize(*calls(stalled_doc("d__b", min_agent_turns=5), stalled_doc("d__a")))
    assert (summary.stall_warning.scenarios, summary.stall_warning.floors) == (("d__a", "d__b"), (2, 5))
    assert (
        "WARNING: 2 scenario(s) had fewer agent turns than their floor (insufficient_agent_turns) and were "
        "counted as failures.\n  d__a (fewer than 2)\n  d__b (fewer than 5)\n"
    ) in render_all_summary(summary)


def test_a_run_wide_floor_stalls_scenarios_by_their_agent_llm_calls_as_the_harness_does():
    # Mirrors the harness's add_scenario with min_agent_turns > 0: token_usage.agent.n_calls below the
    # floor stalls a scenario whatever its own verdict; a floor of 0 stalls none, even one scored stalled.
    run = calls(
        metrics_doc("d__a", agent_tokens=(1, 5, 5)),
        metrics_doc("d__b", agent_tokens=(3, 5, 5)),
        stalled_doc("d__c", agent_tokens=(4, 5, 5)),
    )
    at_three = summarize(*run, min_agent_turns=3)
    assert (at_three.stall_warning.scenarios, at_three.stall_warning.floors) == (("d__a",), (3,))
    assert at_three.success_rate == Rate(1, 3)
    at_zero = summarize(*run, min_agent_turns=0)
    assert at_zero.stall_warning is None and at_zero.clean_exit_rate == Rate(3, 3)
    same = summarize(*calls(stalled_doc("d__b", min_agent_turns=5), stalled_doc("d__a", min_agent_turns=5)))
    assert "WARNING: 2 scenario(s) had fewer than 5 agent turn(s) (insufficient_agent_turns)" in render_all_summary(
        same
    )


def test_no_stall_warning_when_no_scenario_stalled():
    summary = summarize(*calls(metrics_doc("d__a")))
    assert summary.stall_warning is None
    assert "WARNING" not in render_all_summary(summary)


def test_a_stalled_scenario_is_a_counted_failure_but_skipped_in_per_signal_buckets():
    summary = summarize(
        *calls(
            stalled_doc(
                "d__a",
                clean_exit=True,
                is_action_match=True,
                db_state_match=True,
                judge_score=1.0,
                judge_passed=True,
                db_state_assertion_verdicts=db_verdicts(True),
                latencies_ms=(500.0,),
                agent_tokens=(1, 10, 5),
            ),
            metrics_doc("d__b", is_successful=False, clean_exit=False, is_action_match=False, db_state_match=False),
        )
    )
    # Composite: 0 of 2 (the stall counts as a failure); per-signal buckets see only d__b.
    assert summary.success_rate == Rate(0, 2)
    assert summary.clean_exit_rate == Rate(0, 1)
    assert summary.action_match_rate == Rate(0, 1)
    assert summary.db_state_success_rate == Rate(0, 1)
    assert summary.judge_pass_rate is None and summary.judge_score_mean is None
    assert summary.db_state_assertion_success_rate is None
    # Its latency and token usage still roll up.
    assert summary.overall_latency_stats["count"] == 1
    assert summary.token_usage.agent == SideTokens(1, 10, 5)


def test_a_stalled_scenario_fails_even_if_its_document_says_na():
    # The runner forces stalled scenarios to is_successful false; a document saying "N/A" still counts 0/1.
    assert summarize(*calls(stalled_doc("d__a") | {"is_successful": "N/A"})).success_rate == Rate(0, 1)


# --------------------------------------------------------------------------------------- rescore, resume


def test_a_rescore_replaces_the_calls_earlier_contribution():
    run = RunSummary(run_id=RUN)
    run.add(call_result("c1", metrics_doc("d__a", is_successful=False), version=1))
    run.add(call_result("c2", metrics_doc("d__b", is_successful=True), version=1))
    assert run.summary().success_rate == Rate(1, 2)
    run.add(call_result("c1", metrics_doc("d__a", is_successful=True), version=2))
    # c1 now succeeded: 2 of 2 scenarios, not 2 of 3.
    assert run.summary().success_rate == Rate(2, 2)
    assert run.summary().scenarios == 2


def test_an_older_version_arriving_late_changes_nothing():
    run = RunSummary(run_id=RUN)
    run.add(call_result("c1", metrics_doc("d__a", is_successful=True), version=2))
    assert run.add(call_result("c1", metrics_doc("d__a", is_successful=False), version=1)) is False
    assert run.summary().success_rate == Rate(1, 1)


def test_a_rescore_can_clear_a_stall_and_move_the_call_to_another_domain():
    run = RunSummary(run_id=RUN)
    run.add(call_result("c1", stalled_doc("old__a"), version=1))
    run.add(call_result("c2", metrics_doc("new__b"), version=1))
    assert len(run.summary().domains) == 2
    run.add(call_result("c1", metrics_doc("new__a"), version=2))
    summary = run.summary()
    assert summary.stall_warning is None
    assert summary.domains == ()  # one domain left
    assert summary.success_rate == Rate(2, 2)


def test_replacing_every_call_gives_the_same_summary_as_only_the_final_versions():
    first = [
        call_result(
            f"c{i}",
            metrics_doc(
                f"d{i % 2}__{i}",
                is_successful=i % 3 == 0,
                judge_score=0.1 * i,
                latencies_ms=(float(i),),
                agent_tokens=(i, 10 * i, i),
            ),
            version=1,
        )
        for i in range(6)
    ]
    final = [
        call_result(
            f"c{i}",
            metrics_doc(
                f"d{i % 3}__{i}", is_successful=i % 2 == 0, judge_score=0.3, judge_passed=True, agent_tokens=(1, 7, 3)
            ),
            judge=judge_doc(nl_verdicts=[True, i % 2 == 0]),
            version=2,
        )
        for i in range(6)
    ]
    incremental = RunSummary(run_id=RUN)
    for result in first + final:
        incremental.add(result)
    fresh = RunSummary(run_id=RUN)
    for result in reversed(final):
        fresh.add(result)
    # Exact: integer counts and an exact judge-score sum leave nothing behind when a version is taken back.
    assert incremental.summary() == fresh.summary()
    assert incremental.summary().judge_score_mean == Mean(0.3, 6)


def test_adding_a_result_reads_only_that_call(monkeypatch):
    run = RunSummary(run_id=RUN)
    for result in calls(*(metrics_doc(f"d__{i}") for i in range(50))):
        run.add(result)
    reads = []
    original = aggregate_module.read_scenario
    monkeypatch.setattr(aggregate_module, "read_scenario", lambda *a, **k: reads.append(a) or original(*a, **k))
    run.add(call_result("c7", metrics_doc("d__7", is_successful=False), version=2))
    assert len(reads) == 1
    assert run.summary().success_rate == Rate(49, 50)


def test_scenario_files_count_a_signal_only_when_its_key_is_present_and_well_typed():
    run = RunSummary(run_id=RUN)
    old = metrics_doc(
        "d__a", judge_score="high", db_state_match="yes", judge_passed=1, db_state_assertion_verdicts="none"
    )
    del old["is_action_match"], old["clean_exit"]
    run.add_scenario_files(old, judge_result=None)
    summary = run.summary()
    assert summary.success_rate == Rate(1, 1)
    for absent in (
        summary.judge_score_mean,
        summary.db_state_success_rate,
        summary.judge_pass_rate,
        summary.db_state_assertion_success_rate,
        summary.action_match_rate,
        summary.clean_exit_rate,
    ):
        assert absent is None


def test_scenario_files_read_nl_verdicts_from_the_judge_result():
    run = RunSummary(run_id=RUN)
    run.add_scenario_files(metrics_doc("d__a", nl_assertion_pass_rate=0.5), judge_doc(nl_verdicts=[True, False]))
    assert run.summary().nl_assertion_success_rate == Rate(1, 2)


def test_scenario_files_with_the_same_key_replace_and_without_a_key_add():
    run = RunSummary(run_id=RUN)
    run.add_scenario_files(metrics_doc("d__a", is_successful=False), key="d__a")
    run.add_scenario_files(metrics_doc("d__a", is_successful=True), key="d__a")
    assert run.summary().success_rate == Rate(1, 1)
    run.add_scenario_files(metrics_doc("d__b"))
    run.add_scenario_files(metrics_doc("d__b"))
    assert run.summary().scenarios == 3


def test_a_result_of_another_run_is_refused():
    with pytest.raises(ValueError):
        RunSummary(run_id=RUN).add(call_result("c1", metrics_doc("d__a"), run_id="other-run"))


def test_a_result_given_as_a_decoded_dict_counts_like_the_typed_one():
    import msgspec

    typed = call_result("c1", metrics_doc("d__a", db_state_match=True), judge=judge_doc(nl_verdicts=[True]))
    assert summarize(msgspec.to_builtins(typed)) == summarize(typed)


# --------------------------------------------------------------------------------------- text and JSON


def test_every_rate_prints_as_percent_with_passed_over_total_and_parses_back():
    summary = summarize(*three_domain_run())
    text = render_all_summary(summary)
    # 2 of 4 scenarios succeeded.
    assert "Overall Success Rate: 50.00% (2/4)\n" in text
    assert "DB-State match: 66.67% (2/3)\n" in text
    parsed = parse_all_summary(text)
    assert parsed["Overall Success Rate"] == 2 / 4
    assert parsed["Task Success Rate (excl. clean_exit)"] == 3 / 4
    assert parsed["DB-State-Assertion pass"] == 2 / 3
    assert parsed["eva_airline / DB-State match"] == 1 / 2
    assert parsed["tau2_telecom / DB-State-Assertion pass"] == 2 / 3
    assert "Action-list match" not in parsed


def test_the_text_uses_the_harness_labels():
    summary = summarize(
        call_result(
            "c1",
            metrics_doc(
                "a__1",
                is_action_match=True,
                db_state_match=True,
                judge_score=0.8,
                judge_passed=True,
                db_state_assertion_verdicts=db_verdicts(True),
                nl_assertion_pass_rate=1.0,
                agent_tokens=(1, 1, 1),
            ),
            judge=judge_doc(nl_verdicts=[True]),
        ),
    )
    labels = set(parse_all_summary(render_all_summary(summary)))
    assert labels == {
        "Overall Success Rate",
        "Task Success Rate (excl. clean_exit)",
        "Action-list match",
        "DB-State match",
        "DB-State-Assertion pass",
        "NL-Assertion pass",
        "Judge score mean",
        "Judge passed (>= threshold)",
        "Clean exit",
    }
    text = render_all_summary(summary)
    assert "Overall Latency Statistics:" in text and "Token Usage:" in text and "  Run total: " in text


def test_json_form_names_rates_by_runner_name_with_null_for_empty_buckets():
    document = summarize(*three_domain_run()).to_dict()
    assert document["run_id"] == RUN
    assert document["success_rate"] == {"passed": 2, "total": 4, "rate": 0.5}
    assert document["action_match_rate"] is None
    assert document["domains"]["tau2_telecom"]["db_state_assertion_success_rate"] == {
        "passed": 2,
        "total": 3,
        "rate": 2 / 3,
    }
    assert document["token_usage"] is None and document["stall_warning"] is None
    assert document["overall_latency_stats"]["count"] == -1


def test_a_domain_that_is_empty_or_starts_with_a_space_is_parsed_back_as_its_own_block():
    def result(call_id: str, name: str, ok: bool) -> dict:
        return {
            "call_id": call_id,
            "version": 1,
            "run_id": "r",
            "evaluation": {"scenario_name": name, "is_successful": ok, "is_task_successful": ok},
        }

    summary = RunSummary(run_id="r")
    for index, (name, ok) in enumerate([("__x", True), (" sp__y", False), ("b__z", False)]):
        summary.add(result(f"c{index}", name, ok))
    parsed = parse_all_summary(render_all_summary(summary.summary()))
    assert parsed["Overall Success Rate"] == pytest.approx(1 / 3)
    assert parsed[" / Overall Success Rate"] == 1.0 and parsed[" sp / Overall Success Rate"] == 0.0
