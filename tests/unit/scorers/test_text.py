"""The shared text rules: words, significant words, negation, stock phrases, facts and grounding keys."""

import pytest

from scorers.text import (
    CONFUSION_PHRASES,
    ENGLISH_STOP_WORDS,
    NEGATION_WORDS,
    ROBOTIC_PHRASES,
    confusion_phrases,
    extract_facts,
    grounding_keys,
    has_negation,
    json_text,
    phrase_text,
    robotic_phrases,
    significant_words,
    words,
)


def canonicals(text: str) -> list[str]:
    return [f.canonical for f in extract_facts(text)]


# ------------------------------------------------------------------------------------------ words


def test_words_are_lowercased_and_keep_apostrophes_inside_words():
    assert words("Don't SHOUT, it's fine!") == ["don't", "shout", "it's", "fine"]


def test_typographic_apostrophe_is_read_as_a_straight_one():
    assert words("I can\u2019t") == ["i", "can't"]


def test_hyphens_and_underscores_separate_words_and_unicode_letters_are_words():
    assert words("follow-up first_name café") == ["follow", "up", "first", "name", "café"]


def test_significant_words_drop_stop_words_short_words_and_keep_order_and_repeats():
    # "the", "is", "at" are stop words; "ok" has 2 characters
    assert significant_words("The clinic is open, OK? The clinic opens at nine") == [
        "clinic",
        "open",
        "clinic",
        "opens",
        "nine",
    ]


def test_three_characters_is_long_enough_two_is_not():
    assert significant_words("gym ox") == ["gym"]


def test_pure_numbers_are_not_significant_but_words_with_digits_are():
    assert significant_words("2024 12 4pm") == ["4pm"]


def test_possessive_is_dropped_before_the_checks():
    # "account's" → "account"; "let's" → "let", a stop word
    assert significant_words("The account's balance, let's see") == ["account", "balance", "see"]


def test_conversational_fillers_are_stop_words():
    assert {"okay", "please", "thanks", "sure", "hello"} <= ENGLISH_STOP_WORDS
    assert significant_words("Okay, sure, thanks, hello there") == []


def test_negation_words_and_nt_suffix_are_negations():
    assert has_negation(words("We never close"))
    assert has_negation(words("I cannot do that"))
    assert has_negation(words("It isn\u2019t open"))
    assert has_negation(words("it wasnt me"))  # speech to text without the apostrophe
    assert has_negation(words("No, that is wrong"))


def test_words_that_merely_start_like_a_negation_are_not_negations():
    assert not has_negation(words("A notable knowledge of nodes"))


def test_negation_words_constant_holds_the_basic_forms():
    assert {"not", "no", "never", "cannot"} <= NEGATION_WORDS


# -------------------------------------------------------------------------------- stock phrases


def test_phrase_text_ignores_case_and_punctuation():
    assert phrase_text("Sorry,   I DIDN'T understand!") == "sorry i didn't understand"


def test_confusion_phrase_found_through_punctuation_and_case():
    assert confusion_phrases("Sorry, I didn't understand. Could you repeat that?") == [
        "sorry i didn't understand",
        "could you repeat",
    ]


def test_confusion_phrases_constant_has_the_seed_examples():
    assert {
        "sorry i didn't understand",
        "i don't understand",
        "could you repeat",
        "i'm not sure what you mean",
    } <= CONFUSION_PHRASES


def test_robotic_phrase_longest_match_counts_once():
    assert robotic_phrases("As an AI language model, I can't.") == ["as an ai language model"]


def test_robotic_phrase_matches_whole_words_only():
    assert robotic_phrases("She works as an aide") == []


def test_robotic_phrases_count_every_occurrence():
    assert robotic_phrases("I am an AI. As an AI, I help; as an AI I book.") == ["i am an ai", "as an ai", "as an ai"]


def test_robotic_phrases_constant_has_the_seed_examples():
    assert {"as an ai", "as a language model", "i am an ai", "as an artificial intelligence"} <= ROBOTIC_PHRASES


# ---------------------------------------------------------------------------------------- facts


def test_prices_in_any_wording_share_one_canonical_form_and_key():
    facts = extract_facts("It is $12.50, or 12.50 dollars, or $12.5, or 12.5 bucks")
    assert [f.canonical for f in facts] == ["$12.5"] * 4
    assert {f.keys for f in facts} == {("12.5",)}


def test_whole_dollar_price_drops_the_zero_cents():
    assert canonicals("$12.00 and $ 12") == ["$12", "$12"]


def test_thousands_separators_are_removed():
    assert canonicals("$1,200 for 1,200 items") == ["$1200", "1200"]


def test_times_are_read_on_a_24_hour_clock():
    assert canonicals("4pm, 4 p.m., 4:00 PM, 16:00, 12am, 12:30 pm, 9:05am") == [
        "16:00",
        "16:00",
        "16:00",
        "16:00",
        "00:00",
        "12:30",
        "09:05",
    ]


def test_clock_time_without_am_pm_has_both_readings():
    (four_thirty, quarter_past_twelve, nineteen) = extract_facts("4:30, 12:15 and 19:00")
    assert four_thirty.keys == ("04:30", "16:30")
    assert four_thirty.canonical == "04:30/16:30"
    assert quarter_past_twelve.keys == ("12:15", "00:15")
    assert nineteen.keys == ("19:00",)


def test_sentence_full_stop_after_pm_is_not_part_of_the_time():
    assert [f.said for f in extract_facts("Come at 4pm. Or at 5 p.m. Or 6 p.m")] == ["4pm", "5 p.m.", "6 p.m"]


def test_invalid_times_are_not_time_facts():
    # 25:00 and 7:75 are no clock times; 13pm has no 12-hour reading
    assert canonicals("25:00, 7:75 and 13pm") == []


def test_time_inside_an_iso_timestamp_is_found():
    assert canonicals("2025-03-04T16:30:00") == ["2025", "16:30"]


def test_percent_in_every_spelling():
    assert canonicals("15%, 15 percent, 15 per cent, 7.5%") == ["15%", "15%", "15%", "7.5%"]


def test_durations_in_minutes_hours_and_days():
    assert canonicals("30 minutes, 1 min, 2 hrs, 1 hour, a 3-day trip, 10 days") == [
        "30 minutes",
        "1 minute",
        "2 hours",
        "1 hour",
        "3 days",
        "10 days",
    ]


def test_numbers_of_three_or_more_digits_are_facts_shorter_ones_are_not():
    assert canonicals("room 12, room 99, room 100, confirmation 48213") == ["100", "48213"]


def test_digits_glued_to_letters_are_not_facts():
    assert canonicals("code XK1234, the 4th, 1234abc") == []


def test_digits_glued_to_the_letters_of_scripts_written_without_spaces_are_facts():
    # Chinese and Japanese glue figures to words; Korean its particles and counters; Thai writes no spaces.
    assert canonicals("我的订单号是4521, 合計は9800円です, 4521번 주문, ราคา1500บาท") == [
        "4521",
        "9800",
        "4521",
        "1500",
    ]
    assert canonicals("余额是$12.50元") == ["$12.5"]
    assert canonicals("订单XK1234号") == []  # (still a code: glued to a Latin letter)


def test_numbers_grouped_as_in_europe_or_with_arabic_separators_are_read_by_their_value():
    assert canonicals("9.876,54 \u20ac, 1 234,56 \u20ac, 1\u00a0234,56, 1\u202f234, 1.234.567") == [
        "\u20ac9876.54",
        "\u20ac1234.56",
        "1234.56",
        "1234",
        "1234567",
    ]
    assert canonicals("\u0663\u066c\u0664\u0665\u0660\u066b\u0665\u0660") == ["3450.5"]  # ٣٬٤٥٠٫٥٠
    assert canonicals("$1,200.50, 3.14159, 007") == ["$1200.5", "7"]  # (English as before)


def test_prices_in_other_currencies_are_prices_keeping_their_currency():
    # Only dollars were: "€45 or £30 or 45 euros" stated no fact, and none was checked for grounding.
    assert canonicals(
        "That is \u20ac45 or \u00a330 or 45 euros, 45\u20ac, 45 \u20ac, \u00a5900, \u20b9500, "
        "500 rupees, 30 pounds, $45, 45 dollars"
    ) == [
        "\u20ac45",
        "\u00a330",
        "\u20ac45",
        "\u20ac45",
        "\u20ac45",
        "\u00a5900",
        "\u20b9500",
        "\u20b9500",
        "\u00a330",
        "$45",
        "$45",
    ]
    assert canonicals("code X45\u20acY, \u20ac 1.234,56") == ["\u20ac1234.56"]


def test_a_dot_and_three_digits_is_read_both_ways():
    # 125 as English writes it, 125000 as German does: either grounds it.
    (fact,) = extract_facts("125.000 Euro")
    assert (fact.canonical, fact.keys) == ("\u20ac125/\u20ac125000", ("125", "125000"))
    assert grounding_keys("price 125000") >= {"125000"} and "125000" in fact.keys


def test_a_dotted_run_of_groups_is_read_whole_or_not_at_all():
    # A phone number, an IP address, a version: no part of them is a number of thousands.
    assert grounding_keys("Call 1.800.555.0199, or +1.415.555.2671; host 192.168.1.1, version 1.2.3") == set()
    assert canonicals("1.800.555") == ["1800555"]  # (a whole run of thousands is one)


def test_a_leading_zero_or_a_json_number_has_one_reading():
    assert [f.keys for f in extract_facts("a rate of 0.125% and 4.125%")] == [("0.125",), ("4.125", "4125")]
    # A JSON number is English: 6.125 grounds 6.125, not an invented "$6,125".
    assert grounding_keys(json_text({"rate": 6.125, "fee": 1.5})) == {"6.125", "1.5"}


@pytest.mark.timeout(30)
def test_long_runs_of_grouped_digits_are_read_in_linear_time():
    """Each group of "1 234 234 …" starts a number that may be grouped with spaces; the groups were
    once tried from every one of them to the run's end (100,000 characters: 24 s). Now each try is
    bounded: every run here reads in well under a second."""
    tail = "234" * 7  # (the last seven groups, as many as a number takes, are one)
    expected = {
        " ": {"1", "234"},
        "\u00a0": {"1", "234", tail},
        "\u066c": {"1", "234", tail},
        ".": set(),  # (more groups than any number has: none of them is one)
        ",": {"1" + "234" * 25_000},
    }  # (English thousands, unbounded as before)
    for separator, keys in expected.items():
        assert grounding_keys(separator.join(["1"] + ["234"] * 25_000)) == keys, repr(separator)


def test_unit_words_that_only_start_like_a_unit_are_not_durations():
    # "hourly" is not "hour"; 2 is then a short bare number, not a fact
    assert canonicals("2 hourly checks, 3 daily") == []


def test_numbers_written_as_words_are_not_recognised():
    assert extract_facts("twelve fifty at four pm") == []


# ------------------------------------------------------------------------------------- grounding


def test_grounding_keys_include_short_numbers_times_and_amounts():
    assert grounding_keys('{"price": 12.50, "duration": 30} open 9am-5pm') == {"12.5", "30", "09:00", "17:00"}


def test_bare_number_grounds_a_price_and_a_duration_with_the_same_value():
    keys = grounding_keys("12.5 and 30")
    assert all(any(k in keys for k in f.keys) for f in extract_facts("$12.50 for 30 minutes"))


def test_ambiguous_grounding_time_matches_an_afternoon_statement():
    keys = grounding_keys("appointment at 4:30")
    (fact,) = extract_facts("See you at 4:30 pm")
    assert any(k in keys for k in fact.keys)


def test_other_figure_does_not_ground():
    keys = grounding_keys("$12.00")
    (fact,) = extract_facts("$12.50")
    assert not any(k in keys for k in fact.keys)


# ----------------------------------------------------------------------------------------- JSON


def test_json_text_walks_keys_and_values_in_sorted_key_order():
    assert json_text({"b": [1, 2.5, "x"], "a": {"d": None, "c": True}}) == "a\nc\nd\nb\n1\n2.5\nx"


def test_json_text_reads_a_value_nested_deeper_than_python_recursion_goes():
    value = {"price": 45}
    for _ in range(5000):
        value = [value, {"z": 1}]
    assert json_text(value).startswith("price\n45\nz\n1\nz\n1")


def test_json_text_keeps_newlines_from_gluing_a_letter_to_a_figure():
    # serialised JSON would read "...\\n30 minutes", where "n30" hides the figure
    assert "30" in grounding_keys(json_text({"note": "Wait time:\n30 minutes"}))


def test_json_text_of_a_plain_string_is_the_string():
    assert json_text("Booked for 4pm") == "Booked for 4pm"
