"""Text rules the QA metrics share: words, significant words, negation, stock phrases and facts.

One definition of each, so that hallucination, knowledge base recall and naturalness (and any later
metric) read a turn the same way.

Words
    `words(text)`: the text lowercased, the typographic apostrophe (’) made straight, then every run of
    Unicode letters, digits and combining marks, keeping apostrophes *inside* a word ("don't",
    "customer's"). Punctuation, underscores and hyphens separate words ("follow-up" is "follow", "up").
    Text that is not ASCII is read in one Unicode form, case folded (scorers/text_forms.py), so that
    "résumé" is one word however its accents were typed and "Straße" is "strasse". Chinese and
    Japanese, written without spaces, are read as overlapping pairs of characters ("余额不足" is
    "余额", "额不", "不足"); where words are counted or aligned, each of their characters is one.

Significant words
    `significant_words(text)`: the words that carry content, in order of appearance. A word is
    significant when, after dropping a possessive "'s" ("account's" → "account"), it
    - has at least `MIN_SIGNIFICANT_WORD_LENGTH` (3) characters, or is a pair of Chinese or Japanese
      characters (scorers/text_forms.py),
    - contains at least one letter: pure numbers ("12", "2024") are not significant words, because
      figures are checked as facts (below) and digits alone must not make two texts look alike,
    - is not in `ENGLISH_STOP_WORDS`.

Negation
    `has_negation(words)`: a word in `NEGATION_WORDS` (not, no, never, cannot, …, including the
    apostrophe-less spellings speech-to-text produces such as "dont") or any word ending in "n't".

Stock phrases
    `CONFUSION_PHRASES` and `ROBOTIC_PHRASES` are matched on `phrase_text(text)`, the words joined by
    single spaces, so case and punctuation do not matter ("Sorry, I didn't understand." contains
    "sorry i didn't understand"). A phrase matches whole words only ("as an ai" is not in "as an aide").
    Matches do not overlap and the longest phrase wins at a position, so "as an AI language model" is one
    robotic phrase, not two.

Facts
    `extract_facts(text)` finds the fact-like figures a speaker states:
    - prices: "$12.50", "$ 1,200", "12 dollars", "12.50 bucks", and in euros, pounds, yen and rupees
      alike ("€45", "45 €", "45€", "45 euros", "£30", "30 pounds", "¥900", "₹500", "500 rupees");
    - times of day: "4pm", "4 p.m.", "4:30 pm", "16:00", "4:30";
    - amounts with percent: "15%", "15 percent", "15 per cent";
    - durations in minutes, hours or days: "30 minutes", "2 hrs", "3-day", "1 min";
    - any other number whose integer part has 3 or more digits: "1200", "1,200", "48213", "2024".
    A number may be grouped as English does ("1,234.56") or as much of Europe and the Arabic-speaking
    world does ("1.234,56", "1 234,56", "٣٬٤٥٠٫٥٠"); "125.000" has both readings, 125 and 125000.
    Numbers written as words ("twelve fifty") are not recognised. Digits glued to letters (a code such
    as "XK1234", an ordinal such as "4th") are not facts, but for the letters of scripts written
    without spaces, and Korean's: "订单号是4521" and "9800円" state figures.

    Each fact is matched by its *value*, not by how it was written or by its unit:
    - an amount (price, percent, duration, number) by its number with thousands separators removed and
      without insignificant zeros: "$12.50", "12.50 dollars", "$12.5" and a bare "12.5" all have the key
      "12.5"; "1,200" and "1200.00" have the key "1200";
    - a time by its 24-hour reading "HH:MM": "4pm", "4:00 PM" and "16:00" are all "16:00". A clock time
      without am/pm and an hour from 1 to 12 is ambiguous and has both readings ("4:30" → "04:30" or
      "16:30"; "12:15" → "12:15" or "00:15"); it matches when either reading does.
    Units are dropped because the data an agent is given rarely carries them: a tool result
    `{"price": 12.5, "duration": 30}` must ground "$12.50" and "30 minutes". The price of that leniency:
    a figure counts as grounded when the same value appears anywhere in the grounding, whatever it
    measured there.

    `grounding_keys(text)` gives the keys of *every* figure in a text that could ground a fact: all
    times and all numbers of any length ("30", "12.5"), not only the fact-like ones.

    `Fact.canonical` is the fact as one deterministic string that keeps its kind ("$12.5", "15%",
    "30 minutes", "16:00", "04:30/16:30", "1200"); the same fact said twice in different words has the
    same canonical string.

JSON
    `json_text(value)`: the strings and numbers of any JSON value (a tool result, the agent's flow,
    the call's variables), keys included, one per line, dictionaries in sorted key order. Walking the
    value instead of serialising it keeps escapes such as "\\n" from gluing a letter to a figure.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any, cast

import msgspec

from scorers.text_forms import (
    UNSPACED_LETTERS,
    folded,
    has_ideographs,
    ideograph_pairs,
    is_ideograph_pair,
    word_pattern,
)

# ------------------------------------------------------------------------------------------ words

_TYPOGRAPHIC_APOSTROPHE = "\u2019"
_POSSESSIVE = "'s"

MIN_SIGNIFICANT_WORD_LENGTH = 3

# Function words (the common English stop-word list of NLTK and Snowball, with the contractions spelled
# out) plus the fillers and courtesy words of spoken calls ("okay", "please", "thanks", "would you
# like"), which say nothing about what the call was about. Words shorter than
# MIN_SIGNIFICANT_WORD_LENGTH are left out: they are never significant anyway.
ENGLISH_STOP_WORDS = frozenset(
    [
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "and",
        "any",
        "are",
        "aren",
        "aren't",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "can",
        "can't",
        "cannot",
        "could",
        "couldn",
        "couldn't",
        "did",
        "didn",
        "didn't",
        "does",
        "doesn",
        "doesn't",
        "doing",
        "don",
        "don't",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "hadn",
        "hadn't",
        "has",
        "hasn",
        "hasn't",
        "have",
        "haven",
        "haven't",
        "having",
        "her",
        "here",
        "here's",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "how's",
        "i'd",
        "i'll",
        "i'm",
        "i've",
        "into",
        "isn",
        "isn't",
        "it'd",
        "it'll",
        "it's",
        "its",
        "itself",
        "just",
        "let",
        "let's",
        "may",
        "might",
        "mightn",
        "mightn't",
        "more",
        "most",
        "must",
        "mustn",
        "mustn't",
        "myself",
        "needn",
        "needn't",
        "nor",
        "not",
        "now",
        "off",
        "once",
        "only",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "shall",
        "shan",
        "shan't",
        "she",
        "she'd",
        "she'll",
        "she's",
        "should",
        "should've",
        "shouldn",
        "shouldn't",
        "some",
        "such",
        "than",
        "that",
        "that'll",
        "that's",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "there's",
        "these",
        "they",
        "they'd",
        "they'll",
        "they're",
        "they've",
        "this",
        "those",
        "through",
        "too",
        "under",
        "until",
        "very",
        "was",
        "wasn",
        "wasn't",
        "we'd",
        "we'll",
        "we're",
        "we've",
        "were",
        "weren",
        "weren't",
        "what",
        "what's",
        "when",
        "when's",
        "where",
        "where's",
        "which",
        "while",
        "who",
        "who's",
        "whom",
        "why",
        "why's",
        "will",
        "with",
        "won",
        "won't",
        "would",
        "wouldn",
        "wouldn't",
        "you",
        "you'd",
        "you'll",
        "you're",
        "you've",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "also",
        "yes",
        "yeah",
        "yep",
        "yup",
        "okay",
        "alright",
        "right",
        "sure",
        "well",
        "really",
        "actually",
        "like",
        "please",
        "thank",
        "thanks",
        "hello",
        "hey",
        "bye",
        "goodbye",
        "hmm",
        "uhm",
        "umm",
    ]  # a word list reads best as prose
)

NEGATION_WORDS = frozenset(
    [
        "not",
        "no",
        "never",
        "cannot",
        "nothing",
        "nobody",
        "none",
        "neither",
        "nor",
        "nowhere",
        "dont",
        "didnt",
        "doesnt",
        "isnt",
        "wasnt",
        "arent",
        "werent",
        "cant",
        "couldnt",
        "shouldnt",
        "wouldnt",
        "wont",
        "havent",
        "hasnt",
        "hadnt",
        "aint",
        "mustnt",
        "neednt",
    ]  # a word list reads best as prose
)
_NEGATING_SUFFIX = "n't"


# word_pattern() on ASCII text, where a letter or digit is just [a-z0-9] once lowercased: the same
# words, faster.
_ASCII_WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def words(text: str) -> list[str]:
    """The text's words, lowercased, apostrophes inside words kept; Chinese and Japanese as character
    pairs."""
    if text.isascii():
        return _ASCII_WORD_RE.findall(text.lower())
    found = word_pattern().findall(folded(text).replace(_TYPOGRAPHIC_APOSTROPHE, "'"))
    if not has_ideographs(text):
        return found
    return [piece for word in found for piece in ideograph_pairs(word)]


def significant_form(word: str) -> str | None:
    """The word as a significant word (possessive dropped), or None when it is not one."""
    form = _SIGNIFICANT_FORMS.get(word, _UNKNOWN)
    if form is _UNKNOWN:
        if len(_SIGNIFICANT_FORMS) >= _MAX_SIGNIFICANT_FORMS:
            _SIGNIFICANT_FORMS.clear()
        form = _SIGNIFICANT_FORMS[word] = _significant_form(word)
    return cast("str | None", form)  # (a memoised form: not _UNKNOWN)


# Memo of significant_form, a pure function of one word: spoken vocabulary is small and repetitive.
_SIGNIFICANT_FORMS: dict[str, str | None] = {}
_MAX_SIGNIFICANT_FORMS = 65_536
_UNKNOWN = object()


def _significant_form(word: str) -> str | None:
    if word.endswith(_POSSESSIVE):
        word = word[: -len(_POSSESSIVE)]
    if (len(word) < MIN_SIGNIFICANT_WORD_LENGTH and not is_ideograph_pair(word)) or word in ENGLISH_STOP_WORDS:
        return None
    if not any(ch.isalpha() for ch in word):
        return None
    return word


def significant(word_list: Iterable[str]) -> list[str]:
    """The significant words among already-split words, in order, repeats kept."""
    known = _SIGNIFICANT_FORMS.get
    found: list[str] = []
    for word in word_list:
        form = known(word, _UNKNOWN)
        if form is _UNKNOWN:
            form = significant_form(word)
        if form is not None:
            found.append(cast(str, form))
    return found


def significant_words(text: str) -> list[str]:
    """The text's significant words, in order of appearance, repeats kept."""
    return significant(words(text))


def has_negation(word_list: Iterable[str]) -> bool:
    return any(w in NEGATION_WORDS or w.endswith(_NEGATING_SUFFIX) for w in word_list)


def phrase_text(text: str) -> str:
    """The text's words joined by single spaces: the form stock phrases are matched on."""
    return " ".join(words(text))


# -------------------------------------------------------------------------------- stock phrases

# What an agent says when it has lost the thread of the conversation.
CONFUSION_PHRASES = frozenset(
    {
        "sorry i didn't understand",
        "i didn't understand",
        "i did not understand",
        "i don't understand",
        "i do not understand",
        "i didn't catch that",
        "i did not catch that",
        "i didn't get that",
        "i did not get that",
        "could you repeat",
        "could you please repeat",
        "can you repeat",
        "can you please repeat",
        "would you repeat",
        "would you mind repeating",
        "say that again",
        "i'm not sure what you mean",
        "i am not sure what you mean",
        "not sure what you mean",
        "i don't know what you mean",
        "i'm confused",
        "i am confused",
        "i'm not following",
        "i am not following",
        "i don't follow",
    }
)

# What gives away a language model talking instead of a person.
ROBOTIC_PHRASES = frozenset(
    {
        "as an ai",
        "as an ai language model",
        "as an ai assistant",
        "as a language model",
        "as a large language model",
        "as an artificial intelligence",
        "i am an ai",
        "i'm an ai",
        "i am just an ai",
        "i'm just an ai",
        "i am an artificial intelligence",
        "i'm an artificial intelligence",
        "i am a language model",
        "i'm a language model",
        "i am a large language model",
        "i'm a large language model",
        "i don't have personal opinions",
        "i do not have personal opinions",
        "i don't have feelings",
        "i do not have feelings",
    }
)


def _phrase_pattern(phrases: frozenset[str]) -> re.Pattern[str]:
    # Longest first, so that at one position the longest phrase is the one matched.
    ordered = sorted((phrase_text(p) for p in phrases), key=lambda p: (-len(p), p))
    return re.compile(r"(?<!\S)(?:" + "|".join(re.escape(p) for p in ordered) + r")(?!\S)")


CONFUSION_RE = _phrase_pattern(CONFUSION_PHRASES)
ROBOTIC_RE = _phrase_pattern(ROBOTIC_PHRASES)


def confusion_phrases(text: str) -> list[str]:
    """The confusion phrases the text contains, in order, one per non-overlapping occurrence."""
    return CONFUSION_RE.findall(phrase_text(text))


def robotic_phrases(text: str) -> list[str]:
    """The robotic phrases the text contains, in order, one per non-overlapping occurrence."""
    return ROBOTIC_RE.findall(phrase_text(text))


# ---------------------------------------------------------------------------------------- facts

MIN_FACT_NUMBER_DIGITS = 3
CURRENCY_SIGNS = "$€£¥₹"  # (written before a price, or after it as much of Europe writes "45 €")

# A number as English writes it ("1,234.56"), and as much of Europe and the Arabic-speaking world
# does: a dot, a no-break or narrow no-break space (or a plain space before a decimal comma) between
# thousands and a decimal comma ("1.234,56", "1 234,56", "1.234.567"); U+066C and U+066B. One dot
# and three digits alone ("125.000") is either 125 or 125000 and is read both ways (`_read_number`).
# - The other groupings are tried only where a number starts as one of them (`_OTHER_GROUPING_AHEAD`,
#   which an English number fails within a few digits), and each takes a whole run of its groups or
#   nothing: "1.800.555.0199", a phone number, is no number at all, as "1.2.3" is not.
# - Their groups repeat a bounded number of times (up to 10^21): unbounded, a run of "234 234 …"
#   was tried from each of its groups to its end, in quadratic time.
# - An English number does not stop where a dot and a digit follow ("1.800" of "1.800.555.0199").
# (FACT_RE is verbose: a plain space is written [ ].)
_OTHER_GROUPING_AHEAD = r"(?=\d{1,3}[.\u00a0\u202f\u066c ]\d{3}|\d+\u066b)"
_NUMBER = (
    rf"(?:{_OTHER_GROUPING_AHEAD}"
    r"(?:\d{1,3}(?:\.\d{3}){1,6},\d+(?![.,]\d)"
    r"|\d{1,3}(?:\.\d{3}){2,6}(?![.,]?\d)"
    r"|\d{1,3}(?:[\u00a0\u202f]\d{3}){1,6}(?:,\d+)?(?![\u00a0\u202f,]?\d)"
    r"|\d{1,3}(?:[ ]\d{3}){1,6},\d+(?![.,]\d)"
    r"|\d{1,3}(?:\u066c\d{3}){1,6}(?:\u066b\d+)?(?![\u066b\u066c]?\d)|\d+\u066b\d+(?![\u066b\u066c]?\d))"
    r"|\d+(?:,\d{3})*(?:\.\d+)?(?!\.\d))"
)
_GROUPED_AS_IN_EUROPE = re.compile(
    r"\d{1,3}(?:[.\u00a0\u202f ]\d{3})+,\d+|\d{1,3}(?:\.\d{3}){2,}"
    r"|\d{1,3}(?:[\u00a0\u202f]\d{3})+"
)
_DOT_AND_THREE_DIGITS = re.compile(r"(?!0)\d{1,3}\.\d{3}")  # ("0.125" has no thousands)
_ARABIC_SEPARATORS = str.maketrans({"\u066c": None, "\u066b": "."})
_EUROPEAN_SEPARATORS = str.maketrans({".": None, "\u00a0": None, "\u202f": None, " ": None, ",": "."})
# A figure glued to a letter is part of a code ("XK1234") or an ordinal ("4th"), not a figure; but not
# glued to the letters of the scripts that write figures against their words (UNSPACED_LETTERS).
# (Case-sensitive within FACT_RE's IGNORECASE: a class of this size compiled case-insensitively took
# 25 ms of every process's start.)
_NOT_GLUED_AFTER = rf"(?-i:(?<![.,\d]|[^\W{UNSPACED_LETTERS}]))"  # (the digits of those scripts are digits)
_NOT_GLUED_BEFORE = rf"(?-i:(?!\d)(?![^\W{UNSPACED_LETTERS}]))"
# "pm", "p m", "p.m." and "p.m"; a dot after a plain "pm" ends the sentence and is not taken.
_AM_PM = r"\s*(?P<{0}>[ap])(?:\.\s?m\.|\.\s?m\b|\s?m\b)"
# One scanner for every figure; at each position the first alternative that matches wins, so "4:30 pm"
# is a time and not the numbers 4 and 30, and "$12.50" a price and not a bare 12.50.
FACT_RE = re.compile(
    rf"""
      (?P<clock> (?<![\d:.]) (?P<clock_h>\d{{1,2}}) : (?P<clock_m>\d{{2}}) (?!\d) (?:{_AM_PM.format("clock_ap")})? )
    | (?P<money> (?P<money_sign>[{CURRENCY_SIGNS}])\s?(?P<money_n>{_NUMBER}) {_NOT_GLUED_BEFORE} )
    | {_NOT_GLUED_AFTER}
      (?: (?P<hour> (?P<hour_h>\d{{1,2}}) {_AM_PM.format("hour_ap")} )
        | (?P<amount> (?P<amount_n>{_NUMBER})
            (?: \s*(?P<percent>%|percent\b|per\s+cent\b)
              | [ ]?(?P<sign_after>[{CURRENCY_SIGNS}])
              | (?:\s+|-)?(?P<unit>dollars?|bucks?|euros?|pounds?|yen|rupees?|minutes?|mins?|hours?|hrs?|days?)\b ) )
        | (?P<number> (?P<number_n>{_NUMBER}) {_NOT_GLUED_BEFORE} ) )
    """,
    re.IGNORECASE | re.VERBOSE,
)
# (Money starts with a currency sign, the rest with a digit: the order of the alternatives that can
# start at one position is clock, hour, amount, number, and those three share the one glue check.)

# A price's canonical form keeps its currency (the sign its words stand for): "€45" and "$45" are two
# facts, though both are grounded by a 45 (units are dropped, see the module's docstring).
_CURRENCY_WORDS = {
    "dollar": "$", "dollars": "$", "buck": "$", "bucks": "$", "euro": "€", "euros": "€",
    "pound": "£", "pounds": "£", "yen": "¥", "rupee": "₹", "rupees": "₹",
}  # fmt: skip
_UNITS = {
    "minute": "minutes", "minutes": "minutes", "min": "minutes", "mins": "minutes",
    "hour": "hours", "hours": "hours", "hr": "hours", "hrs": "hours",
    "day": "days", "days": "days",
}  # fmt: skip


# Facts, readings and figures are immutable and hold only strings: msgspec Structs out of the cyclic
# GC (gc=False), so that the tens of thousands the caches below keep are never walked by a collection
# (and each is cheaper to make than a dataclass).
class Fact(msgspec.Struct, frozen=True, gc=False):
    """A fact-like figure as said (`said`), its canonical form and the keys it is matched by."""

    kind: str  # price, time, percent, duration or number
    said: str
    canonical: str
    keys: tuple[str, ...]


def canonical_number(number: str) -> str:
    """ "1,200.50" → "1200.5"; "12.00" → "12"; "007" → "7"."""
    known = _CANONICAL_NUMBERS.get(number)
    if known is None:
        if len(_CANONICAL_NUMBERS) >= _MAX_CANONICAL_NUMBERS:
            _CANONICAL_NUMBERS.clear()
        known = _CANONICAL_NUMBERS[number] = _canonical_number(number)
    return known


# Memo of canonical_number, a pure function of its text (decimal arithmetic is slow; figures repeat).
_CANONICAL_NUMBERS: dict[str, str] = {}
_MAX_CANONICAL_NUMBERS = 65_536


def _canonical_number(number: str) -> str:
    # On the digits themselves, not through Decimal (its 28-digit context would round two different
    # long numbers to the same value) nor int() (limited to 4,300 digits).
    if not number.isascii():  # \d also matches other scripts' digits: read them as 0-9
        number = "".join(str(unicodedata.decimal(ch)) if ch.isdecimal() else ch for ch in number)
    whole, _, fraction = number.replace(",", "").partition(".")
    whole = whole.lstrip("0") or "0"
    fraction = fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def _integer_digits(number: str) -> int:
    return len(number.split(".", 1)[0].replace(",", ""))


def _read_number(number: str) -> tuple[tuple[str, ...], int]:
    """(What a number as written means, canonical; the integer digits that make it fact-like as a
    bare number). The readings: "1.234,56" → ("1234.56",); "125.000" → ("125", "125000"), English's
    reading first; anything else → (canonical_number(number),). The digits: as written ("007" has
    three), or of its longest reading when it is written with other separators ("1.234,56" has four).
    Memoised as canonical_number is: both run on every figure."""
    known = _NUMBER_READINGS.get(number)
    if known is None:
        if len(_NUMBER_READINGS) >= _MAX_CANONICAL_NUMBERS:
            _NUMBER_READINGS.clear()
        if number.isascii() and "." not in number and " " not in number:  # (most figures: "48213", "1,200")
            known = ((canonical_number(number),), _integer_digits(number))
        else:
            readings = _number_readings(number)
            digits = (
                _integer_digits(number)
                if readings == (canonical_number(number),)
                else max(_integer_digits(reading) for reading in readings)
            )
            known = (readings, digits)
        _NUMBER_READINGS[number] = known
    return known


_NUMBER_READINGS: dict[str, tuple[tuple[str, ...], int]] = {}


def _number_readings(number: str) -> tuple[str, ...]:
    if "\u066b" in number or "\u066c" in number:
        return (canonical_number(number.translate(_ARABIC_SEPARATORS)),)
    if _GROUPED_AS_IN_EUROPE.fullmatch(number):
        return (canonical_number(number.translate(_EUROPEAN_SEPARATORS)),)
    if _DOT_AND_THREE_DIGITS.fullmatch(number):
        return (canonical_number(number), canonical_number(number.replace(".", "")))
    return (canonical_number(number),)


def _clock(hour: int, minute: int, am_pm: str | None) -> tuple[str, ...] | None:
    """The 24-hour readings of a time, or None when it is not a valid time."""
    if minute > 59:
        return None
    if am_pm is not None:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if am_pm.lower() == "p" else 0)
        return (f"{hour:02d}:{minute:02d}",)
    if hour > 23:
        return None
    if 1 <= hour <= 12:
        return (f"{hour:02d}:{minute:02d}", f"{(hour + 12) % 24:02d}:{minute:02d}")
    return (f"{hour:02d}:{minute:02d}",)


_DIGIT = re.compile(r"\d")  # every figure FACT_RE finds has a digit: no digit, nothing to scan
# Every alternative of FACT_RE starts with "$" or a digit. Trying FACT_RE only where one of those
# stands (its lookbehinds still see the text before) finds the same matches as `finditer`, without
# trying five alternatives at every character of the text.
_FIGURE_START = re.compile(rf"[{CURRENCY_SIGNS}\d]")


def _figure_matches(text: str) -> Iterator[re.Match[str]]:
    """FACT_RE.finditer(text), faster."""
    next_start = _FIGURE_START.search
    match = FACT_RE.match
    position = 0
    while (start := next_start(text, position)) is not None:
        found = match(text, start.start())
        if found is None:
            position = start.start() + 1
        else:
            yield found
            position = found.end()


def _scan(text: str) -> Iterator[tuple[Fact | None, tuple[str, ...]]]:
    """Every figure in the text: (the fact, when it is fact-like; its grounding keys)."""
    if _DIGIT.search(text) is None:
        return
    for m in _figure_matches(text):
        said = m.group(0).strip()
        if m.group("clock") is not None:
            readings = _clock(int(m.group("clock_h")), int(m.group("clock_m")), m.group("clock_ap"))
            if readings is None:
                yield None, (canonical_number(m.group("clock_h")), canonical_number(m.group("clock_m")))
            else:
                yield Fact("time", said, "/".join(readings), readings), readings
        elif m.group("hour") is not None:
            readings = _clock(int(m.group("hour_h")), 0, m.group("hour_ap"))
            if readings is None:
                yield None, (canonical_number(m.group("hour_h")),)
            else:
                yield Fact("time", said, readings[0], readings), readings
        elif m.group("money") is not None:
            numbers = _read_number(m.group("money_n"))[0]
            yield Fact("price", said, _canonical(m.group("money_sign"), numbers, ""), numbers), numbers
        elif m.group("amount") is not None:
            numbers = _read_number(m.group("amount_n"))[0]
            if m.group("percent") is not None:
                yield Fact("percent", said, _canonical("", numbers, "%"), numbers), numbers
                continue
            sign = m.group("sign_after") or _CURRENCY_WORDS.get(m.group("unit").lower())
            if sign is not None:
                yield Fact("price", said, _canonical(sign, numbers, ""), numbers), numbers
            else:
                unit = _UNITS[m.group("unit").lower()]
                name = unit[:-1] if numbers == ("1",) else unit
                yield Fact("duration", said, _canonical("", numbers, f" {name}"), numbers), numbers
        else:
            numbers, digits = _read_number(m.group("number_n"))
            if digits < MIN_FACT_NUMBER_DIGITS:
                yield None, numbers
            else:
                yield Fact("number", said, numbers[0] if len(numbers) == 1 else "/".join(numbers), numbers), numbers


def _canonical(before: str, numbers: tuple[str, ...], after: str) -> str:
    """A fact's canonical form: its number (each reading, "/" between) with its kind's marks."""
    if len(numbers) == 1:
        return f"{before}{numbers[0]}{after}"
    return "/".join(f"{before}{number}{after}" for number in numbers)


def extract_facts(text: str) -> list[Fact]:
    """The fact-like figures the text states, in order (repeats kept)."""
    return [fact for fact, _ in _scan(text) if fact is not None]


def grounding_keys(text: str) -> set[str]:
    """The keys of every time and number in the text, fact-like or not."""
    keys: set[str] = set()
    for _, found in _scan(text):
        keys.update(found)
    return keys


# ----------------------------------------------------------------------------------------- JSON


def _json_scalars(value: Any) -> Iterator[str]:
    # Depth first with a stack of its own, not recursion: a value nested as deep as the decoder
    # accepts (about a thousand levels) must not exhaust Python's stack here.
    stack: list[Any] = [value]
    while stack:
        value = stack.pop()
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, str):
            yield value
        elif isinstance(value, float):
            yield _unambiguous(repr(value))
        elif isinstance(value, int):
            yield repr(value)
        elif isinstance(value, dict):
            for key in sorted(value, key=str)[::-1]:
                stack.append(value[key])
                stack.append(str(key))
        elif isinstance(value, (list, tuple)):
            stack.extend(reversed(value))
        else:
            yield str(value)


def _unambiguous(number: str) -> str:
    """A JSON number is written as English writes it; with three decimals ("6.125") it would also be
    read as thousands (6125, `_read_number`) and ground an invented "$6,125". A fourth, zero,
    decimal keeps its value and its one reading."""
    _whole, dot, fraction = number.partition(".")
    return f"{number}0" if dot and len(fraction) == 3 and fraction.isdigit() else number


def json_text(value: Any) -> str:
    """The strings and numbers of a JSON value (keys included), one per line, keys sorted."""
    return "\n".join(_json_scalars(value))


# ------------------------------------------------------------------------------- shared readings

# Several scorers fold the same turn: hallucination, knowledge base recall and naturalness all read an
# agent turn's words and phrases, hallucination the figures of every turn. `reading(text)` and
# `figures(text)` compute each once per text and share it, immutable; the cache keyed on the text means
# the scorers that fold one event after another find it ready, and it is large enough to hold what
# agents say again and again across calls (greetings, confirmations, closings), which is most of what
# they say. Full, the two hold about 30 MB (some 1.9 KB a text, measured in a soak: a worker's memory
# rises to it over its first hour or so of varied traffic, then stays). Same definitions as above.
# A text longer than CACHED_TEXT_MAX_CHARS is read again each time instead: such monologues are not
# said again word for word, and cached, distinct texts of 50,000 characters took gigabytes.
READING_CACHE_SIZE = 16384
CACHED_TEXT_MAX_CHARS = 1_000


def _anchor_words(phrases: frozenset[str]) -> frozenset[str]:
    # One word of each phrase (its longest): a text none of whose words is an anchor holds no phrase,
    # so most turns skip the phrase scan.
    return frozenset(max(phrase_text(p).split(), key=len) for p in phrases)


_CONFUSION_ANCHORS = _anchor_words(CONFUSION_PHRASES)
_ROBOTIC_ANCHORS = _anchor_words(ROBOTIC_PHRASES)


class Reading(msgspec.Struct, frozen=True, gc=False):
    """A text as the phrase-reading scorers see it."""

    words: tuple[str, ...]  # words(text)
    phrase: str  # phrase_text(text)
    significant: tuple[str, ...]  # significant_words(text)
    negated: bool  # has_negation(words)
    confusion: tuple[str, ...]  # confusion_phrases(text)
    robotic: tuple[str, ...]  # robotic_phrases(text)


def reading(text: str) -> Reading:
    return _read(text) if len(text) > CACHED_TEXT_MAX_CHARS else _cached_reading(text)


def _read(text: str) -> Reading:
    found = words(text)
    phrase = " ".join(found)
    # has_negation(found), looking at single words only when the text holds an "n't" at all.
    negated = not NEGATION_WORDS.isdisjoint(found) or (_NEGATING_SUFFIX in phrase and has_negation(found))
    confusion = CONFUSION_RE.findall(phrase) if not _CONFUSION_ANCHORS.isdisjoint(found) else ()
    robotic = ROBOTIC_RE.findall(phrase) if not _ROBOTIC_ANCHORS.isdisjoint(found) else ()
    return Reading(tuple(found), phrase, tuple(significant(found)), negated, tuple(confusion), tuple(robotic))


_cached_reading = lru_cache(maxsize=READING_CACHE_SIZE)(_read)


class Figures(msgspec.Struct, frozen=True, gc=False):
    facts: tuple[Fact, ...]  # extract_facts(text)
    keys: frozenset[str]  # grounding_keys(text)


_NO_FIGURES = Figures((), frozenset())


def figures(text: str) -> Figures:
    return _figures(text) if len(text) > CACHED_TEXT_MAX_CHARS else _cached_figures(text)


def _figures(text: str) -> Figures:
    if _DIGIT.search(text) is None:
        return _NO_FIGURES
    facts: list[Fact] = []
    keys: set[str] = set()
    for fact, found in _scan(text):
        if fact is not None:
            facts.append(fact)
        keys.update(found)
    return Figures(tuple(facts), frozenset(keys))


_cached_figures = lru_cache(maxsize=READING_CACHE_SIZE)(_figures)

# An agent's prompt and flow are long and the same for every call of the agent: their figures are
# cached whatever their length, in a cache of their own sized for agents, not for turns.
AGENT_CONFIGURATION_CACHE_SIZE = 256
agent_configuration_figures = lru_cache(maxsize=AGENT_CONFIGURATION_CACHE_SIZE)(_figures)
