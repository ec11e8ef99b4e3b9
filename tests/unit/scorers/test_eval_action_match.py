"""is_action_match: predicted actions from <final_response> server messages against the reference
answer, with the comparator rules of docs/concepts/evaluation-rules.md#action-match."""

from __future__ import annotations

import json
import math
import random

import numpy

from scorers.evaluation.actions import MatchOptions, is_action_match, numbers_close
from tests.helpers.eventkit import event, run_call

PIZZA = {"item": "pepperoni pizza", "size": "large", "price": 12.5}


# ------------------------------------------------------------------------------- the comparator


def test_an_equal_dict_matches():
    assert is_action_match(PIZZA, [dict(PIZZA)]) is True


def test_extra_predicted_keys_are_fine():
    assert is_action_match(PIZZA, [{**PIZZA, "name": "Bob"}]) is True


def test_a_missing_reference_key_fails():
    assert is_action_match(PIZZA, [{"item": "pepperoni pizza", "size": "large"}]) is False


def test_a_one_element_reference_list_equals_its_dict():
    assert is_action_match([PIZZA], [dict(PIZZA)]) is True


def test_nothing_predicted_fails():
    assert is_action_match(PIZZA, []) is False
    assert is_action_match(PIZZA, [[]]) is False  # one <final_response> holding an empty list


def test_one_final_response_holding_the_whole_action_list_is_the_prediction():
    book, pay = {"action": "book", "seat": "12A"}, {"action": "pay", "amount": 100}
    assert is_action_match([book, pay], [[pay, book]]) is True
    assert is_action_match([book], [[book]]) is True
    assert is_action_match([book, pay], [[book]]) is False
    assert is_action_match([book], [[book, pay]]) is False  # one reference item: only the last prediction counts
    assert is_action_match([book, pay], [[book], [pay]]) is False  # several responses: each one an action


def test_one_reference_item_is_compared_with_the_last_prediction_only():
    wrong = {**PIZZA, "size": "small"}
    assert is_action_match(PIZZA, [dict(PIZZA), wrong]) is False
    assert is_action_match(PIZZA, [wrong, dict(PIZZA)]) is True


def test_several_reference_items_match_in_any_order():
    drink = {"item": "cola"}
    assert is_action_match([PIZZA, drink], [drink, dict(PIZZA)]) is True


def test_each_reference_item_needs_its_own_prediction():
    # Both reference items could only pair with the first prediction.
    assert is_action_match([{"a": 1}, {"a": 1}], [{"a": 1}, {"b": 2}]) is False


def test_pairing_is_first_fit_as_the_harness_pairs_unless_optimal_pairing_is_asked():
    # First fit pairs {a:1} with {a:1,b:2} and leaves {a:1,b:2} nothing: the harness's
    # check_if_task_success answers False. The pairing {a:1}->{a:1}, {a:1,b:2}->{a:1,b:2} exists, which
    # the scenario's optimal_action_pairing finds.
    reference, prediction = [{"a": 1}, {"a": 1, "b": 2}], [{"a": 1, "b": 2}, {"a": 1}]
    assert is_action_match(reference, prediction) is False
    assert is_action_match(reference, prediction, MatchOptions(optimal_pairing=True)) is True
    # Nested lists pair the same way.
    assert is_action_match({"items": reference}, [{"items": prediction}]) is False
    assert is_action_match({"items": reference}, [{"items": prediction}], MatchOptions(optimal_pairing=True)) is True


def test_extra_predictions_are_allowed_by_default():
    assert is_action_match([{"a": 1}, {"b": 2}], [{"c": 3}, {"b": 2}, {"a": 1}]) is True


def test_disallow_extra_items_requires_equal_lengths():
    strict = MatchOptions(disallow_extra_items=True)
    assert is_action_match([{"a": 1}, {"b": 2}], [{"c": 3}, {"b": 2}, {"a": 1}], strict) is False
    assert is_action_match([{"a": 1}, {"b": 2}], [{"b": 2}, {"a": 1}], strict) is True


def test_disallow_extra_items_still_compares_only_the_last_prediction_for_one_reference_item():
    strict = MatchOptions(disallow_extra_items=True)
    assert is_action_match(PIZZA, [{"x": 1}, dict(PIZZA)], strict) is True


def test_leaves_that_parse_as_floats_compare_with_isclose():
    assert is_action_match({"price": "12.50"}, [{"price": 12.5}]) is True
    assert is_action_match({"total": 0.3}, [{"total": 0.1 + 0.2}]) is True
    assert is_action_match({"qty": 1}, [{"qty": "1.0"}]) is True
    assert is_action_match({"price": 12.5}, [{"price": 12.6}]) is False


def test_numbers_compare_exactly_as_numpy_isclose_compares_them():
    rng = random.Random(11)
    edges = [0.0, -0.0, 1e-08, -1e-08, 1e-300, 1e308, -1e308, math.inf, -math.inf, 1.0, 1.00001, 1.0000100001]
    pairs = [(a, b) for a in edges for b in edges]
    for _ in range(20000):
        a = rng.choice([rng.uniform(-1e3, 1e3), rng.uniform(-1, 1) * 10 ** rng.randint(-12, 300), rng.choice(edges)])
        b = a * (1 + rng.choice([0, 1e-4, 1e-5, 9.99e-6, 1.001e-5, -1e-5, 1e-9])) + rng.choice(
            [0, 1e-8, -1e-8, 2e-8, 1e-9]
        )
        pairs += [(a, b), (b, a)]
    for a, b in pairs:
        assert numbers_close(a, b) is bool(numpy.isclose(a, b)), (a, b)


def test_a_name_that_reads_as_nan_matches_itself_as_text():
    assert is_action_match({"passenger": "Nan"}, [{"passenger": "Nan"}]) is True
    assert is_action_match({"passenger": "Nan"}, [{"passenger": "nan"}]) is False  # text: exact by default


def test_strings_compare_exactly_by_default():
    assert is_action_match({"item": "Pepperoni"}, [{"item": "pepperoni"}]) is False
    assert is_action_match({"item": "pepperoni"}, [{"item": "pepperoni "}]) is False


def test_ignore_capitalization_lowercases_both_sides():
    assert (
        is_action_match({"item": "Pepperoni"}, [{"item": "PEPPERONI"}], MatchOptions(ignore_capitalization=True))
        is True
    )


def test_ignore_punctuation_and_clean_text_follow_nemos_text_rules():
    # As the harness (NeMo's remove_punctuations and clean_label): the apostrophe stays in both.
    reference, prediction = {"name": "O'Brien, Bob!"}, [{"name": "O'Brien Bob"}]
    assert is_action_match(reference, prediction) is False
    assert is_action_match(reference, prediction, MatchOptions(ignore_punctuation=True)) is True
    assert is_action_match(reference, prediction, MatchOptions(clean_text=True)) is True
    assert is_action_match({"name": "O'Brien"}, [{"name": "OBrien"}], MatchOptions(ignore_punctuation=True)) is False


def test_clean_text_alone_keeps_hyphens_and_case():
    # The harness's clean_label turns separators into spaces but keeps "-": "a-b" does not match "ab".
    clean = MatchOptions(clean_text=True)
    assert is_action_match({"code": "a-b"}, [{"code": "ab"}], clean) is False
    assert is_action_match({"code": "a/b"}, [{"code": "a b"}], clean) is True
    assert is_action_match({"code": "“Deluxe”  Room"}, [{"code": "Deluxe Room"}], clean) is True
    assert is_action_match({"code": "Deluxe"}, [{"code": "deluxe"}], clean) is False
    assert (
        is_action_match(
            {"code": "Deluxe"}, [{"code": "deluxe"}], MatchOptions(clean_text=True, ignore_capitalization=True)
        )
        is True
    )


def test_nested_lists_match_as_subsets_in_any_order():
    assert is_action_match({"toppings": ["ham", "olives"]}, [{"toppings": ["olives", "cheese", "ham"]}]) is True
    assert is_action_match({"toppings": ["ham", "olives"]}, [{"toppings": ["ham"]}]) is False


def test_a_nested_dict_needs_a_dict():
    assert is_action_match({"order": {"id": 7}}, [{"order": 7}]) is False
    assert is_action_match({"order": {"id": 7}}, [{"order": {"id": "7", "state": "placed"}}]) is True


# ---------------------------------------------------------------------------- through the engine


def started(**scenario) -> object:
    return event("call.started", {"agent_id": "a1", "scenario": {"name": "restaurant__1", **scenario}})


def final_response(payload: str, side: str = "agent") -> object:
    text = f"<final_response>{payload}</final_response>"
    return event("rtvi", {"side": side, "message": {"type": "server-message", "data": {"text": text}}})


def action_match(*events: object):
    _, results = run_call([*events, event("call.ended", {"stop_reason": "[EXIT]"})])
    return results[-1].evaluation["is_action_match"]


def test_a_json_final_response_is_a_predicted_action():
    assert action_match(started(reference_answer=[PIZZA]), final_response(json.dumps(PIZZA))) is True


def test_a_final_response_that_is_not_json_is_a_message():
    assert (
        action_match(
            started(reference_answer={"message": "Your order is placed"}), final_response("Your order is placed")
        )
        is True
    )


def test_the_scenarios_match_options_apply():
    assert (
        action_match(
            started(reference_answer={"message": "Order placed."}, ignore_capitalization=True, ignore_punctuation=True),
            final_response("order PLACED"),
        )
        is True
    )


def test_the_scenarios_disallow_extra_items_applies():
    reference = [{"a": 1}, {"b": 2}]
    predictions = [final_response('{"a": 1}'), final_response('{"b": 2}'), final_response('{"c": 3}')]
    assert action_match(started(reference_answer=reference), *predictions) is True
    assert action_match(started(reference_answer=reference, disallow_extra_items=True), *predictions) is False


def test_predictions_keep_their_order_so_the_last_one_counts():
    assert (
        action_match(
            started(reference_answer=PIZZA), final_response(json.dumps(PIZZA)), final_response('{"item": "salad"}')
        )
        is False
    )


def test_nothing_predicted_is_false_when_a_reference_exists():
    assert action_match(started(reference_answer=PIZZA)) is False


def test_the_simulated_users_final_response_is_not_a_prediction():
    assert action_match(started(reference_answer=PIZZA), final_response(json.dumps(PIZZA), side="user")) is False


def test_a_message_that_only_mentions_the_tag_is_not_a_prediction():
    text = f"Summary: <final_response>{json.dumps(PIZZA)}</final_response> sent"
    message = event("rtvi", {"side": "agent", "message": {"type": "server-message", "data": {"text": text}}})
    assert action_match(started(reference_answer=PIZZA), message) is False


def test_no_reference_answer_is_not_applicable():
    assert action_match(started(), final_response(json.dumps(PIZZA))) == "N/A"


def test_an_empty_reference_answer_is_not_applicable():
    assert action_match(started(reference_answer=[]), final_response(json.dumps(PIZZA))) == "N/A"


def test_a_call_without_a_scenario_is_not_applicable():
    assert action_match(event("call.started", {"agent_id": "a1"}), final_response(json.dumps(PIZZA))) == "N/A"
