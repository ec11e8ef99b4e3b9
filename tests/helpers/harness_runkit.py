"""A small run with every signal the harness's all_summary.txt prints: judge scores and passes, NL
assertions (verdicts in judge_result.json), DB-state matches and assertions, a stalled scenario, two
domains. Its expected all_summary.txt is tests/data/harness-run/, worked out by hand from the
harness's runner (`run_dynamic_evaluation` and `RunAggregator.add_scenario`)."""

from __future__ import annotations

from tests.helpers.runkit import call_result, db_verdicts, judge_doc, metrics_doc


def breakdown(passed=(), failed=(), not_applicable=(), excluded=()):
    return {
        "passed": list(passed),
        "failed": list(failed),
        "not_applicable": list(not_applicable),
        "excluded": list(excluded),
    }


def judged_run():
    return [
        # 12 turns in 90 s: 8.0 turns/min; 2 latencies. Fails on its NL assertions (1 of 3) and judge.
        call_result(
            "c1",
            metrics_doc(
                "retail__1",
                is_successful=False,
                is_task_successful=False,
                is_action_match=True,
                latencies_ms=(800.0, 1200.5),
                agent_tokens=(3, 1000, 50),
                user_tokens=(2, 500, 20),
                total_turns=12,
                scenario_duration=90.0,
                latency_stats={
                    "count": 2,
                    "mean_ms": 1000.25,
                    "p50_ms": 1200.5,
                    "p95_ms": 1200.5,
                    "min_ms": 800.0,
                    "max_ms": 1200.5,
                },
                success_breakdown=breakdown(["is_action_match", "clean_exit"], ["nl_assertion", "judge_passed"]),
                db_state_expected_hash="e",
                db_state_actual_hash="a",
                db_state_match=False,
                nl_assertion_pass_rate=1 / 3,
                judge_score=0.4,
                judge_passed=False,
            ),
            judge=judge_doc(0.4, [True, False, False]),
        ),
        # Passes; 2 of its 3 predicates hold (the predicates are outside its whitelist).
        call_result(
            "c2",
            metrics_doc(
                "telecom__1",
                is_successful=True,
                latencies_ms=(950.0,),
                agent_tokens=(4, 2000, 80),
                success_breakdown=breakdown(
                    ["nl_assertion", "judge_passed", "clean_exit"], excluded=["db_state_assertion"]
                ),
                db_state_assertion_verdicts=db_verdicts(True, True, False),
                db_state_assertion_pass_rate=2 / 3,
                nl_assertion_pass_rate=1.0,
                judge_score=0.95,
                judge_passed=True,
            ),
            judge=judge_doc(0.95, [True]),
        ),
        # Stalled: one agent LLM call against its floor of 2.
        call_result(
            "c3",
            metrics_doc(
                "telecom__2",
                is_successful=False,
                is_task_successful=False,
                agent_tokens=(1, 90, 12),
                insufficient_agent_turns=True,
                min_agent_turns=2,
                judge_score=0.5,
                judge_passed=False,
                db_state_assertion_verdicts=db_verdicts(True),
                db_state_assertion_pass_rate=1.0,
            ),
        ),
    ]
