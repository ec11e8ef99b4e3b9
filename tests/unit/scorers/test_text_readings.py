"""The shared, cached readings of a text say exactly what the plain text rules say.

`scorers.text.reading` / `figures` and the WER word count are the fast paths the scorers use on every
turn; each must agree with the definition it stands in for, on ordinary and on awkward text.
"""

from __future__ import annotations

import random
import sys

import jiwer

from scorers.qa.wer import (
    _PUNCTUATION,
    SEPARATORS,
    edit_distance,
    normalise,
    word_count,
)
from scorers.text import (
    FACT_RE,
    _figure_matches,
    confusion_phrases,
    extract_facts,
    figures,
    grounding_keys,
    has_negation,
    phrase_text,
    reading,
    robotic_phrases,
    significant_words,
    words,
)
from scorers.text_forms import IDEOGRAPH, folded, ideograph_pairs, word_pattern

TEXTS = [
    "",
    "   ",
    "...",
    "Sorry, I didn't understand. Could you repeat the order number?",
    "As an AI language model, I don't have feelings; as an AI assistant I can help.",
    "Your refund of $12.50 (12.5 dollars) arrives at 4:30 pm, in 3-day shipping, 15% off order 48213.",
    "I do not understand what you mean — I'm confused.",
    "The customer's account isn't active; it never was.",
    "Tab\tseparated\nand  double  spaced\u00a0text\u2003here",
    "Ünïcödé İstanbul straße: 五 apples, ² squared, Ⅻ o'clock",
    "say that again please, say that again",
    "12:15 and 4pm and 16:00 and 1,200.00 and 007",
]

_ALPHABET = [
    " ",
    "  ",
    "\t",
    "\n",
    "\r",
    "\x0b",
    "\x1c",
    "\xa0",
    "\u2003",
    ".",
    ",",
    "'",
    "\u2019",
    "-",
    "!",
    "a",
    "B",
    "é",
    "İ",
    "ß",
    "1",
    "12",
    "$",
    "$ ",
    "%",
    "pm",
    " p.m.",
    ":",
    "¿",
    "—",
    "“",
    "_",
    "五",
    "٣",
    "\u3000",
    "not ",
    "repeat",
    "i didn't understand",
    "as an ai",
    "4:30",
    "dollars",
    " hrs",
    "1,200",
    "Don't",
]


def _random_texts(count: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 14))) for _ in range(count)]


def test_reading_agrees_with_the_text_rules():
    for text in TEXTS + _random_texts(3000):
        read = reading(text)
        assert list(read.words) == words(text), text
        assert read.phrase == phrase_text(text), text
        assert list(read.significant) == significant_words(text), text
        assert read.negated == has_negation(words(text)), text
        assert list(read.confusion) == confusion_phrases(text), text
        assert list(read.robotic) == robotic_phrases(text), text


def test_figures_agree_with_facts_and_grounding_keys():
    for text in TEXTS + _random_texts(3000, seed=2):
        found = figures(text)
        assert list(found.facts) == extract_facts(text), text
        assert set(found.keys) == grounding_keys(text), text


def test_figures_are_found_where_fact_re_finds_them():
    for text in TEXTS + _random_texts(5000, seed=4):
        assert [(m.span(), m.group(0)) for m in _figure_matches(text)] == [
            (m.span(), m.group(0)) for m in FACT_RE.finditer(text)
        ], text


def test_words_of_ascii_text_are_the_words_of_the_unicode_rule():
    for text in TEXTS + _random_texts(3000, seed=5):
        unicode_rule = word_pattern().findall(folded(text).replace("\u2019", "'"))
        assert words(text) == [piece for word in unicode_rule for piece in ideograph_pairs(word)], text


def test_a_word_is_the_same_word_in_any_unicode_form_or_case():
    assert words("re\u0301sume\u0301") == words("résumé") == ["résumé"]  # decomposed, composed
    assert words("İstanbul HAUPTSTRASSE") == words("istanbul Hauptstraße") == ["istanbul", "hauptstrasse"]
    assert words("call\u00adback num\u200eber") == ["callback", "number"]  # soft hyphen, direction mark
    assert words("two\u200bwords") == ["two", "words"]  # a zero-width space separates


def test_chinese_and_japanese_are_read_as_overlapping_character_pairs():
    assert words("您的余额不足。") == ["您的", "的余", "余额", "额不", "不足"]
    assert words("订单4521的状态, thanks") == ["订单", "4521", "的状", "状态", "thanks"]
    assert words("残高") == ["残高"] and words("是 的") == ["是", "的"]  # (a lone character is itself)
    # A pair is significant (no stop words are known for these languages); a lone character is not.
    assert significant_words("是 余额") == ["余额"]


def test_combining_marks_stay_inside_their_word():
    assert words("नमस्ते, आपका स्वागत है") == ["नमस्ते", "आपका", "स्वागत", "है"]  # Devanagari vowel signs
    assert words("مَرْحَبًا بِكُمْ") == ["مَرْحَبًا", "بِكُمْ"]  # Arabic vowel points
    assert significant_words("आपका खाता सक्रिय है") == ["आपका", "खाता", "सक्रिय"]


def test_a_robotic_phrase_found_through_its_anchor_word():
    # "as an ai language model" is one phrase (longest wins); the plain "as an ai" after it is another.
    assert reading("As an AI language model, I can't. As an AI, no.").robotic == ("as an ai language model", "as an ai")


# jiwer's own normalisation, which `normalise` and `word_count` stand in for, with the punctuation that
# separates words made a space first, text lowercased in one Unicode form, and each Chinese or Japanese
# character a word.
class _FoldCase(jiwer.AbstractTransform):
    """jiwer's ToLowerCase as callqa reads text: in one Unicode form, case folded (scorers/text.py)."""

    def process_string(self, s: str) -> str:
        return folded(s)


JIWER_NORMALISE = jiwer.Compose(
    [
        _FoldCase(),
        jiwer.SubstituteRegexes({r"\.\.+|--+|[/\u2014\u2015\u2026]": " "}),
        jiwer.RemovePunctuation(),
        jiwer.SubstituteRegexes({IDEOGRAPH.pattern: r" \g<0>"}),
        jiwer.RemoveMultipleSpaces(),
        jiwer.Strip(),
        jiwer.ReduceToListOfListOfWords(),
    ]
)


def _random_unicode_texts(count: int, seed: int) -> list[str]:
    """Characters from anywhere in Unicode (punctuation of every block among them), with spaces."""
    rng = random.Random(seed)
    return [
        "".join(
            " " if rng.random() < 0.2 else chr(rng.randrange(sys.maxunicode + 1)) for _ in range(rng.randint(0, 12))
        )
        for _ in range(count)
    ]


def test_wer_normalises_text_as_jiwer_does():
    for text in TEXTS + _random_texts(5000, seed=3) + _random_unicode_texts(5000, seed=6):
        assert [normalise(text)] == JIWER_NORMALISE(text), repr(text)
        assert word_count(text) == len(JIWER_NORMALISE(text)[0]), repr(text)


def _jiwer_edit_distance(reference: str, hypothesis: str) -> int:
    out = jiwer.process_words(
        reference, hypothesis, reference_transform=JIWER_NORMALISE, hypothesis_transform=JIWER_NORMALISE
    )
    return out.substitutions + out.deletions + out.insertions


def test_wer_aligns_as_jiwer_does_with_its_own_normalisation():
    texts = TEXTS + _random_texts(600, seed=7) + _random_unicode_texts(600, seed=8)
    rng = random.Random(9)
    for reference, hypothesis in zip(texts, rng.sample(texts, len(texts)), strict=True):
        assert edit_distance(reference, hypothesis).errors == _jiwer_edit_distance(reference, hypothesis), (
            reference,
            hypothesis,
        )


def test_the_punctuation_table_stops_remembering_other_characters_at_its_cap_and_reads_the_same(monkeypatch):
    monkeypatch.setattr(type(_PUNCTUATION), "MAX_REMEMBERED", len(_PUNCTUATION) + 50)
    texts = _random_unicode_texts(300, seed=12)
    for text in texts:
        assert [normalise(text)] == JIWER_NORMALISE(text), repr(text)
    remembered_others = [code for code, to in _PUNCTUATION.items() if to is not None and chr(code) not in SEPARATORS]
    assert len(remembered_others) <= type(_PUNCTUATION).MAX_REMEMBERED


def test_wer_removes_every_punctuation_character_jiwer_removes():
    removed = jiwer.RemovePunctuation().tokens_to_remove
    assert len(removed) > 500  # every "P" category of Unicode, not only ASCII's
    for character in removed:
        expected = ["a", "b", "c"] if character in SEPARATORS else ["ab", "c"]
        assert normalise(f"a{character}b c") == expected, repr(character)


def test_punctuation_between_words_separates_them():
    # A correction that differs from the transcript only in how it punctuates has no errors.
    assert normalise("Yes\u2014I can do 4:30/5:00, fine...thanks") == normalise("Yes, I can do 4:30 5:00, fine thanks")
    assert word_count("Yes\u2014I can do 4:30/5:00, fine...thanks") == 8
    assert normalise("Yes--I") == ["yes", "i"]  # (an em dash typed as two hyphens)
    # Hyphens and en dashes join: a hyphen and an en dash read the same.
    assert normalise("U.S. e-mail, don't") == ["us", "email", "dont"]
    assert normalise("555-0100, open 9-5, well-known") == normalise("555\u20130100, open 9\u20135, well\u2013known")


def test_wer_word_count_ignores_punctuation_and_collapses_spaces():
    # "hello," → "hello"; "—" is punctuation and vanishes; a lone tab does not split "a\tb" (jiwer
    # splits on spaces after collapsing runs of 2+ whitespace): hello / world / a\tb → 3 words.
    assert word_count("Hello,  world — a\tb") == 3


def test_long_distinct_texts_are_read_but_not_kept():
    """A worker that hears many long monologues must not hold each one: 16,384 cached texts of 50,000
    characters were gigabytes. A long text reads the same, and memory does not grow with such texts."""
    import random
    import tracemalloc

    from scorers import text as text_module

    rng = random.Random(5)
    vocabulary = [f"word{n}" for n in range(500)] + ["$12.50", "4pm", "1,200", "not"]

    def monologue() -> str:
        return " ".join(rng.choice(vocabulary) for _ in range(3_000))

    sample = monologue()
    assert reading(sample) == text_module._read(sample) and figures(sample) == text_module._figures(sample)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(100):
            said = monologue()
            reading(said), figures(said)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 1_000_000, f"{grown:,} bytes kept after reading 100 long texts"


def test_the_combining_marks_written_out_are_those_of_the_unicode_database():
    import unicodedata

    from scorers.combining_marks import (
        COMBINING_MARK_RANGES,
        UNICODE_VERSION,
        character_class,
        scanned_ranges,
    )

    ranges = scanned_ranges()
    if unicodedata.unidata_version == UNICODE_VERSION:
        assert character_class(ranges) == COMBINING_MARK_RANGES
    else:  # (a later Unicode adds marks; one written out is still a mark)
        marks = {code for first, last in ranges for code in range(first, last + 1)}
        written, text, i = set(), COMBINING_MARK_RANGES, 0
        while i < len(text):
            is_range = i + 2 < len(text) and text[i + 1] == "-"
            last = text[i + 2] if is_range else text[i]
            written.update(range(ord(text[i]), ord(last) + 1))
            i += 3 if is_range else 1
        assert written and written <= marks
