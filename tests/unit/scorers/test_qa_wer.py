"""Word error rate: edit distance against corrected text, summed over user turns ÷ reference words."""

from tests.helpers.eventkit import event, run_call
from tests.helpers.qa_kit import call_events, metric, scored


def user(text):
    return event("turn", {"role": "user", "text": text})


def agent(text):
    return event("turn", {"role": "agent", "text": text})


def correct(turn_index, text):
    return event("transcript.corrected", {"turn_index": turn_index, "text": text})


def test_call_without_user_turns_is_not_applicable():
    m = scored("wer", agent("Hello, how can I help?"))
    assert (m.value, m.score, m.passed) == (None, None, None)
    assert m.details["reason"] == "No user speech"


def test_user_turn_without_words_is_not_user_speech():
    m = scored("wer", agent("Hello?"), user("..."))
    assert m.details["reason"] == "No user speech"


def test_without_corrections_wer_is_zero_and_estimated():
    # reference = transcript: 0 errors over 3 + 2 = 5 reference words.
    m = scored("wer", agent("Hi."), user("I need help"), user("right now"))
    assert (m.value, m.score, m.passed) == (0.0, 100.0, True)
    assert m.details["estimated"] is True
    assert m.details["reference_words"] == 5
    assert m.details["errors"] == 0
    assert m.details["corrected_turns"] == 0
    assert m.details["judge"] == "heuristic"


def test_correction_sets_the_reference_of_the_turn_it_names():
    # turn 0 agent, turn 1 user. "i want two tickets" vs "i want to tickets": 1 substitution / 4 words.
    m = scored("wer", agent("Hello"), user("I want to tickets"), correct(1, "I want two tickets"))
    assert m.value == 0.25
    assert m.score == 75.0  # (1 - 0.25) * 100
    assert m.passed is False  # below 80
    assert m.details["estimated"] is False
    assert (m.details["reference_words"], m.details["errors"], m.details["corrected_turns"]) == (4, 1, 1)


def test_case_and_punctuation_are_not_errors():
    m = scored("wer", user("hello, WORLD"), correct(0, "Hello world."))
    assert (m.value, m.score) == (0.0, 100.0)
    assert m.details["estimated"] is False


def test_the_same_text_in_another_unicode_form_is_no_error():
    # Heard composed, corrected decomposed: the same eight words.
    m = scored(
        "wer",
        user("Ich m\u00f6chte gr\u00fcne \u00c4pfel f\u00fcr M\u00fcnchen kaufen, bitte"),
        correct(0, "Ich mo\u0308chte gru\u0308ne A\u0308pfel fu\u0308r Mu\u0308nchen kaufen, bitte"),
    )
    assert (m.value, m.details["errors"], m.details["reference_words"]) == (0.0, 0, 8)
    # Direction marks around a number, a zero-width space between words, a soft hyphen inside one.
    m = scored(
        "wer",
        user("\u05d4\u05de\u05e1\u05e4\u05e8 \u200e4521\u200e \u05d1\u05d1\u05e7\u05e9\u05d4"),
        correct(0, "\u05d4\u05de\u05e1\u05e4\u05e8 4521 \u05d1\u05d1\u05e7\u05e9\u05d4"),
    )
    assert (m.value, m.details["reference_words"]) == (0.0, 3)
    m = scored("wer", user("call\u200bback to\u00admorrow"), correct(0, "call back tomorrow"))
    assert (m.value, m.details["reference_words"]) == (0.0, 3)


def test_case_is_folded_beyond_lower_case():
    m = scored("wer", user("HAUPTSTRASSE in \u0130STANBUL"), correct(0, "Hauptstra\u00dfe in Istanbul"))
    assert (m.value, m.score) == (0.0, 100.0)


def test_a_dash_slash_or_ellipsis_between_words_is_no_error():
    m = scored(
        "wer",
        user("Yes, I can do 4:30 5:00. Fine, thanks."),
        correct(0, "Yes\u2014I can do 4:30/5:00 \u2026 fine...thanks"),
    )
    assert (m.value, m.score) == (0.0, 100.0)
    m = scored("wer", user("call 555-0100 well-known"), correct(0, "Call 555\u20130100, well\u2013known."))
    assert (m.value, m.score) == (0.0, 100.0)


def test_errors_are_summed_over_user_turns_and_divided_by_all_reference_words():
    # turn 1: "book a table for two" vs "book table for too": deletion of "a" + substitution → 2 errors, 5 words.
    # turn 3 uncorrected: 0 errors, 3 words. WER = 2 / 8 = 0.25.
    m = scored(
        "wer",
        agent("Hi"),
        user("book table for too"),
        agent("When?"),
        user("at seven pm"),
        correct(1, "book a table for two"),
    )
    assert m.value == 0.25
    assert m.score == 75.0
    assert (m.details["reference_words"], m.details["errors"]) == (8, 2)


def test_turn_index_counts_agent_turns_too():
    # Index 2 is the second user turn ("too"); index 1 is an agent turn.
    m = scored("wer", user("yes"), agent("How many?"), user("too"), correct(2, "two"))
    # 1 substitution over 1 + 1 reference words.
    assert m.value == 0.5
    assert m.score == 50.0


def test_correction_of_an_agent_turn_does_not_change_wer():
    m = scored("wer", agent("Helo there"), user("thanks"), correct(0, "Hello there"))
    assert (m.value, m.score) == (0.0, 100.0)
    assert m.details["estimated"] is True
    assert m.details["corrected_turns"] == 0


def test_correction_of_an_unknown_turn_changes_nothing():
    m = scored("wer", user("thanks"), correct(7, "no thanks"))
    assert (m.value, m.details["estimated"]) == (0.0, True)


def test_a_later_correction_of_the_same_turn_replaces_the_earlier():
    # Final reference "one two three four" vs "one two tree four": 1 / 4.
    m = scored("wer", user("one two tree four"), correct(0, "won too tree for"), correct(0, "one two three four"))
    assert m.value == 0.25
    assert m.details["corrected_turns"] == 1


def test_insertions_count_and_the_score_floors_at_zero():
    # "yes" vs "yes yes please": 2 insertions / 1 word = WER 2.0; (1 - 2) * 100 = -100 → 0.
    m = scored("wer", user("yes yes please"), correct(0, "yes"))
    assert m.value == 2.0
    assert m.score == 0.0
    assert m.passed is False


def test_wer_exactly_at_the_threshold_passes():
    # 1 substitution / 5 words = 0.2 → score 80.0, threshold 80.
    m = scored("wer", user("please call me back tomorow"), correct(0, "please call me back tomorrow"))
    assert (m.value, m.score, m.passed) == (0.2, 80.0, True)


def test_value_has_four_decimals_and_score_one():
    # 1 / 3 = 0.33333… → value 0.3333; score 66.666… → 66.7.
    m = scored("wer", user("one two tree"), correct(0, "one two three"))
    assert m.value == 0.3333
    assert m.score == 66.7


def test_correction_to_empty_text_leaves_no_user_speech():
    m = scored("wer", user("um okay"), correct(0, ""))
    assert m.details["reason"] == "No user speech"


def test_transcribed_words_of_a_turn_corrected_to_nothing_are_insertions():
    # turn 0: "" vs "um okay" → 2 insertions, 0 words; turn 1: 2 words, 0 errors. WER = 2 / 2 = 1.0.
    m = scored("wer", user("um okay"), user("call me"), correct(0, ""))
    assert (m.value, m.score) == (1.0, 0.0)


def test_correction_after_the_call_ended_publishes_version_two_with_the_new_wer():
    events = call_events(agent("Hello"), user("I want to tickets")) + [correct(1, "I want two tickets")]
    _, results = run_call(events)
    assert [r.version for r in results] == [1, 2]
    before, after = metric(results[0], "wer"), metric(results[1], "wer")
    assert (before.value, before.score, before.details["estimated"]) == (0.0, 100.0, True)
    assert (after.value, after.score, after.details["estimated"]) == (0.25, 75.0, False)


def test_rescoring_twice_gives_the_same_numbers():
    # finalize must not change the accumulator: a second correction of another turn builds on the first.
    events = call_events(user("I want to tickets"), user("for friday")) + [
        correct(0, "I want two tickets"),  # 1 error / 6 words
        correct(1, "on friday"),  # +1 error → 2 / 6
    ]
    _, results = run_call(events)
    assert [metric(r, "wer").value for r in results] == [0.0, 0.1667, 0.3333]


def test_chinese_is_aligned_character_by_character():
    # One character of twelve misheard: 1 / 12, not the whole sentence as one wrong word.
    m = scored("wer", user("我想查询一下我的帐单余额"), correct(0, "我想查询一下我的账单余额"))
    assert (m.details["reference_words"], m.details["errors"], m.value) == (12, 1, round(1 / 12, 4))
    # Two sentences do not merge into one word when their full stop is removed; Latin words stay words.
    m = scored("wer", user("好的。谢谢 OK"), correct(0, "好的 谢谢 OK"))
    assert (m.details["reference_words"], m.value) == (5, 0.0)


def _han(count, seed):
    import random

    rng = random.Random(seed)
    return "".join(chr(0x4E00 + rng.randrange(2000)) for _ in range(count))


def _changed(text, index):
    """`text` with its character at `index` replaced by another Han character."""
    return text[:index] + ("丁" if text[index] != "丁" else "七") + text[index + 1 :]


def test_a_long_turn_corrected_in_one_place_is_aligned_exactly():
    # The words both texts share at each end are set aside: a 100,000-character turn with one character
    # misheard in its middle costs one error, exactly, however long the turn.
    heard = _han(100_000, seed=1)
    m = scored("wer", user(heard), correct(0, _changed(heard, 50_000)))
    assert (m.details["errors"], m.details["reference_words"]) == (1, 100_000)
    assert "unaligned_turns" not in m.details


def test_two_long_unrelated_texts_are_counted_at_their_upper_bound_not_aligned_for_a_minute(monkeypatch):
    import time

    from scorers.qa import wer

    monkeypatch.setattr(wer, "MAX_ALIGNED_CELLS", 10_000)  # (a 100 × 100 budget, so the test stays small)
    heard, said = _han(400, seed=2), _han(300, seed=3)
    started = time.process_time()
    m = scored("wer", user(heard), user("fine thanks"), correct(0, said))
    assert time.process_time() - started < 5
    # The longer text's words are the most errors the turn can have; the estimate is said.
    assert (m.details["errors"], m.details["reference_words"], m.details["unaligned_turns"]) == (400, 302, 1)
    # A distance found within the band is exact: two characters changed far apart in the same long turn
    # (201 × 201 words between them, past the budget).
    m = scored("wer", user(heard), correct(0, _changed(_changed(heard, 100), 300)))
    assert (m.details["errors"], "unaligned_turns" in m.details) == (2, False)
    # A later correction that aligns takes the turn off the count.
    _, results = run_call(call_events(user(heard)) + [correct(0, said), correct(0, heard[:-1])])
    assert [metric(r, "wer").details.get("unaligned_turns") for r in results] == [None, 1, None]
