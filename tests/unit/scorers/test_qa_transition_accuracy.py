"""Transition accuracy (heuristic): self-transitions and 3rd+ entries into a node are bad."""

from tests.helpers.eventkit import event
from tests.helpers.qa_kit import scored


def move(to, from_=None):
    data = {"to": to}
    if from_ is not None:
        data["from"] = from_
    return event("node.transition", data)


def test_call_without_transitions_is_not_applicable():
    m = scored("transition_accuracy")
    assert (m.value, m.score, m.passed) == (None, None, None)
    assert m.details["reason"] == "No node transitions"
    assert m.details["judge"] == "heuristic"


def test_sensible_flow_scores_100():
    m = scored(
        "transition_accuracy", move("greeting", "start"), move("billing", "greeting"), move("goodbye", "billing")
    )
    assert (m.value, m.score, m.passed) == (1.0, 100.0, True)
    assert (m.details["total"], m.details["good"], m.details["problems"]) == (3, 3, [])


def test_transition_to_itself_is_bad():
    # 1 bad of 2 → 0.5.
    m = scored("transition_accuracy", move("menu", "start"), move("menu", "menu"))
    assert (m.value, m.score, m.passed) == (0.5, 50.0, False)
    assert m.details["problems"] == [{"index": 1, "from": "menu", "to": "menu", "problem": "transitions to itself"}]


def test_missing_from_is_the_previous_transitions_to():
    m = scored("transition_accuracy", move("menu"), move("menu"))
    assert m.details["problems"] == [{"index": 1, "from": "menu", "to": "menu", "problem": "transitions to itself"}]


def test_third_entry_into_a_node_is_bad_and_the_second_is_not():
    # menu is entered at indexes 0, 2 and 4: only the 3rd entry (index 4) is bad; billing twice is fine.
    # 4 good of 5 = 0.8 → 80.0, exactly the threshold.
    m = scored(
        "transition_accuracy",
        move("menu", "start"),
        move("billing", "menu"),
        move("menu", "billing"),
        move("billing", "menu"),
        move("menu", "billing"),
    )
    assert m.details["problems"] == [
        {"index": 4, "from": "billing", "to": "menu", "problem": "entered more than twice"}
    ]
    assert (m.value, m.score, m.passed) == (0.8, 80.0, True)


def test_every_entry_after_the_second_is_bad():
    # a entered at 0, 2, 4, 6: indexes 4 and 6 bad → 5 of 7 good.
    m = scored(
        "transition_accuracy",
        move("a", "s"),
        move("b", "a"),
        move("a", "b"),
        move("b", "a"),
        move("a", "b"),
        move("c", "a"),
        move("a", "c"),
    )
    # b is entered at 1 and 3 only.
    assert [p["index"] for p in m.details["problems"]] == [4, 6]
    assert m.value == round(5 / 7, 4)  # 0.7143
    assert m.score == 71.4  # 71.428…


def test_self_transitions_count_as_entries_and_are_reported_once():
    # menu entered at 0, 1 (self), 2 (self, also the 3rd entry): reported as self-transitions.
    m = scored(
        "transition_accuracy",
        move("menu", "start"),
        move("menu", "menu"),
        move("menu", "menu"),
        move("billing", "menu"),
        move("menu", "billing"),
    )
    assert [(p["index"], p["problem"]) for p in m.details["problems"]] == [
        (1, "transitions to itself"),
        (2, "transitions to itself"),
        (4, "entered more than twice"),  # menu's 4th entry
    ]


def test_the_starting_node_is_not_an_entry():
    # start is entered by transitions twice (indexes 1 and 3): fine although the flow began there.
    m = scored("transition_accuracy", move("a", "start"), move("start", "a"), move("b", "start"), move("start", "b"))
    assert m.details["problems"] == []


def test_value_has_four_decimals_and_score_one():
    # 2 good of 3 = 0.6666… → 0.6667, 66.7.
    m = scored("transition_accuracy", move("a", "s"), move("b", "a"), move("b", "b"))
    assert (m.value, m.score) == (0.6667, 66.7)
