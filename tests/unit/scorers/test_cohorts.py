"""Cohort verdicts: which calls a cohort scores, which metrics and criteria count, the weighted score
Σ weight × score / Σ weight, and pass/fail against the cohort's pass threshold."""

import pytest

from models.call_state import CallState, TurnRecord
from models.events import JudgeResultData
from models.results import MetricResult
from scorers.cohorts import CohortBook
from scorers.engine import CallEngine
from tests.helpers.eventkit import event, run_call


def scored(name: str, score: float, value=None) -> MetricResult:
    return MetricResult(metric=name, value=score if value is None else value, score=score, passed=None, details={})


def not_applicable(name: str, reason: str = "No user speech") -> MetricResult:
    return MetricResult(metric=name, value=None, score=None, passed=None, details={"reason": reason})


def call(agent_id: str | None = "agent-1", cohort_ids=("c",), judge=None) -> CallState:
    state = CallState(call_id="call-1", agent_id=agent_id, cohort_ids=list(cohort_ids), version=1)
    state.turns.append(TurnRecord(ts_ms=0, role="agent", text="Hello"))  # (a call whose agent never spoke fails)
    state.judge = judge
    return state


EVALUATION = {
    "stop_reason": "[EXIT]",
    "total_turns": 4,
    "turns": [{"role": "user", "text": "hi"}, {"role": "agent", "text": "hello"}],
    "token_usage": {"agent": {"n_calls": 2}},
}


def book(*documents) -> CohortBook:
    cohorts = CohortBook()
    for document in documents:
        cohorts.apply(document)
    return cohorts


def cohort(cohort_id="c", **fields):
    return {"cohort_id": cohort_id, "name": cohort_id.upper(), **fields}


def only_verdict(cohorts: CohortBook, metrics, state=None, evaluation=EVALUATION):
    (verdict,) = cohorts.verdicts(state or call(), metrics, evaluation)
    return verdict


# ------------------------------------------------------------------------------ no cohorts


def test_a_book_without_cohorts_gives_no_verdicts():
    assert CohortBook().verdicts(call(), [scored("wer", 90)], EVALUATION) == []


# ---------------------------------------------------------------------------- weighted score


def test_weighted_score_is_the_weight_weighted_mean_of_the_scores():
    cohorts = book(cohort(metrics=[{"metric": "hallucination", "weight": 2}, {"metric": "wer", "weight": 1}]))
    verdict = only_verdict(cohorts, [scored("hallucination", 90), scored("wer", 60)])
    # (2 × 90 + 1 × 60) / (2 + 1) = 240 / 3 = 80.0
    assert verdict.weighted_score == 80.0
    assert verdict.metrics_counted == ["hallucination", "wer"]


def test_weighted_score_is_rounded_to_one_decimal():
    cohorts = book(cohort(metrics=[{"metric": "hallucination", "weight": 1}, {"metric": "wer", "weight": 2}]))
    verdict = only_verdict(cohorts, [scored("hallucination", 100), scored("wer", 50)])
    # (1 × 100 + 2 × 50) / 3 = 66.666… → 66.7
    assert verdict.weighted_score == 66.7


def test_weighted_score_rounds_half_up():
    cohorts = book(cohort(metrics=[{"metric": "hallucination"}, {"metric": "wer"}]))
    # (70.1 + 70.2) / 2 = 70.15 → 70.2
    assert only_verdict(cohorts, [scored("hallucination", 70.1), scored("wer", 70.2)]).weighted_score == 70.2


def test_a_not_applicable_metric_is_left_out_of_the_weighted_score():
    cohorts = book(cohort(metrics=[{"metric": "hallucination", "weight": 1}, {"metric": "wer", "weight": 5}]))
    verdict = only_verdict(cohorts, [scored("hallucination", 90), not_applicable("wer")])
    # wer does not apply, so its weight 5 is not in the denominator: 1 × 90 / 1 = 90.0
    assert verdict.weighted_score == 90.0
    assert verdict.metrics_counted == ["hallucination"]
    assert verdict.details["metrics"]["wer"] == {
        "score": None,
        "threshold": 80,
        "passed": None,
        "weight": 5,
        "reason": "No user speech",
    }


def test_metrics_the_cohort_does_not_list_are_left_out():
    cohorts = book(cohort(metrics=[{"metric": "wer"}]))
    verdict = only_verdict(cohorts, [scored("hallucination", 10), scored("wer", 90)])
    assert verdict.weighted_score == 90.0
    assert list(verdict.details["metrics"]) == ["wer"]


def test_nothing_applicable_gives_no_weighted_score_and_no_verdict():
    cohorts = book(cohort(metrics=[{"metric": "wer"}]))
    verdict = only_verdict(cohorts, [not_applicable("wer")])
    assert (verdict.weighted_score, verdict.passed, verdict.metrics_counted) == (None, None, [])


def test_all_applicable_weights_zero_gives_no_weighted_score():
    cohorts = book(cohort(metrics=[{"metric": "wer", "weight": 0}]))
    verdict = only_verdict(cohorts, [scored("wer", 90)])
    assert (verdict.weighted_score, verdict.passed) == (None, None)
    assert verdict.metrics_counted == ["wer"]  # it applied; it just weighs nothing


# ---------------------------------------------------------------------------------- thresholds


def test_a_metric_passes_at_its_default_threshold_when_the_cohort_sets_none():
    cohorts = book(cohort(metrics=[{"metric": "hallucination"}]))
    detail = only_verdict(cohorts, [scored("hallucination", 75)]).details["metrics"]["hallucination"]
    # hallucination's default pass-at is 70; 75 >= 70
    assert detail == {"score": 75, "threshold": 70, "passed": True, "weight": 1}


def test_a_cohort_threshold_replaces_the_default():
    cohorts = book(cohort(metrics=[{"metric": "hallucination", "threshold": 80}]))
    detail = only_verdict(cohorts, [scored("hallucination", 75)]).details["metrics"]["hallucination"]
    # 75 < 80, although it passes the default 70
    assert detail == {"score": 75, "threshold": 80, "passed": False, "weight": 1}


def test_a_metric_score_equal_to_the_threshold_passes():
    cohorts = book(cohort(metrics=[{"metric": "wer", "threshold": 85.5}]))
    assert only_verdict(cohorts, [scored("wer", 85.5)]).details["metrics"]["wer"]["passed"] is True


def test_verdict_passes_when_the_weighted_score_equals_the_pass_threshold():
    cohorts = book(cohort(metrics=[{"metric": "hallucination", "weight": 2}, {"metric": "wer"}], pass_threshold=80))
    verdict = only_verdict(cohorts, [scored("hallucination", 90), scored("wer", 60)])
    # (2 × 90 + 60) / 3 = 80.0 = pass_threshold
    assert (verdict.weighted_score, verdict.passed) == (80.0, True)


def test_verdict_fails_just_below_the_pass_threshold():
    cohorts = book(cohort(metrics=[{"metric": "wer"}], pass_threshold=80))
    verdict = only_verdict(cohorts, [scored("wer", 79.9)])
    assert (verdict.weighted_score, verdict.passed) == (79.9, False)


def test_the_default_pass_threshold_is_70():
    cohorts = book(cohort(metrics=[{"metric": "wer"}]))
    assert only_verdict(cohorts, [scored("wer", 70)]).passed is True
    assert only_verdict(cohorts, [scored("wer", 69.9)]).passed is False


def test_verdict_details_carry_the_name_and_pass_threshold():
    cohorts = book(cohort(metrics=[{"metric": "wer"}], pass_threshold=65))
    details = only_verdict(cohorts, [scored("wer", 90)]).details
    assert (details["name"], details["pass_threshold"]) == ("C", 65)


# ------------------------------------------------------------------------------- rule criteria


METRICS = [
    scored("wer", 92.5, value=0.075),
    scored("latency", 94, value=1180),
    not_applicable("kb_recall", "No knowledge base retrievals in this call"),
]


def rule_met(field, op, value=None, state=None) -> bool:
    rule = {"name": "r", "field": field, "op": op}
    if value is not None:
        rule["value"] = value
    verdict = only_verdict(book(cohort(criteria=[rule])), METRICS, state)
    return verdict.details["criteria"]["r"]["met"]


@pytest.mark.parametrize(
    "field, op, value, met",
    [
        ("evaluation.stop_reason", "eq", "[EXIT]", True),
        ("evaluation.stop_reason", "eq", "[MAX_TURNS]", False),
        ("evaluation.stop_reason", "ne", "[MAX_TURNS]", True),
        ("evaluation.stop_reason", "ne", "[EXIT]", False),
        ("evaluation.total_turns", "lt", 5, True),
        ("evaluation.total_turns", "lt", 4, False),
        ("evaluation.total_turns", "le", 4, True),
        ("evaluation.total_turns", "le", 3, False),
        ("evaluation.total_turns", "gt", 3, True),
        ("evaluation.total_turns", "gt", 4, False),
        ("evaluation.total_turns", "ge", 4, True),
        ("evaluation.total_turns", "ge", 5, False),
        ("agent_id", "in", ["agent-1", "agent-2"], True),
        ("agent_id", "in", ["agent-2"], False),
        ("agent_id", "not_in", ["agent-2"], True),
        ("agent_id", "not_in", ["agent-1"], False),
        ("evaluation.stop_reason", "contains", "EXIT", True),
        ("evaluation.stop_reason", "contains", "TURNS", False),
        ("cohort_ids", "contains", "c", True),
        ("cohort_ids", "contains", "vip", False),
        ("evaluation.token_usage", "contains", "agent", True),
        ("evaluation.token_usage", "contains", "user", False),
        ("metrics.latency.score", "exists", None, True),
        ("metrics.kb_recall.score", "exists", None, False),
        ("metrics.kb_recall.score", "exists", False, True),
        ("evaluation.judge_result", "exists", None, False),
    ],
)
def test_rule_criterion_ops(field, op, value, met):
    assert rule_met(field, op, value) is met


def test_a_rule_reads_a_metric_value_and_score_by_metric_name():
    assert rule_met("metrics.latency.value", "le", 1200) is True  # 1180 <= 1200
    assert rule_met("metrics.wer.score", "ge", 95) is False  # 92.5 < 95


def test_a_rule_reads_metric_details():
    state = call()
    metrics = [MetricResult(metric="latency", value=1180, score=94, passed=True, details={"e2e": {"p90": 1520}})]
    rule = {"name": "r", "field": "metrics.latency.details.e2e.p90", "op": "lt", "value": 2000}
    assert only_verdict(book(cohort(criteria=[rule])), metrics, state).details["criteria"]["r"]["met"] is True


def test_a_rule_indexes_lists_by_number():
    assert rule_met("evaluation.turns.1.role", "eq", "agent") is True
    assert rule_met("evaluation.turns.9.role", "exists") is False


def test_a_missing_field_reads_as_null():
    assert rule_met("evaluation.judge_result.score", "ge", 0) is False
    assert rule_met("evaluation.judge_result.score", "ne", 0) is True


def test_ordering_a_number_against_a_string_is_not_met():
    assert rule_met("evaluation.total_turns", "gt", "3") is False


def test_a_boolean_field_does_not_equal_a_number():
    # the hand-built call has not ended, so `final` is false; Python alone would say False == 0
    assert rule_met("final", "eq", 0) is False
    assert rule_met("final", "eq", False) is True


def test_a_rule_on_the_result_version_and_final_flag():
    state = call()
    state.version = 2
    assert rule_met("version", "eq", 2, state) is True
    assert rule_met("final", "eq", True, state) is False  # the hand-built call has not ended


def test_a_met_criterion_scores_100_and_a_missed_one_0():
    rules = [
        {"name": "exited", "field": "evaluation.stop_reason", "op": "eq", "value": "[EXIT]"},
        {"name": "long", "field": "evaluation.total_turns", "op": "ge", "value": 10, "weight": 2},
    ]
    verdict = only_verdict(book(cohort(metrics=[{"metric": "wer"}], criteria=rules)), [scored("wer", 80)])
    # (1 × 80 + 1 × 100 + 2 × 0) / (1 + 1 + 2) = 180 / 4 = 45.0
    assert verdict.weighted_score == 45.0
    assert verdict.details["criteria"] == {"exited": {"met": True, "weight": 1}, "long": {"met": False, "weight": 2}}


# -------------------------------------------------------------------------------- LLM criteria

LLM = {"name": "resolved", "kind": "llm", "question": "Did the agent resolve the issue?"}


def test_an_llm_criterion_is_not_applicable_until_judged():
    cohorts = book(cohort(metrics=[{"metric": "wer"}], criteria=[LLM]))
    verdict = only_verdict(cohorts, [scored("wer", 90)])
    # only wer applies: 90 / 1
    assert verdict.weighted_score == 90.0
    assert verdict.details["criteria"]["resolved"] == {"met": None, "weight": 1, "reason": "No judge verdict yet"}


def test_a_judged_llm_criterion_counts():
    judge = JudgeResultData(criteria={"resolved": {"passed": False, "reason": "The caller hung up unhelped"}})
    cohorts = book(cohort(metrics=[{"metric": "wer"}], criteria=[LLM]))
    verdict = only_verdict(cohorts, [scored("wer", 90)], call(judge=judge))
    # (90 + 0) / 2 = 45.0
    assert verdict.weighted_score == 45.0
    assert verdict.details["criteria"]["resolved"] == {
        "met": False,
        "weight": 1,
        "reason": "The caller hung up unhelped",
    }


def test_a_judge_answer_without_this_criterion_leaves_it_not_applicable():
    judge = JudgeResultData(criteria={"polite": {"passed": True, "reason": ""}})
    verdict = only_verdict(book(cohort(criteria=[LLM])), [], call(judge=judge))
    assert (verdict.weighted_score, verdict.details["criteria"]["resolved"]["met"]) == (None, None)


def test_a_non_boolean_judge_verdict_counts_as_not_met():
    judge = JudgeResultData(criteria={"resolved": {"passed": "yes"}})
    verdict = only_verdict(book(cohort(criteria=[LLM])), [], call(judge=judge))
    assert verdict.weighted_score == 0.0
    assert verdict.details["criteria"]["resolved"]["reason"] == "Invalid judge verdict: passed is 'yes', not a boolean"


# ---------------------------------------------------------------------------------- membership


def test_a_call_belongs_to_the_cohorts_it_names():
    cohorts = book(cohort("vip", metrics=[{"metric": "wer"}]), cohort("other", metrics=[{"metric": "wer"}]))
    verdicts = cohorts.verdicts(call(cohort_ids=["vip"]), [scored("wer", 90)], EVALUATION)
    assert [v.cohort_id for v in verdicts] == ["vip"]


def test_a_call_belongs_to_a_cohort_whose_agent_glob_matches_its_agent():
    cohorts = book(cohort("billing", agents=["billing-*"], metrics=[{"metric": "wer"}]))
    assert [v.cohort_id for v in cohorts.verdicts(call("billing-eu", []), [scored("wer", 90)], EVALUATION)] == [
        "billing"
    ]
    assert cohorts.verdicts(call("support-eu", []), [scored("wer", 90)], EVALUATION) == []


def test_an_exact_agent_id_matches_and_the_match_is_case_sensitive():
    cohorts = book(cohort("a", agents=["Agent-7"], metrics=[{"metric": "wer"}]))
    assert len(cohorts.verdicts(call("Agent-7", []), [scored("wer", 90)], EVALUATION)) == 1
    assert cohorts.verdicts(call("agent-7", []), [scored("wer", 90)], EVALUATION) == []


def test_a_call_without_an_agent_only_joins_by_cohort_id():
    cohorts = book(cohort("all", agents=["*"], metrics=[{"metric": "wer"}]))
    assert cohorts.verdicts(call(None, []), [scored("wer", 90)], EVALUATION) == []


def test_verdicts_are_sorted_by_cohort_id():
    cohorts = book(*(cohort(cid, agents=["*"], metrics=[{"metric": "wer"}]) for cid in ["m", "b", "z", "a"]))
    assert [v.cohort_id for v in cohorts.verdicts(call(), [scored("wer", 90)], EVALUATION)] == ["a", "b", "m", "z"]


# ------------------------------------------------------------------------------- definitions


def test_apply_replaces_a_cohort_with_the_same_id():
    cohorts = book(cohort(metrics=[{"metric": "wer"}]), cohort(metrics=[{"metric": "latency"}]))
    assert [m.metric for m in cohorts.get("c").metrics] == ["latency"]
    assert len(cohorts) == 1


def test_a_deleted_document_removes_the_cohort():
    cohorts = book(cohort(metrics=[{"metric": "wer"}]), {"cohort_id": "c", "deleted": True})
    assert (cohorts.get("c"), cohorts.all()) == (None, [])
    assert cohorts.verdicts(call(), [scored("wer", 90)], EVALUATION) == []


def test_delete_by_id_removes_the_cohort():
    cohorts = book(cohort(metrics=[{"metric": "wer"}]))
    cohorts.delete("c")
    assert cohorts.all() == []


def test_all_lists_cohorts_by_id():
    cohorts = book(cohort("b"), cohort("a"))
    assert [c.cohort_id for c in cohorts.all()] == ["a", "b"]


def test_an_invalid_document_leaves_the_book_unchanged():
    from models.cohorts import CohortError

    cohorts = book(cohort(metrics=[{"metric": "wer"}]))
    with pytest.raises(CohortError):
        cohorts.apply(cohort(metrics=[{"metric": "empathy"}]))
    assert [m.metric for m in cohorts.get("c").metrics] == ["wer"]


# ------------------------------------------------------------------------------ in the engine


def started(call_id="c1", cohort_ids=("vip",), agent_id="agent-1"):
    return event("call.started", {"agent_id": agent_id, "cohort_ids": list(cohort_ids)}, call_id=call_id)


def test_the_engine_publishes_cohort_verdicts_and_rescores_them():
    cohorts = book(
        cohort(
            "vip",
            metrics=[{"metric": "sentiment", "weight": 2}],
            criteria=[
                {"name": "exited", "field": "evaluation.stop_reason", "op": "eq", "value": "[EXIT]"},
            ],
        )
    )
    _, results = run_call(
        [
            started(),
            event("turn", {"role": "user", "text": "hello"}),
            event("turn", {"role": "agent", "text": "Hi, how can I help?"}),
            event("call.ended", {"stop_reason": "[EXIT]"}),
            event("call.annotated", {"user_sentiment": "Neutral"}),
        ],
        CallEngine(cohorts=cohorts),
    )
    first, second = (r.cohorts[0] for r in results)
    # version 1: no sentiment yet, only the met criterion: 100 / 1
    assert (first.weighted_score, first.metrics_counted) == (100.0, [])
    # version 2: Neutral = 70 at weight 2, criterion 100 at weight 1: (140 + 100) / 3 = 80.0
    assert (second.weighted_score, second.passed, second.metrics_counted) == (80.0, True, ["sentiment"])


def test_the_engine_counts_an_llm_criterion_once_the_judge_answers():
    cohorts = book(cohort("vip", metrics=[{"metric": "sentiment"}], criteria=[LLM]))
    _, results = run_call(
        [
            started(),
            event("turn", {"role": "agent", "text": "Hi, how can I help?"}),
            event("call.ended", {"stop_reason": "[EXIT]"}),
            event("call.annotated", {"user_sentiment": "Positive"}),
            event("judge.result", {"criteria": {"resolved": {"passed": False, "reason": "no"}}}),
        ],
        CallEngine(cohorts=cohorts),
    )
    scores = [r.cohorts[0].weighted_score for r in results]
    # v1: nothing applies; v2: Positive = 100; v3: (100 + 0) / 2 = 50.0
    assert scores == [None, 100.0, 50.0]
    assert [r.cohorts[0].passed for r in results] == [None, True, False]


def test_cohorts_asking_different_questions_under_one_criterion_name_each_get_their_own_verdict():
    from scorers.engine import CallEngine
    from scorers.judge.requests import build_requests
    from tests.helpers.eventkit import event

    greet = {"kind": "llm", "name": "ok", "question": "Did the agent greet the caller?"}
    book = CohortBook(
        cohorts=[
            {"cohort_id": "a", "name": "A", "criteria": [greet]},
            {
                "cohort_id": "b",
                "name": "B",
                "criteria": [{"kind": "llm", "name": "ok", "question": "Did the agent offer a refund?"}],
            },
            {"cohort_id": "c", "name": "C", "criteria": [greet]},  # the same question: asked once, shared
        ]
    )
    engine = CallEngine(cohorts=book)
    for e in [
        event("call.started", {"agent_id": "x", "cohort_ids": ["a", "b", "c"]}),
        event("turn", {"role": "agent", "text": "Hello, welcome to Acme."}),
        event("call.ended", {"stop_reason": "hangup"}),
    ]:
        processed = engine.process(e)
    requests = build_requests(processed.call, book)
    request = requests.qa
    assert request.criteria == ("ok", "ok (b)")
    assert "greet the caller" in request.user_content and "offer a refund" in request.user_content
    answer = {"ok": {"passed": True, "reason": "greeted"}, "ok (b)": {"passed": False, "reason": "no refund"}}
    result = engine.process(event("judge.result", {"criteria": answer}, ts_ms=requests.ts_ms)).result
    met = {v.cohort_id: v.details["criteria"]["ok"]["met"] for v in result.cohorts}
    assert met == {"a": True, "b": False, "c": True}


def test_an_in_list_looked_up_as_a_set_answers_as_comparing_each_item_does():
    import math
    import random

    from scorers.cohorts import Members, _equal

    rng = random.Random(5)
    pool = [
        0,
        1,
        2,
        -1,
        1.0,
        0.0,
        2.5,
        True,
        False,
        None,
        "1",
        "a",
        "",
        "True",
        math.nan,
        math.inf,
        10**30,
        float(10**30),
        [],
        [1],
        [True],
        {},
        {"a": 1},
        b"a",
        "agent-1",
    ]
    for _ in range(3000):
        items = rng.sample(pool, rng.randint(0, 8))
        members = Members(items)
        for actual in pool:
            assert (actual in members) == any(_equal(actual, item) for item in items), (actual, items)


def test_a_cohort_of_many_long_in_lists_is_scored_without_comparing_every_item(monkeypatch):
    from scorers import cohorts as cohort_scoring

    rules = [
        {"name": f"r{j}", "field": "agent_id", "op": "in", "value": [f"v{k}" for k in range(998)] + ["agent-1"]}
        for j in range(50)
    ]
    cohorts = book(*[cohort(cohort_id=f"c{i}", agents=["agent-*"], criteria=rules) for i in range(20)])
    compared = []
    equal = cohort_scoring._equal
    monkeypatch.setattr(cohort_scoring, "_equal", lambda a, b: compared.append(1) or equal(a, b))
    verdicts = cohorts.verdicts(call(), METRICS, EVALUATION)
    assert len(verdicts) == 20 and all(v.details["criteria"]["r49"]["met"] is True for v in verdicts)
    assert compared == []  # a million comparisons, one by one, for every result
    # Replaced, the cohort's lists are the new ones.
    cohorts.apply(cohort(cohort_id="c0", agents=["agent-*"], criteria=[{**rules[0], "value": ["agent-2"]}]))
    assert cohorts.verdicts(call(), METRICS, EVALUATION)[0].details["criteria"]["r0"]["met"] is False


def test_a_call_whose_agent_never_spoke_fails_the_cohort_whatever_its_metrics_say():
    """The user's speech transcribed well is no conversation: a dead bot must not look healthy."""
    state = call()
    state.turns.clear()
    verdict = only_verdict(book(cohort(metrics=[{"metric": "wer"}])), [scored("wer", 100)], state)
    assert (verdict.weighted_score, verdict.passed, verdict.details["no_conversation"]) == (100.0, False, True)
