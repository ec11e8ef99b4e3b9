"""The cohort document: decoding from JSON, MessagePack or a dict, its defaults, and validation errors
that name the field at fault."""

import json

import msgspec
import pytest

from models.cohorts import (
    DEFAULT_PASS_THRESHOLD,
    CohortDefinition,
    CohortError,
    CohortMetric,
    LlmCriterion,
    RuleCriterion,
    cohort_to_builtins,
    decode_cohort,
    encode_cohort,
)
from scorers.registry import qa_metrics

KNOWN = [m.name for m in qa_metrics()]

DOC = {
    "cohort_id": "billing",
    "name": "Billing line",
    "agents": ["billing-*"],
    "metrics": [
        {"metric": "hallucination", "weight": 2, "threshold": 80},
        {"metric": "wer", "weight": 1},
        {"metric": "latency"},
    ],
    "criteria": [
        {"name": "ended normally", "field": "evaluation.stop_reason", "op": "eq", "value": "[EXIT]"},
        {"name": "resolved", "kind": "llm", "question": "Did the agent resolve the caller's issue?", "weight": 3},
    ],
}


def doc(**changes):
    return {**DOC, **changes}


def error_of(document) -> str:
    with pytest.raises(CohortError) as caught:
        decode_cohort(document, KNOWN)
    return str(caught.value)


# ------------------------------------------------------------------------------------ decoding


def test_json_msgpack_and_dict_decode_to_the_same_definition():
    from_dict = decode_cohort(DOC, KNOWN)
    assert decode_cohort(json.dumps(DOC).encode(), KNOWN) == from_dict
    assert decode_cohort(json.dumps(DOC), KNOWN) == from_dict
    assert decode_cohort(msgspec.msgpack.encode(DOC), KNOWN) == from_dict


def test_a_metric_left_without_weight_or_threshold_weighs_1_and_uses_the_default_threshold():
    definition = decode_cohort(DOC, KNOWN)
    assert definition.metrics[2] == CohortMetric(metric="latency", weight=1, threshold=None)
    assert definition.metrics[0] == CohortMetric(metric="hallucination", weight=2, threshold=80)


def test_pass_threshold_defaults_to_70():
    assert DEFAULT_PASS_THRESHOLD == 70
    assert decode_cohort(DOC, KNOWN).pass_threshold == 70


def test_a_criterion_without_kind_is_a_rule_and_kind_llm_is_an_llm_criterion():
    rule, llm = decode_cohort(DOC, KNOWN).criteria
    assert rule == RuleCriterion(
        name="ended normally", field="evaluation.stop_reason", op="eq", value="[EXIT]", weight=1
    )
    assert llm == LlmCriterion(name="resolved", question="Did the agent resolve the caller's issue?", weight=3)


def test_the_encoded_topic_value_and_the_api_document_decode_back_to_the_definition():
    definition = decode_cohort(DOC, KNOWN)
    assert decode_cohort(encode_cohort(definition), KNOWN) == definition
    assert decode_cohort(cohort_to_builtins(definition), KNOWN) == definition
    assert cohort_to_builtins(definition)["criteria"][0]["kind"] == "rule"


def test_a_delete_needs_only_the_cohort_id():
    assert decode_cohort({"cohort_id": "billing", "deleted": True}, KNOWN).deleted is True


def test_a_definition_object_is_validated_too():
    definition = CohortDefinition(cohort_id="x", name="X", metrics=[CohortMetric(metric="bogus")])
    assert "unknown metric 'bogus'" in error_of(definition)


# ---------------------------------------------------------------------------------- validation


def test_unknown_metric_names_it_and_lists_the_known_metrics():
    message = error_of(doc(metrics=[{"metric": "wer"}, {"metric": "empathy"}]))
    assert "'billing'" in message
    assert "`metrics[1].metric`: unknown metric 'empathy'" in message
    assert "known metrics: " + ", ".join(KNOWN) in message


def test_a_metric_listed_twice_is_refused():
    assert "`metrics[1].metric`: metric 'wer' is listed twice" in error_of(
        doc(metrics=[{"metric": "wer"}, {"metric": "wer"}])
    )


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"metrics": [{"metric": "wer", "weight": 101}]}, "`metrics[0].weight`"),
        ({"metrics": [{"metric": "wer", "weight": -1}]}, "`metrics[0].weight`"),
        ({"metrics": [{"metric": "wer", "threshold": 100.5}]}, "`metrics[0].threshold`"),
        ({"metrics": [{"metric": "wer", "threshold": -0.1}]}, "`metrics[0].threshold`"),
        ({"pass_threshold": 120}, "`pass_threshold`"),
        ({"criteria": [{"name": "a", "kind": "llm", "question": "q?", "weight": 500}]}, "`criteria[0].weight`"),
    ],
)
def test_weights_and_thresholds_outside_0_to_100_name_the_field(changes, field):
    message = error_of(doc(**changes))
    assert field in message and "Expected a number" in message and "`int`" not in message


def test_weight_and_threshold_at_0_and_100_are_accepted():
    definition = decode_cohort(doc(metrics=[{"metric": "wer", "weight": 0, "threshold": 100}], pass_threshold=0), KNOWN)
    assert (definition.metrics[0].weight, definition.metrics[0].threshold, definition.pass_threshold) == (0, 100, 0)


def test_unknown_op_names_the_field_and_lists_the_ops():
    message = error_of(doc(criteria=[{"name": "a", "field": "agent_id", "op": "startswith", "value": "x"}]))
    assert "`criteria[0].op`" in message and "'startswith'" in message
    assert "known ops: eq, ne, lt, le, gt, ge, in, not_in, contains, exists" in message


def test_unknown_criterion_kind_names_the_field():
    assert "`criteria[0].kind`" in error_of(doc(criteria=[{"name": "a", "kind": "vibes", "question": "q"}]))


def test_a_misspelt_field_is_refused_rather_than_silently_ignored():
    assert "unknown field `treshold`" in error_of(doc(metrics=[{"metric": "wer", "treshold": 90}]))


def test_missing_cohort_id_is_refused():
    assert "`cohort_id`" in error_of({"name": "No id"})


def test_empty_name_is_refused_unless_deleting():
    assert "`name` must not be empty" in error_of(doc(name=""))


def test_an_llm_criterion_needs_a_question():
    assert "`criteria[0]`" in error_of(doc(criteria=[{"name": "a", "kind": "llm"}]))
    assert "`criteria[0].question` must not be empty" in error_of(
        doc(criteria=[{"name": "a", "kind": "llm", "question": " "}])
    )


def test_criterion_names_must_be_unique():
    criteria = [{"name": "a", "field": "agent_id", "op": "exists"}, {"name": "a", "field": "run_id", "op": "exists"}]
    assert "`criteria[1].name`: criterion 'a' is listed twice" in error_of(doc(criteria=criteria))


def test_a_rule_field_must_start_at_a_field_of_the_result():
    message = error_of(doc(criteria=[{"name": "a", "field": "evalutaion.stop_reason", "op": "exists"}]))
    assert "`criteria[0].field`: 'evalutaion' is not a field of a call's result" in message


def test_a_rule_on_an_unknown_metric_is_refused():
    message = error_of(doc(criteria=[{"name": "a", "field": "metrics.empathy.score", "op": "ge", "value": 50}]))
    assert "`criteria[0].field`: unknown metric 'empathy'" in message


@pytest.mark.parametrize(
    "op, value, problem",
    [
        ("in", "[EXIT]", "op 'in' needs a list"),
        ("not_in", None, "op 'not_in' needs a list"),
        ("lt", None, "op 'lt' needs a number or a string"),
        ("ge", True, "op 'ge' needs a number or a string"),
        ("contains", ["a"], "op 'contains' needs a string, number or boolean"),
        ("exists", "yes", "op 'exists' takes true, false or nothing"),
    ],
)
def test_a_rule_value_must_fit_its_op(op, value, problem):
    message = error_of(doc(criteria=[{"name": "a", "field": "evaluation.stop_reason", "op": op, "value": value}]))
    assert f"`criteria[0].value`: {problem}" in message


def test_all_problems_are_reported_at_once():
    message = error_of(doc(name="", metrics=[{"metric": "empathy"}]))
    assert "`name` must not be empty" in message and "unknown metric 'empathy'" in message


def test_a_type_error_is_reported_with_the_other_problems_not_alone():
    message = error_of(
        doc(
            pass_threshold=170,
            metrics=[{"metric": "latencyy"}, {"metric": "wer", "weight": "x"}],
            criteria=[{**RULE, "op": "zz"}],
        )
    )
    assert message.startswith("invalid cohort")
    for problem in (
        "`pass_threshold`: Expected a number <= 100",
        "`metrics[0]`: unknown metric 'latencyy'",
        "`metrics[1].weight`: Expected `int | float`, got `str`",
        "`criteria[0].op`: Invalid enum value 'zz'",
    ):
        assert problem in message


def test_undecodable_bytes_are_a_cohort_error():
    assert "undecodable" in error_of(b"{not json")


def test_a_document_that_is_not_an_object_is_a_cohort_error():
    assert "Expected `object`, got `array`" in error_of([DOC])


RULE = {"name": "r", "field": "evaluation.stop_reason", "op": "eq"}


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"name": "N" * 201}, "`name` is 201 characters long, more than 200"),
        ({"cohort_id": "c" * 201}, "`cohort_id` is 201 characters long, more than 200"),
        ({"agents": ["a"] * 101}, "`agents` lists 101 patterns, more than 100"),
        ({"metrics": [{"metric": "wer"}] * 101}, "`metrics` lists 101 metrics, more than 100"),
        ({"agents": ["a" * 201]}, "`agents[0]` is 201 characters long, more than 200"),
        ({"criteria": [{**RULE, "name": f"r{i}"} for i in range(51)]}, "`criteria` lists 51 criteria, more than 50"),
        (
            {"criteria": [{"kind": "llm", "name": "q", "question": "?" * 2001}]},
            "`criteria[0].question` is 2001 characters",
        ),
        (
            {"criteria": [{**RULE, "value": json.loads("[" * 9 + "]" * 9)}]},
            "`criteria[0].value`: is nested more than 8 levels deep",
        ),
        (
            {"criteria": [{**RULE, "op": "in", "value": list(range(1001))}]},
            "`criteria[0].value`: holds more than 1000 items",
        ),
        ({"criteria": [{**RULE, "value": "x" * 1001}]}, "`criteria[0].value`: holds a string of 1001 characters"),
    ],
)
def test_a_cohort_too_large_for_the_results_that_carry_it_is_refused_naming_the_field(changes, problem):
    assert problem in error_of(doc(**changes))


def test_a_cohort_id_with_a_control_character_is_refused_but_can_still_be_deleted():
    assert "`cohort_id` holds a control character" in error_of(doc(cohort_id="\x00x"))
    assert decode_cohort({"cohort_id": "\x00x", "deleted": True}, KNOWN).deleted


def test_an_error_names_twenty_problems_and_counts_the_rest():
    message = error_of(doc(metrics=[{"metric": "wer"}] * 30))  # 29 repeats
    assert message.count("is listed twice") == 20 and message.endswith("; and 9 more problems")


def test_a_cohort_at_every_bound_is_taken():
    at_bounds = doc(
        name="N" * 200,
        agents=["a" * 200] * 100,
        criteria=[{**RULE, "name": f"r{i}", "value": json.loads("[" * 7 + "1" + "]" * 7)} for i in range(49)]
        + [{**RULE, "name": "many", "op": "in", "value": ["x" * 1000] * 999}],
    )
    assert decode_cohort(at_bounds, KNOWN).name == "N" * 200
