"""Knowledge base recall heuristic: share of retrievals whose passage words the agent used."""

from models.results import MetricResult
from tests.helpers.eventkit import event, run_call

# 26 distinct significant words, none a stop word
NATO = (  # the alphabet reads best as words
    "alfa bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa "
    "quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
).split()
# 5 significant words: parking, garage, entrance, beside, pharmacy
FIVE_WORDS = "The parking garage entrance is beside the pharmacy."
# 6 significant words: the five above and "underground"
SIX_WORDS = "The underground parking garage entrance is beside the pharmacy."


def kb_recall(*middle) -> MetricResult:
    events = [event("call.started", {"agent_id": "a1"}), *middle, event("call.ended", {"stop_reason": "hangup"})]
    _, results = run_call(events)
    (result,) = results
    (entry,) = [m for m in result.metrics if m.metric == "kb_recall"]
    return entry


def retrieval(*passages: str, query: str | None = None):
    return event("kb.retrieval", {"passages": list(passages), "query": query})


def agent(text: str):
    return event("turn", {"role": "agent", "text": text})


def user(text: str):
    return event("turn", {"role": "user", "text": text})


def test_not_applicable_without_retrievals():
    m = kb_recall(agent("Hello, how can I help?"))
    assert (m.value, m.score, m.passed) == (None, None, None)
    assert m.details["reason"] == "No knowledge base retrievals in this call"
    assert m.details["judge"] == "heuristic"


def test_share_of_exactly_0_2_is_recalled():
    # 1 of 5 words said ("parking"): 1 / 5 = 0.2 → recalled; value 1 / 1 = 1.0
    m = kb_recall(retrieval(FIVE_WORDS), agent("Parking is free."))
    assert (m.value, m.score, m.passed) == (1.0, 100.0, True)
    assert m.details["per_retrieval"] == [{"query": None, "matched_words": 1, "passage_words": 5, "recalled": True}]


def test_share_just_below_0_2_is_not_recalled():
    # 1 of 6 words: 0.167 < 0.2; value 0 / 1 = 0
    m = kb_recall(retrieval(SIX_WORDS), agent("Parking is free."))
    assert (m.value, m.score, m.passed) == (0.0, 0.0, False)


def test_words_said_before_the_retrieval_count():
    m = kb_recall(agent("Parking is free."), retrieval(FIVE_WORDS))
    assert m.value == 1.0


def test_only_the_agents_words_count():
    m = kb_recall(retrieval(FIVE_WORDS), user("Where is parking?"), agent("One moment."))
    assert m.value == 0.0


def test_the_passage_word_count_is_capped_at_20():
    # 26 distinct words, counted as 20; 4 of them said: 4 / 20 = 0.2 → recalled
    m = kb_recall(retrieval(" ".join(NATO)), agent("alfa bravo charlie delta"))
    assert m.value == 1.0
    assert m.details["per_retrieval"][0]["passage_words"] == 20


def test_words_from_anywhere_in_a_long_passage_count():
    # uniform…zulu are words 21–26 of the passage: 4 of them said, 4 / 20 = 0.2 → recalled
    m = kb_recall(retrieval(" ".join(NATO)), agent("uniform victor whiskey xray"))
    assert m.value == 1.0 and m.details["per_retrieval"][0]["matched_words"] == 4
    assert kb_recall(retrieval(" ".join(NATO)), agent("uniform victor whiskey")).value == 0.0  # 3 / 20


def test_repeated_passage_words_count_once():
    # distinct words: parking, garage (2); "garage" said: 1 / 2 → recalled
    m = kb_recall(retrieval("parking parking parking garage"), agent("The garage, yes."))
    assert m.details["per_retrieval"][0]["passage_words"] == 2
    assert m.value == 1.0


def test_a_retrievals_passages_are_joined():
    # "parking garage" + "entrance beside pharmacy" = 5 words; "pharmacy" said: 1 / 5 → recalled
    m = kb_recall(retrieval("parking garage", "entrance beside pharmacy"), agent("Next to the pharmacy."))
    assert m.details["per_retrieval"][0]["passage_words"] == 5
    assert m.value == 1.0


def test_value_is_recalled_over_retrievals_and_score_rounds_to_one_decimal():
    # 1 of 3 recalled: value 1/3, score 33.333… → 33.3
    m = kb_recall(retrieval(FIVE_WORDS), retrieval("alfa bravo"), retrieval("kilo lima"), agent("Parking is free."))
    assert m.value == 1 / 3
    assert (m.score, m.passed) == (33.3, False)
    assert (m.details["retrievals"], m.details["recalled"]) == (3, 1)


def test_two_of_three_rounds_up_and_passes():
    # value 2/3, score 66.666… → 66.7 ≥ 60
    m = kb_recall(retrieval(FIVE_WORDS), retrieval("alfa bravo"), retrieval("kilo lima"), agent("Parking, alfa."))
    assert (m.score, m.passed) == (66.7, True)


def test_score_exactly_at_the_threshold_passes():
    # 3 of 5 recalled: value 0.6, score 60.0 = threshold
    recalled = [retrieval(w) for w in NATO[:3]]
    missed = [retrieval(w) for w in NATO[3:5]]
    m = kb_recall(*recalled, *missed, agent(" ".join(NATO[:3])))
    assert (m.value, m.score, m.passed) == (0.6, 60.0, True)


def test_a_retrieval_that_returned_nothing_is_counted_apart():
    # The lookup came back empty: nothing the agent could have used, so 1 / 1, not 1 / 3.
    m = kb_recall(retrieval(), retrieval("the and of"), retrieval(FIVE_WORDS), agent("Parking is free."))
    assert (m.value, m.score, m.passed) == (1.0, 100.0, True)
    assert (m.details["retrievals"], m.details["empty_retrievals"]) == (1, 2)
    assert [r["recalled"] for r in m.details["per_retrieval"]] == [True]


def test_empty_retrievals_do_not_use_up_the_50_considered():
    m = kb_recall(*[retrieval() for _ in range(50)], retrieval(FIVE_WORDS), agent("Parking is free."))
    assert (m.value, m.details["empty_retrievals"], m.details["ignored_retrievals"]) == (1.0, 50, 0)


def test_only_empty_retrievals_are_not_applicable_and_counted():
    m = kb_recall(retrieval(), retrieval("the and of"), agent("Parking is free."))
    assert (m.value, m.score, m.passed) == (None, None, None)
    assert (m.details["reason"], m.details["empty_retrievals"]) == ("No knowledge base retrievals in this call", 2)
    assert "empty_retrievals" not in kb_recall(agent("Parking is free.")).details


def test_the_matched_words_shown_are_capped_as_the_passage_words_are():
    passage = " ".join(f"word{n}x" for n in range(30))
    m = kb_recall(retrieval(passage), agent(passage))
    assert m.details["per_retrieval"][0]["matched_words"] == m.details["per_retrieval"][0]["passage_words"] == 20


def test_only_the_first_50_retrievals_are_considered():
    # 50 recalled ("alfa") and a 51st that is not: 50 / 50 = 1.0 (51 would give 50 / 51 → 98.0)
    retrievals = [retrieval("alfa") for _ in range(50)] + [retrieval("zulu")]
    m = kb_recall(*retrievals, agent("alfa"))
    assert (m.value, m.score) == (1.0, 100.0)
    assert (m.details["retrievals"], m.details["ignored_retrievals"]) == (50, 1)


def test_the_query_is_reported_per_retrieval():
    m = kb_recall(retrieval(FIVE_WORDS, query="where to park"), agent("Parking is free."))
    assert m.details["per_retrieval"][0]["query"] == "where to park"


def test_a_rescore_gives_the_same_result():
    events = [
        event("call.started", {"agent_id": "a1"}),
        retrieval(FIVE_WORDS),
        retrieval(SIX_WORDS),
        agent("Parking is free."),
        event("call.ended", {"stop_reason": "hangup"}),
        event("call.annotated", {"user_sentiment": "Neutral"}),
    ]
    _, (first, second) = run_call(events)
    (before,) = [m for m in first.metrics if m.metric == "kb_recall"]
    (after,) = [m for m in second.metrics if m.metric == "kb_recall"]
    assert (second.version, after) == (2, before)
    assert before.value == 0.5


def test_a_chinese_passage_said_inside_a_longer_sentence_is_recalled():
    # "余额不足，请充值" is the pairs 余额 额不 不足 and 请充 充值; said after "您的", all five are used.
    m = kb_recall(retrieval("余额不足，请充值"), agent("您的余额不足，请充值。"))
    assert (m.value, m.passed) == (1.0, True)
    assert m.details["per_retrieval"][0]["matched_words"] == m.details["per_retrieval"][0]["passage_words"] == 5


def test_a_passage_s_figures_are_evidence_matched_by_value():
    # A price alone was an empty retrieval: "No knowledge base retrievals", though the agent used it.
    m = kb_recall(retrieval("$45.00"), agent("It is 45 dollars."))
    assert (m.value, m.details["per_retrieval"][0]["passage_words"], m.details["empty_retrievals"]) == (1.0, 1, 0)
    assert kb_recall(retrieval("$45.00"), agent("It is 46 dollars.")).value == 0.0
    # Figures add matches, not words: 5 words here ("4pm" is the figure 16:00, not a word as well),
    # of which "opens" and "pharmacy" are said, and the time as 16:00.
    m = kb_recall(
        retrieval("The pharmacy opens at 4pm; parking costs 12% more on Sundays."),
        agent("It opens at 16:00 and the pharmacy is nearby."),
    )
    assert (m.details["per_retrieval"][0]["matched_words"], m.details["per_retrieval"][0]["passage_words"]) == (3, 5)
    # A clock time without am/pm is matched by either reading; said twice in two forms, it counts once.
    m = kb_recall(
        retrieval("Pharmacy counter closes Saturdays promptly at 4:30."),
        agent("Yes, on Saturdays we close at 4:30 PM, that is 16:30."),
    )
    assert (m.value, m.details["per_retrieval"][0]["matched_words"]) == (1.0, 2)
    # An agent that speaks its numbers as words is not marked down for the passage's figures.
    m = kb_recall(retrieval("The checked bag fee is $45 per bag."), agent("The checked bag fee is forty-five dollars."))
    assert (m.details["per_retrieval"][0]["matched_words"], m.details["per_retrieval"][0]["passage_words"]) == (3, 4)
