"""Naturalness heuristic: 100 minus repeats, robotic phrases, long turns and a long average."""

from models.results import MetricResult
from tests.helpers.eventkit import event, run_call


def naturalness(*middle) -> MetricResult:
    events = [event("call.started", {"agent_id": "a1"}), *middle, event("call.ended", {"stop_reason": "hangup"})]
    _, results = run_call(events)
    (result,) = results
    (entry,) = [m for m in result.metrics if m.metric == "naturalness"]
    return entry


def agent(text: str):
    return event("turn", {"role": "agent", "text": text})


def user(text: str):
    return event("turn", {"role": "user", "text": text})


def words(n: int) -> str:
    """A turn of n whitespace-separated words, all different (so no repeats)."""
    return " ".join(f"w{n}x{i}" for i in range(n))


def test_not_applicable_when_the_agent_did_not_speak():
    m = naturalness(user("Hello?"))
    assert (m.value, m.score, m.passed) == (None, None, None)
    assert m.details["reason"] == "The agent did not speak"
    assert m.details["judge"] == "heuristic"


def test_blank_agent_turn_is_not_speaking():
    m = naturalness(agent("   "), user("Hello?"))
    assert m.details["reason"] == "The agent did not speak"


def test_value_is_average_whitespace_words_per_agent_turn():
    # "A follow-up call, okay?" = 4 tokens; "Sure thing." = 2; user turns ignored: (4 + 2) / 2 = 3
    m = naturalness(agent("A follow-up call, okay?"), user("one two three four five"), agent("Sure thing."))
    assert (m.value, m.score, m.passed) == (3.0, 100.0, True)
    assert m.details["agent_turns"] == 2


def test_repeated_turn_costs_15_ignoring_case_and_punctuation():
    # 100 − 15 = 85
    m = naturalness(agent("Hello, how can I help?"), agent("hello how can i help"))
    assert (m.score, m.details["repeated_turns"]) == (85.0, 1)


def test_every_repeat_after_the_first_counts():
    # third identical turn is a second repeat: 100 − 2 × 15 = 70
    m = naturalness(agent("One moment."), agent("One moment."), agent("One moment."))
    assert m.score == 70.0


def test_turns_without_words_are_never_repeats_nor_speaking():
    m = naturalness(agent("..."), agent("..."), agent("Hi there"))
    assert (m.value, m.score, m.details["repeated_turns"], m.details["agent_turns"]) == (2.0, 100.0, 0, 1)
    assert naturalness(agent("..."), agent("— ?")).details["reason"] == "The agent did not speak"


def test_punctuation_standing_alone_is_no_word():
    # Whitespace tokens counted 8 here, and spaced punctuation brought the long-turn penalties early.
    assert naturalness(agent("Sure . I can help , okay ?")).value == 5.0


def test_a_turns_words_are_its_tokens_holding_a_letter_or_digit():
    import random
    import re

    from scorers.qa.naturalness import word_count

    pieces = [
        "word",
        "12",
        "...",
        "—",
        "_",
        "__x",
        "$",
        "?!",
        "é",
        "l'",
        ",",
        " ",
        "  ",
        "\t",
        "\n",
        "\u00a0",
        "\u2003",
    ]
    rng = random.Random(5)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(12)))
        assert word_count(text) == sum(1 for token in text.split() if re.search(r"[^\W_]", token)), repr(text)


def test_each_robotic_phrase_occurrence_costs_25():
    # two occurrences: 100 − 2 × 25 = 50 < 60
    m = naturalness(agent("As an AI, I can't. As an AI I won't."))
    assert (m.score, m.passed, m.details["robotic_phrases"]) == (50.0, False, 2)


def test_score_exactly_at_the_threshold_passes():
    # one robotic phrase and one repeat: 100 − 25 − 15 = 60 = threshold
    m = naturalness(agent("I am an AI."), agent("Hello there."), agent("Hello there."))
    assert (m.score, m.passed) == (60.0, True)


def test_turn_of_61_words_costs_8_and_60_words_is_fine():
    # averages stay at 35: (61 + 9) / 2 and (60 + 10) / 2
    long = naturalness(agent(words(61)), agent(words(9)))
    assert (long.value, long.score, long.details["long_turns"]) == (35.0, 92.0, 1)
    fine = naturalness(agent(words(60)), agent(words(10)))
    assert (fine.value, fine.score, fine.details["long_turns"]) == (35.0, 100.0, 0)


def test_average_above_35_costs_1_5_per_word():
    # one turn of 40 words: 100 − 1.5 × (40 − 35) = 92.5
    m = naturalness(agent(words(40)))
    assert (m.value, m.score) == (40.0, 92.5)


def test_score_rounds_to_one_decimal():
    # (36 + 37) / 2 = 36.5; 100 − 1.5 × 1.5 = 97.75 → 97.8
    m = naturalness(agent(words(36)), agent(words(37)))
    assert (m.value, m.score) == (36.5, 97.8)


def test_score_is_floored_at_zero():
    # five robotic phrases: 100 − 125 → 0
    m = naturalness(agent("As an AI. " * 5))
    assert (m.score, m.passed) == (0.0, False)


def test_each_chinese_or_japanese_character_is_a_word():
    # 61 characters, no spaces: one long turn, as 61 English words are (before, one word).
    m = naturalness(agent("您" * 61))
    assert (m.value, m.details["long_turns"]) == (61.0, 1)
    m = naturalness(agent("はい、OKです。"))  # 2 + 1 + 2: punctuation after a character stays with it
    assert m.value == 5.0
