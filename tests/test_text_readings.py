"""The shared, cached readings of a text say exactly what the plain text rules say.

`scorers.text.reading` / `figures` and the WER word count are the fast paths the scorers use on every
turn; each must agree with the definition it stands in for, on ordinary and on awkward text.
"""

from __future__ import annotations

import random

from scorers.qa.wer import _normalise, word_count
from scorers.text import (
    FACT_RE,
    WORD_RE,
    _figure_matches,
    confusion_phrases,
    figures,
    extract_facts,
    grounding_keys,
    has_negation,
    phrase_text,
    reading,
    robotic_phrases,
    significant_words,
    words,
)

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

_ALPHABET = [" ", "  ", "\t", "\n", "\r", "\x0b", "\x1c", "\xa0", "\u2003", ".", ",", "'", "\u2019", "-", "!", "a",
             "B", "é", "İ", "ß", "1", "12", "$", "$ ", "%", "pm", " p.m.", ":", "¿", "—", "“", "_", "五", "٣",
             "\u3000", "not ", "repeat", "i didn't understand", "as an ai", "4:30", "dollars", " hrs", "1,200", "Don't"]


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
        assert [(m.span(), m.group(0)) for m in _figure_matches(text)] == \
            [(m.span(), m.group(0)) for m in FACT_RE.finditer(text)], text


def test_words_of_ascii_text_are_the_words_of_the_unicode_rule():
    for text in TEXTS + _random_texts(3000, seed=5):
        assert words(text) == WORD_RE.findall(text.lower().replace("\u2019", "'")), text


def test_a_robotic_phrase_found_through_its_anchor_word():
    # "as an ai language model" is one phrase (longest wins); the plain "as an ai" after it is another.
    assert reading("As an AI language model, I can't. As an AI, no.").robotic == ("as an ai language model", "as an ai")


def test_wer_word_count_is_the_number_of_words_jiwer_aligns():
    for text in TEXTS + _random_texts(5000, seed=3):
        assert word_count(text) == len(_normalise(text)[0]), text


def test_wer_word_count_ignores_punctuation_and_collapses_spaces():
    # "hello," → "hello"; "—" is punctuation and vanishes; a lone tab does not split "a\tb" (jiwer
    # splits on spaces after collapsing runs of 2+ whitespace): hello / world / a\tb → 3 words.
    assert word_count("Hello,  world — a\tb") == 3
