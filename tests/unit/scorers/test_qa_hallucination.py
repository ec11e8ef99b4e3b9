"""Hallucination heuristic: fabrications, contradictions and confusion, score 100 − 30·major − 10·minor."""

from models.results import MetricResult
from tests.helpers.eventkit import event, run_call


def hallucination(*middle, **started) -> MetricResult:
    """The metric's entry in the result published when a call with these events ends."""
    events = [
        event("call.started", {"agent_id": "a1", **started}),
        *middle,
        event("call.ended", {"stop_reason": "hangup"}),
    ]
    _, results = run_call(events)
    (result,) = results
    (entry,) = [m for m in result.metrics if m.metric == "hallucination"]
    return entry


def agent(text: str):
    return event("turn", {"role": "agent", "text": text})


def user(text: str):
    return event("turn", {"role": "user", "text": text})


def tool_result(result, side: str = "agent"):
    return event("tool.call", {"name": "lookup", "arguments": "{}", "result": result, "side": side})


def assert_clean(m: MetricResult):
    assert (m.value, m.score, m.passed, m.details["total"]) == (0, 100.0, True, 0)


# ------------------------------------------------------------------------------------- basics


def test_call_without_agent_speech_is_not_applicable():
    """Nothing said, nothing to check: a 100 would pass a call whose agent never spoke."""
    m = hallucination(user("Hello?"), agent("  "))
    assert (m.value, m.score, m.passed) == (None, None, None)
    assert m.details["reason"] == "The agent did not speak"


def test_details_name_the_heuristic_judge_and_threshold():
    m = hallucination(agent("Hello"))
    assert m.details["judge"] == "heuristic"
    assert m.details["threshold"] == 70


# -------------------------------------------------------------------------------- grounding


def test_fact_from_the_prompt_is_grounded():
    assert_clean(hallucination(agent("The consultation is $40."), agent_config={"prompt": "A consultation costs $40."}))


def test_fact_from_the_flow_is_grounded():
    flow = {"nodes": [{"id": "hours", "say": "We close at 5pm"}]}
    assert_clean(hallucination(agent("We close at 5 p.m. today."), agent_config={"flow": flow}))


def test_fact_from_a_variable_value_is_grounded():
    assert_clean(hallucination(agent("Your balance is $1,234.50."), variables={"balance": 1234.5}))


def test_fact_from_a_variable_key_is_grounded():
    assert_clean(hallucination(agent("4pm is available."), variables={"4pm": "free"}))


def test_the_configuration_and_variables_still_ground_the_accepted_attempt_after_a_discard():
    m = hallucination(
        event("attempt.discarded", {"reason": "0 conversation turns"}),
        agent("Your plan is $45 and a roaming pass is $10 per day, we are open until 5pm."),
        variables={"monthly_price": "$45"},
        agent_config={"prompt": "Roaming pass costs $10 per day. Support hours 9am to 5pm."},
    )
    assert_clean(m)
    # What the discarded attempt's tools told the agent is gone with it.
    m = hallucination(
        tool_result({"price": 99}), event("attempt.discarded", {"reason": "stale"}), agent("That is $99.")
    )
    assert m.details["fabrications"] == 1


def test_fact_from_a_knowledge_base_passage_is_grounded():
    assert_clean(
        hallucination(event("kb.retrieval", {"passages": ["Delivery takes 3 days."]}), agent("It takes 3 days."))
    )


def test_fact_from_a_tool_result_is_grounded_whatever_its_json_shape():
    assert_clean(hallucination(tool_result({"quote": {"price": 12.5}}), agent("That is $12.50.")))
    assert_clean(hallucination(tool_result([30, "ok"]), agent("About 30 minutes.")))
    assert_clean(hallucination(tool_result("Booked: 16:00"), agent("You're booked at 4pm.")))


def test_fact_from_an_rtvi_function_call_result_is_grounded():
    stopped = event(
        "rtvi",
        {
            "side": "agent",
            "message": {
                "type": "llm-function-call-stopped",
                "data": {"tool_call_id": "t1", "cancelled": False, "result": {"order": 48213}},
            },
        },
    )
    assert_clean(hallucination(stopped, agent("Order 48213 has shipped.")))


def stopped(tool_call_id: str, **data):
    return event(
        "rtvi",
        {
            "side": "agent",
            "message": {
                "type": "llm-function-call-stopped",
                "data": {"tool_call_id": tool_call_id, "cancelled": False, **data},
            },
        },
    )


def test_no_fabrication_is_counted_when_a_tool_result_was_not_reported():
    # Pipecat below its FULL report level says a call completed but not with what: the figures the
    # agent quotes may be that result's, so none can be called fabricated.
    m = hallucination(stopped("t1"), agent("Your table is booked for 7:45pm with a deposit of $12.50."))
    assert_clean(m)
    assert (m.details["figures_unchecked"], m.details["tool_results_not_reported"]) == (2, 1)


def test_figures_are_checked_when_every_completed_tool_reported_its_result():
    m = hallucination(
        stopped("t1", result={"deposit": "$12.50"}),
        event(
            "rtvi",
            {
                "side": "agent",
                "message": {"type": "llm-function-call-stopped", "data": {"tool_call_id": "t2", "cancelled": True}},
            },
        ),
        agent("Your table is booked for 7:45pm with a deposit of $12.50."),
    )
    assert (m.details["fabrications"], m.details["figures_unchecked"], m.details["tool_results_not_reported"]) == (
        1,
        0,
        0,
    )


def test_figures_are_checked_when_tool_call_events_carry_the_results_the_rtvi_messages_leave_out():
    # Both sources describe the same calls (never both, as for tool call accuracy): the tool.call
    # events' results ground the figures; Pipecat's bare stopped message is no reason to skip them.
    m = hallucination(tool_result({"price": 40}), stopped("t1"), agent("That is $40, and shipping is $999."))
    assert (m.details["fabrications"], m.details["figures_unchecked"], m.details["tool_results_not_reported"]) == (
        1,
        0,
        0,
    )


def test_a_stopped_message_that_does_not_say_it_completed_is_no_unreported_result():
    bare = event(
        "rtvi", {"side": "agent", "message": {"type": "llm-function-call-stopped", "data": {"tool_call_id": "t1"}}}
    )
    m = hallucination(bare, agent("That is $999."))
    assert (m.details["fabrications"], m.details["tool_results_not_reported"]) == (1, 0)


def test_an_unreported_result_does_not_hide_contradictions_or_confusion():
    m = hallucination(stopped("t1"), agent("Sorry, I didn't understand that."))
    assert (m.details["confusions"], m.details["minor"]) == (1, 1)


def test_fact_the_user_said_is_grounded():
    assert_clean(hallucination(user("My zip is 90210"), agent("Thanks, 90210 it is.")))


def test_grounding_that_arrives_after_the_agent_said_the_fact_still_counts():
    assert_clean(hallucination(agent("That will be $99."), tool_result({"total": 99})))


def test_the_simulated_users_own_tool_results_do_not_ground_the_agent():
    m = hallucination(tool_result({"total": 99}, side="user"), agent("That will be $99."))
    assert m.details["fabrications"] == 1


def test_short_figures_without_a_unit_are_not_checked():
    # "12" has fewer than 3 digits and no unit: not fact-like
    assert_clean(hallucination(agent("Press 1 or 12.")))


# ----------------------------------------------------------------------------- fabrications


def test_ungrounded_fact_is_one_major_fabrication_and_exactly_70_passes():
    # 100 − 30 × 1 = 70, the default threshold: passes
    m = hallucination(agent("Your appointment is at 4pm."))
    assert (m.value, m.score, m.passed) == (1, 70.0, True)
    assert (m.details["major"], m.details["minor"], m.details["fabrications"]) == (1, 0, 1)
    (issue,) = m.details["issues"]
    assert issue["type"] == "fabrication" and issue["severity"] == "major"
    assert issue["text"] == "Your appointment is at 4pm."
    assert '"4pm"' in issue["evidence"]


def test_same_fact_in_another_wording_is_one_fabrication():
    # "$12.50" and "12.5 dollars" are both $12.5
    m = hallucination(agent("It is $12.50."), agent("Yes, 12.5 dollars."))
    assert (m.value, m.score) == (1, 70.0)


def test_two_fabrications_fail():
    # 100 − 30 × 2 = 40 < 70
    m = hallucination(agent("It costs $15 and takes 45 minutes."))
    assert (m.value, m.score, m.passed) == (2, 40.0, False)


def test_score_is_floored_at_zero():
    # 4 fabrications: 100 − 120 = −20 → 0
    m = hallucination(agent("It is $11, $22, $33 and $44."))
    assert (m.value, m.score, m.passed) == (4, 0.0, False)


def test_at_most_20_issues_are_listed_but_all_are_counted():
    m = hallucination(*[agent(f"Reference {n}.") for n in range(101, 126)])  # 25 ungrounded numbers
    assert m.value == 25
    assert (m.details["total"], m.details["major"]) == (25, 25)
    assert len(m.details["issues"]) == 20
    assert m.details["issues"][0]["text"] == "Reference 101."
    assert m.details["issues"][-1]["text"] == "Reference 120."
    assert m.score == 0.0


# ---------------------------------------------------------------------------------- confusion


def test_confusion_phrase_is_a_minor_issue():
    # 100 − 10 × 1 = 90
    m = hallucination(agent("Sorry, I didn't understand."))
    assert (m.value, m.score, m.passed) == (1, 90.0, True)
    (issue,) = m.details["issues"]
    assert (issue["type"], issue["severity"]) == ("confusion", "minor")


def test_several_confusion_phrases_in_one_turn_are_one_confusion():
    m = hallucination(agent("Sorry, I didn't understand. Could you repeat that?"))
    assert (m.value, m.score) == (1, 90.0)


def test_major_and_minor_issues_combine():
    # 100 − 30 × 1 − 10 × 1 = 60 < 70
    m = hallucination(agent("I don't understand."), agent("It costs $15."))
    assert (m.value, m.score, m.passed) == (2, 60.0, False)
    assert (m.details["major"], m.details["minor"]) == (1, 1)


def test_issues_are_listed_in_the_order_of_the_turns_that_raised_them():
    m = hallucination(agent("I don't understand."), agent("It costs $15."))
    assert [i["type"] for i in m.details["issues"]] == ["confusion", "fabrication"]


# ------------------------------------------------------------------------------ contradiction


def test_three_shared_words_with_one_negation_is_a_major_contradiction():
    # shared significant words: refund, approved, yesterday (3); only the second turn is negated
    m = hallucination(agent("The refund was approved yesterday."), agent("The refund was not approved yesterday."))
    assert (m.value, m.score, m.passed) == (1, 70.0, True)
    (issue,) = m.details["issues"]
    assert (issue["type"], issue["severity"]) == ("contradiction", "major")
    assert issue["text"] == "The refund was not approved yesterday."
    assert "The refund was approved yesterday." in issue["evidence"]
    assert "shared words: approved, refund, yesterday" in issue["evidence"]


def test_two_shared_words_are_not_enough_for_a_contradiction():
    # shared: refund, approved (2)
    assert_clean(hallucination(agent("The refund was approved."), agent("The refund was not approved.")))


def test_negation_in_both_turns_is_no_contradiction():
    assert_clean(
        hallucination(
            agent("The refund was not approved yesterday."), agent("No, the refund was never approved yesterday.")
        )
    )


def test_negation_in_neither_turn_is_no_contradiction():
    assert_clean(
        hallucination(
            agent("The refund was approved yesterday."), agent("Yes, the refund was approved yesterday afternoon.")
        )
    )


def test_a_turn_contradicting_two_earlier_turns_counts_two_contradictions():
    # pairs (1, 3) and (2, 3); turns 1 and 2 agree. 100 − 30 × 2 = 40
    m = hallucination(
        agent("The refund was approved yesterday."),
        agent("Yes, the refund was approved yesterday afternoon."),
        agent("The refund was not approved yesterday."),
    )
    assert (m.value, m.score, m.details["contradictions"]) == (2, 40.0, 2)


def test_each_contradicting_pair_counts_once():
    # pairs (1, 2) and (2, 3); pair (1, 2) is not counted again when turn 3 arrives
    m = hallucination(
        agent("The refund was approved yesterday."),
        agent("The refund was not approved yesterday."),
        agent("The refund was approved yesterday."),
    )
    assert m.details["contradictions"] == 2


def test_contradiction_compares_agent_turns_only():
    assert_clean(
        hallucination(user("The refund was not approved yesterday."), agent("The refund was approved yesterday."))
    )


def test_a_rescore_gives_the_same_result():
    # finalize runs again on a post-call annotation (version 2) and must not change the accumulator
    events = [
        event("call.started", {"agent_id": "a1"}),
        agent("I don't understand."),
        agent("It costs $15."),
        agent("The refund was approved yesterday."),
        agent("The refund was not approved yesterday."),
        event("call.ended", {"stop_reason": "hangup"}),
        event("call.annotated", {"user_sentiment": "Neutral"}),
    ]
    _, (first, second) = run_call(events)
    (before,) = [m for m in first.metrics if m.metric == "hallucination"]
    (after,) = [m for m in second.metrics if m.metric == "hallucination"]
    assert (second.version, after) == (2, before)
    assert before.value == 3


def test_a_figure_the_caller_glued_to_chinese_grounds_the_agent_s_and_one_never_given_is_found():
    said = hallucination(user("我的订单号是4521"), agent("订单 4521 已经为您取消。"))
    assert_clean(said)
    invented = hallucination(user("我想查一下余额"), tool_result({"balance": 345}), agent("您的余额是1250元。"))
    assert invented.details["fabrications"] == 1


def test_figures_written_as_in_europe_are_grounded_by_their_value_and_checked():
    grounded = hallucination(
        tool_result({"price": 125000, "total": 1234.56}),
        agent("Der Preis ist 125.000 Euro, insgesamt 1.234,56 \u20ac."),
    )
    assert_clean(grounded)
    invented = hallucination(tool_result({"total": 1234.56}), agent("Insgesamt 9.876,54 \u20ac."))
    assert invented.details["fabrications"] == 1


def test_a_long_prompt_shared_by_the_calls_of_an_agent_is_read_once():
    from scorers.text import CACHED_TEXT_MAX_CHARS, agent_configuration_figures

    prompt = "A consultation costs $40. " * 100
    assert len(prompt) > CACHED_TEXT_MAX_CHARS  # (longer than a turn the turn caches keep)
    agent_configuration_figures.cache_clear()
    for _ in range(3):
        assert_clean(hallucination(agent("It costs $40."), agent_config={"prompt": prompt}))
    info = agent_configuration_figures.cache_info()
    assert info.misses == 2 and info.hits >= 4  # (the prompt and the flow, each read by the first call only)


def test_prices_in_euros_and_pounds_must_be_grounded_as_dollars_are():
    m = hallucination(tool_result({"fare": 45}), agent("That is €45, or £30 with the discount."))
    assert (m.value, m.details["fabrications"]) == (1, 1)
    assert "£30" in m.details["issues"][0]["evidence"]
