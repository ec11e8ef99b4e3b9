"""Word error rate: how accurately the caller's speech was transcribed, against human corrections.

Per user utterance, the word-level edit distance (substitutions + deletions + insertions, the count
jiwer's alignment gives, computed by rapidfuzz as jiwer's is) between the reference and the transcribed
text; summed over the call's user utterances and divided by the total number of reference words. The
reference is the corrected text when a `transcript.corrected` event names that turn, else the
transcript itself (so WER is 0 and `details.estimated` is true until a correction of a user turn
arrives). Score: (1 − WER) × 100, floored at 0.

Both texts are normalised the same way before aligning: lower case, punctuation removed (so "don't"
and "dont", "Hello," and "hello" are the same word), runs of whitespace collapsed. Text that is not
ASCII is first put in one Unicode form (scorers/text_forms.py): composed, invisible format
characters removed, case folded, so a word typed decomposed in a correction, or "ß" against "SS",
is the same word. Chinese and Japanese, written without spaces, are aligned character by character:
each Han or kana character is a word (a character error rate for them, the words of other scripts
in the same text still words). Punctuation that
only ever stands between words — a slash, an em dash or horizontal bar, a typed one ("--"), an
ellipsis ("…" or a run of periods) — becomes a space instead: deleted, "Yes—I" would be the one word
"yesi", and a correction that differs from the transcript only in how it punctuates ("Yes, I") would
count as errors. Hyphens and en dashes, which join ("well-known", "555–0100", "9–5"), are deleted as
jiwer deletes them, so that a hyphen and an en dash read the same.

`transcript.corrected` names a turn by its 0-based index over all of the call's turns in arrival
order (`call.turns`). A correction of an agent turn, or of an index the call does not have, changes
nothing; a later correction of the same turn replaces the earlier one. Corrections arrive mostly after
the call ended; the engine then re-scores the call, and only the corrected turn is re-aligned here.

`value` is the WER rounded to 4 decimals; the score is computed from the unrounded WER.

Aligning costs the product of the two texts' lengths, and a turn may hold a third of a million Chinese
characters within the message size limit: aligned in full, one correction of it took a minute of a
worker's time. The words the two texts share at their start and at their end are set aside first (that
changes no edit distance), and what is left is aligned in full up to MAX_ALIGNED_CELLS, past that only
for a distance small enough to find within the same work. A distance larger than that is counted as
its upper bound, the longer text's word count, and the turn as `details.unaligned_turns`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from rapidfuzz.distance import Levenshtein

from models.call_state import CallState, Record
from models.events import Event, TranscriptCorrected, Turn
from models.results import MetricResult
from scorers.qa.base import QaMetric
from scorers.text_forms import folded, ideographs_spaced, unicode_normal

NO_USER_SPEECH = "No user speech"
VALUE_DECIMALS = 4


def _is_punctuation(code: int) -> bool:
    """Punctuation as jiwer's `RemovePunctuation` means it: a Unicode category starting with "P"."""
    return unicodedata.category(chr(code)).startswith("P")


class _PunctuationDeletions(dict[int, int | str | None]):
    """A `str.translate` table that deletes what jiwer's `RemovePunctuation` removes: every character
    whose Unicode category starts with "P". Each character is classified the first time a text holds
    it: jiwer classifies all 1.1 million code points when the transform is made, which took some
    0.4 s of every process's start (a third of `callqa replay`'s start-up on a small log).

    Punctuation (under a thousand characters) is always kept; other characters only up to
    `MAX_REMEMBERED`, so that transcripts of every script at once cannot grow a long-running
    worker's table towards the million code points (~80 MB). Past it, a character not remembered
    is classified again each time it is met: slower, never different."""

    __slots__ = ()
    MAX_REMEMBERED = 65_536

    def __missing__(self, code: int) -> int | None:
        if _is_punctuation(code):
            self[code] = None
            return None
        if len(self) < self.MAX_REMEMBERED:
            self[code] = code
        return code


# Punctuation between words, which separates them (see the module's docstring).
SEPARATORS = "/\u2014\u2015\u2026"  # slash, em dash, horizontal bar, ellipsis
_PUNCTUATION = _PunctuationDeletions({ord(separator): " " for separator in SEPARATORS})
# The same for ASCII text (nearly every transcript), as bytes: bytes.translate maps through a 256-entry
# table and deletes, where str.translate looks every distinct character up in the table above.
_ASCII_SEPARATORS = bytes.maketrans(b"/", b" ")
_ASCII_PUNCTUATION = bytes(code for code in range(128) if _is_punctuation(code) and chr(code) not in SEPARATORS)
_TYPED_SEPARATORS = re.compile(r"\.\.+|--+")  # an ellipsis typed as periods, an em dash as hyphens
_MULTIPLE_SPACES = re.compile(r"\s\s+")  # jiwer.RemoveMultipleSpaces


def without_punctuation(text: str) -> str:
    if ".." in text or "--" in text:
        text = _TYPED_SEPARATORS.sub(" ", text)
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_SEPARATORS, _ASCII_PUNCTUATION).decode("ascii")
    return text.translate(_PUNCTUATION)


def normalise(text: str) -> list[str]:
    """What jiwer's ToLowerCase, RemovePunctuation, RemoveMultipleSpaces, Strip and
    ReduceToListOfListOfWords make of `text`, in that order, but for the separators above: its words
    (jiwer's one sentence)."""
    collapsed = _MULTIPLE_SPACES.sub(" ", ideographs_spaced(without_punctuation(folded(text)))).strip()
    return [word for word in collapsed.split(" ") if word]


# `word_count` runs on every user turn: it counts the words `normalise` gives without building them.
# Case folding is left out: it never turns a character into punctuation or whitespace, so it cannot
# change the count.
def word_count(text: str) -> int:
    """len(normalise(text)): the words jiwer aligns, counted."""
    words = _MULTIPLE_SPACES.sub(" ", ideographs_spaced(without_punctuation(unicode_normal(text)))).strip().split(" ")
    return len(words) - words.count("")


# Word pairs aligned per utterance: two texts of 14,000 words each, some 40 ms.
MAX_ALIGNED_CELLS = 200_000_000


@dataclass(frozen=True, slots=True)
class Alignment:
    errors: int
    exact: bool  # False: too long to align within MAX_ALIGNED_CELLS, `errors` is the upper bound


def edit_distance(reference: str, hypothesis: str) -> Alignment:
    """Word-level substitutions + deletions + insertions turning `reference` into `hypothesis`."""
    ref, hyp = normalise(reference), normalise(hypothesis)
    shared_start = 0
    for ref_word, hyp_word in zip(ref, hyp, strict=False):
        if ref_word != hyp_word:
            break
        shared_start += 1
    ref, hyp = ref[shared_start:], hyp[shared_start:]
    shared_end = 0
    for ref_word, hyp_word in zip(reversed(ref), reversed(hyp), strict=False):
        if ref_word != hyp_word:
            break
        shared_end += 1
    if shared_end:
        ref, hyp = ref[:-shared_end], hyp[:-shared_end]
    longer = max(len(ref), len(hyp))
    if not ref or not hyp or len(ref) * len(hyp) <= MAX_ALIGNED_CELLS:
        return Alignment(Levenshtein.distance(ref, hyp), exact=True)
    # (With a cutoff the alignment keeps to a band of that width: the work is the cutoff × the length.)
    cutoff = MAX_ALIGNED_CELLS // longer
    distance = Levenshtein.distance(ref, hyp, score_cutoff=cutoff)
    return Alignment(distance, exact=True) if distance <= cutoff else Alignment(longer, exact=False)


class UserUtterance(Record):
    transcript: str
    reference_words: int
    errors: int = 0
    corrected: bool = False


@dataclass(slots=True)
class WerAcc:
    # Keyed by the turn's index in `call.turns`, the index corrections name.
    utterances: dict[int, UserUtterance] = field(default_factory=dict)
    reference_words: int = 0
    errors: int = 0
    corrected_turns: int = 0
    # Turns whose errors are the upper bound (see MAX_ALIGNED_CELLS); a tuple, as nearly always empty.
    unaligned: tuple[int, ...] = ()


class WordErrorRate(QaMetric):
    name = "wer"
    label = "Word error rate"
    value_meaning = "WER (0 to 1 or more)"
    default_threshold = 80
    judge_kind = "computed"
    handles = frozenset({"turn", "transcript.corrected"})

    def start(self) -> WerAcc:
        return WerAcc()

    def update(self, acc: WerAcc, event: Event, call: CallState) -> None:
        utterance: UserUtterance | None
        if isinstance(event, Turn):
            if event.data.role == "user":
                # Uncorrected, the transcript is its own reference: no errors, nothing to align.
                utterance = UserUtterance(event.data.text, word_count(event.data.text))
                acc.utterances[len(call.turns) - 1] = utterance
                acc.reference_words += utterance.reference_words
        elif isinstance(event, TranscriptCorrected):
            utterance = acc.utterances.get(event.data.turn_index)
            if utterance is not None:
                self._correct(acc, event.data.turn_index, utterance, event.data.text)

    @staticmethod
    def _correct(acc: WerAcc, turn_index: int, utterance: UserUtterance, reference: str) -> None:
        acc.reference_words -= utterance.reference_words
        acc.errors -= utterance.errors
        alignment = edit_distance(reference, utterance.transcript)
        utterance.reference_words = word_count(reference)
        utterance.errors = alignment.errors
        acc.reference_words += utterance.reference_words
        acc.errors += utterance.errors
        if alignment.exact != (turn_index not in acc.unaligned):
            acc.unaligned = tuple(sorted(set(acc.unaligned) ^ {turn_index}))
        if not utterance.corrected:
            utterance.corrected = True
            acc.corrected_turns += 1

    def finalize(self, acc: WerAcc, call: CallState) -> MetricResult:
        if acc.reference_words == 0:
            return self.not_applicable(NO_USER_SPEECH)
        wer = acc.errors / acc.reference_words
        return self.scored(
            round(wer, VALUE_DECIMALS),
            (1 - wer) * 100,
            reference_words=acc.reference_words,
            errors=acc.errors,
            estimated=acc.corrected_turns == 0,
            corrected_turns=acc.corrected_turns,
            **({"unaligned_turns": len(acc.unaligned)} if acc.unaligned else {}),
        )
