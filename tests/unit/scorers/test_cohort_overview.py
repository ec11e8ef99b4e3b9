"""The cohort overview: per cohort and metric, calls where the metric applied, average score, average
value and pass rate; kept incrementally, where a call's newer version replaces its earlier one."""

import msgspec

from models.call_state import CallState, TurnRecord
from models.results import CallResult, MetricResult
from scorers.cohort_overview import CohortOverview
from scorers.cohorts import CohortBook
from scorers.engine import CallEngine
from tests.helpers.eventkit import event, run_call

BOOK = CohortBook()
BOOK.apply(
    {
        "cohort_id": "vip",
        "name": "VIP",
        "metrics": [{"metric": "hallucination", "threshold": 80}, {"metric": "wer"}],
    }
)
BOOK.apply({"cohort_id": "all", "name": "All", "agents": ["*"], "metrics": [{"metric": "wer"}]})


def scored(name, score, value):
    return MetricResult(metric=name, value=value, score=score, passed=None, details={})


def na(name):
    return MetricResult(metric=name, value=None, score=None, passed=None, details={"reason": "No user speech"})


def result(call_id, metrics, version=1, cohort_ids=("vip",), agent_id="agent-1", book=BOOK) -> CallResult:
    call = CallState(call_id=call_id, agent_id=agent_id, cohort_ids=list(cohort_ids), version=version)
    call.turns.append(TurnRecord(ts_ms=0, role="agent", text="Hello"))
    return CallResult(
        call_id=call_id,
        version=version,
        final=True,
        agent_id=agent_id,
        cohort_ids=list(cohort_ids),
        run_id=None,
        ended_ts_ms=None,
        event_ts_ms=None,
        metrics=metrics,
        cohorts=book.verdicts(call, metrics, {}),
        evaluation={},
    )


# hallucination: value = issues found; wer: value = WER
CALL_1 = result("a", [scored("hallucination", 90, 0), scored("wer", 95, 0.05)])
CALL_2 = result("b", [scored("hallucination", 70, 1), na("wer")])
CALL_3 = result("c", [scored("hallucination", 40, 2), scored("wer", 75, 0.25)])


def overview_of(*results, cohort_id="vip"):
    overview = CohortOverview()
    for r in results:
        overview.add(r)
    return overview.overview(cohort_id)


def metric(view, name):
    (entry,) = [m for m in view["metrics"] if m["metric"] == name]
    return entry


def test_per_metric_calls_average_score_average_value_and_pass_rate():
    view = overview_of(CALL_1, CALL_2, CALL_3)
    # scores 90, 70, 40 → 200 / 3 = 66.7; values 0, 1, 2 → 1.0; passed at the cohort's 80: only 90 → 1/3
    assert metric(view, "hallucination") == {
        "metric": "hallucination",
        "calls": 3,
        "average_score": 66.7,
        "average_value": 1.0,
        "passed_calls": 1,
        "pass_rate": 1 / 3,
    }


def test_a_metric_counts_only_calls_where_it_applied():
    view = overview_of(CALL_1, CALL_2, CALL_3)
    # wer applied to a and c: scores 95, 75 → 85.0; values 0.05, 0.25 → 0.15; default pass-at 80: 95 → 1/2
    assert metric(view, "wer") == {
        "metric": "wer",
        "calls": 2,
        "average_score": 85.0,
        "average_value": 0.15,
        "passed_calls": 1,
        "pass_rate": 0.5,
    }


def test_cohort_average_weighted_score_and_verdict_pass_rate():
    view = overview_of(CALL_1, CALL_2, CALL_3)
    # weighted: a (90 + 95) / 2 = 92.5, b 70 (wer n/a), c (40 + 75) / 2 = 57.5
    # average (92.5 + 70 + 57.5) / 3 = 73.3; passed at 70: a and b → 2/3
    assert {k: v for k, v in view.items() if k != "metrics"} == {
        "cohort_id": "vip",
        "calls": 3,
        "scored_calls": 3,
        "average_weighted_score": 73.3,
        "passed_calls": 2,
        "pass_rate": 2 / 3,
        "no_conversation_calls": 0,
        "no_conversation_rate": 0.0,
    }


def test_a_metric_that_never_applied_has_no_averages():
    view = overview_of(CALL_2)
    assert metric(view, "wer") == {
        "metric": "wer",
        "calls": 0,
        "average_score": None,
        "average_value": None,
        "passed_calls": 0,
        "pass_rate": None,
    }


def test_calls_without_a_weighted_score_are_left_out_of_its_average_and_pass_rate():
    view = overview_of(CALL_1, result("d", [na("hallucination"), na("wer")]))
    assert (view["calls"], view["scored_calls"], view["average_weighted_score"], view["pass_rate"]) == (2, 1, 92.5, 1.0)


def test_metrics_are_listed_in_the_registry_order():
    assert [m["metric"] for m in overview_of(CALL_1)["metrics"]] == ["hallucination", "wer"]


def test_each_cohort_has_its_own_overview():
    overview = CohortOverview()
    for r in (CALL_1, CALL_2, CALL_3):
        overview.add(r)
    assert overview.cohort_ids() == ["all", "vip"]
    # "all" counts wer at the default 80 too, and has no hallucination
    assert [m["metric"] for m in overview.overview("all")["metrics"]] == ["wer"]
    assert overview.overview("all")["calls"] == 3


def test_an_unknown_cohort_has_an_empty_overview():
    assert CohortOverview().overview("nobody") == {
        "cohort_id": "nobody",
        "calls": 0,
        "scored_calls": 0,
        "average_weighted_score": None,
        "passed_calls": 0,
        "pass_rate": None,
        "no_conversation_calls": 0,
        "no_conversation_rate": None,
        "metrics": [],
    }


# ---------------------------------------------------------------------------------- versions


RESCORED_1 = result("a", [scored("hallucination", 60, 2), scored("wer", 85, 0.15)], version=2)


def test_a_newer_version_replaces_the_calls_earlier_contribution():
    view = overview_of(CALL_1, CALL_3, RESCORED_1)
    # a counts once, as version 2: hallucination (60 + 40) / 2 = 50.0, values (2 + 2) / 2 = 2.0, none reach 80
    assert metric(view, "hallucination") == {
        "metric": "hallucination",
        "calls": 2,
        "average_score": 50.0,
        "average_value": 2.0,
        "passed_calls": 0,
        "pass_rate": 0.0,
    }
    assert view["calls"] == 2


def test_the_overview_equals_a_recomputation_after_a_rescore():
    stored = [CALL_1, CALL_2, CALL_3, RESCORED_1]
    incremental = CohortOverview()
    for r in stored:
        incremental.add(r)
    recomputed = CohortOverview.recompute(stored)
    assert incremental.overviews() == recomputed.overviews()
    assert recomputed.overview("vip") == overview_of(RESCORED_1, CALL_2, CALL_3)


def test_an_older_version_is_ignored_and_the_same_one_again_changes_nothing():
    overview = CohortOverview()
    assert overview.add(RESCORED_1) is True
    before = overview.overviews()
    assert overview.add(CALL_1) is False  # version 1 after version 2
    overview.add(RESCORED_1)  # the same version again
    assert overview.overviews() == before
    assert overview.version_of("a") == 2


def test_the_same_version_published_again_with_other_verdicts_replaces_the_first_copy():
    # (After a crash, with a cohort changed since the first copy: the later copy stands.)
    again = msgspec.structs.replace(CALL_1, metrics=[scored("hallucination", 40, 3), scored("wer", 95, 0.05)])
    again = msgspec.structs.replace(
        again,
        cohorts=BOOK.verdicts(
            CallState(call_id="a", agent_id="agent-1", cohort_ids=["vip"], version=1), again.metrics, {}
        ),
    )
    overview = CohortOverview()
    overview.add(CALL_1)
    overview.add(again)
    assert (
        overview.overviews()
        == CohortOverview.recompute([CALL_1, again]).overviews()
        == CohortOverview.recompute([again]).overviews()
        != CohortOverview.recompute([CALL_1]).overviews()
    )


def test_recompute_keeps_each_calls_newest_version_in_any_order():
    assert (
        CohortOverview.recompute([RESCORED_1, CALL_1]).overviews() == CohortOverview.recompute([RESCORED_1]).overviews()
    )


def test_a_call_that_leaves_a_cohort_on_rescore_is_taken_out_of_it():
    moved = result("a", [scored("hallucination", 90, 0), scored("wer", 95, 0.05)], version=2, cohort_ids=())
    overview = CohortOverview()
    overview.add(CALL_1)
    overview.add(moved)
    assert overview.overview("vip")["calls"] == 0
    assert overview.cohort_ids() == ["all"]


def test_a_metric_the_cohort_stopped_counting_leaves_the_overview_with_the_calls_that_listed_it():
    narrowed = CohortBook()
    narrowed.apply({"cohort_id": "vip", "name": "VIP", "metrics": [{"metric": "wer"}]})
    other = result("z", [scored("hallucination", 50, 3), scored("wer", 80, 0.2)], book=narrowed)
    rescored = result("a", [scored("hallucination", 90, 0), scored("wer", 95, 0.05)], version=2, book=narrowed)
    overview = CohortOverview()
    for r in (CALL_1, other, rescored):
        overview.add(r)
    assert [m["metric"] for m in overview.overview("vip")["metrics"]] == ["wer"]
    assert overview.overviews() == CohortOverview.recompute([CALL_1, other, rescored]).overviews()


def test_a_result_document_as_a_dict_is_accepted():
    overview = CohortOverview()
    overview.add(msgspec.to_builtins(CALL_1))
    assert overview.overviews() == CohortOverview.recompute([CALL_1]).overviews()


def test_engine_results_with_rescores_add_up_to_their_recomputation():
    cohorts = CohortBook()
    cohorts.apply({"cohort_id": "vip", "name": "VIP", "metrics": [{"metric": "sentiment", "threshold": 75}]})
    engine = CallEngine(cohorts=cohorts)
    published = []
    for call_id, first, later in [("x", "Neutral", "Positive"), ("y", "Negative", None), ("z", "Positive", "Neutral")]:
        events = [
            event("call.started", {"agent_id": "a", "cohort_ids": ["vip"]}, call_id=call_id),
            event("call.ended", {"stop_reason": "[EXIT]"}, call_id=call_id),
            event("call.annotated", {"user_sentiment": first}, call_id=call_id),
        ]
        if later:
            events.append(event("call.annotated", {"user_sentiment": later}, call_id=call_id))
        published += run_call(events, engine)[1]
    incremental = CohortOverview()
    for r in published:
        incremental.add(r)
    view = incremental.overview("vip")
    assert view == CohortOverview.recompute(published).overview("vip")
    # newest: x Positive 100, y Negative 20, z Neutral 70 → 190 / 3 = 63.3; at 75 only x passes
    assert metric(view, "sentiment")["average_score"] == 63.3
    assert metric(view, "sentiment")["pass_rate"] == 1 / 3
    assert view["calls"] == 3


def test_calls_with_no_conversation_are_counted_apart_with_their_share_of_the_cohorts_calls():
    dead = result("d", [na("hallucination"), na("wer")])
    dead.no_conversation = True
    overview = overview_of(CALL_1, dead)
    assert (overview["calls"], overview["no_conversation_calls"], overview["no_conversation_rate"]) == (2, 1, 0.5)
