"""Naturalness: how human and fluent the agent sounded.

Heuristic (used when no LLM judge answered), over the agent's turns:
- a turn's words are the whitespace-separated tokens of its text that hold a letter or digit ("I'm
  here, okay?" is 3 words, and so is "Sure , okay ?"); an agent turn with none (blank, or "...") is
  not a turn the agent spoke and is ignored. Chinese and Japanese use no spaces
  (a whole sentence was one word): each of their characters is a word, and the rest of such a text
  counts its whitespace-separated tokens that hold a letter or digit ("はい、OKです。" is 5 words);
- start at 100;
- −15 per repeated turn: a turn whose normalised text (`scorers.text.phrase_text`: lowercase, words
  only, so case and punctuation do not matter) equals an earlier agent turn's; the third identical
  turn is a second repeat. A turn with no words after normalisation ("...") is never a repeat;
- −25 per robotic phrase occurrence (`scorers.text.ROBOTIC_PHRASES`);
- −8 per turn of more than 60 words (60 is fine);
- −1.5 per word the average turn length is above 35 (fractions count: 36.5 → −2.25);
- floored at 0. Value: the average words per agent turn (not rounded). Not applicable when the agent
  did not speak.

The turns already seen are kept as fixed-size digests of their normalised text, not as the text.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from models.call_state import CallState
from models.events import Turn
from models.results import MetricResult
from scorers.qa.base import QaMetric
from scorers.text import reading
from scorers.text_forms import ideograph_count, without_ideographs

REPEATED_TURN_PENALTY = 15
ROBOTIC_PHRASE_PENALTY = 25
LONG_TURN_WORDS = 60
LONG_TURN_PENALTY = 8
COMFORTABLE_AVERAGE_WORDS = 35
PER_WORD_ABOVE_AVERAGE_PENALTY = 1.5
NOT_APPLICABLE = "The agent did not speak"


def _digest(normalised: str) -> int:
    # A stable digest (unlike hash()), so a restored state still recognises the turns it saw; kept as
    # an int (a third of the memory of its hex text).
    return int.from_bytes(hashlib.blake2b(normalised.encode("utf-8"), digest_size=16).digest(), "big")


def word_count(text: str) -> int:
    """Words of a turn as naturalness counts them (tokens with a letter or digit; each Chinese or
    Japanese character one word)."""
    ideographs = ideograph_count(text)
    if not ideographs:
        # (One scan for the tokens of punctuation alone, rather than a search in every token.)
        return len(text.split()) - len(_NO_LETTER_OR_DIGIT_TOKEN.findall(text))
    return ideographs + sum(1 for token in without_ideographs(text).split() if _HAS_LETTER_OR_DIGIT.search(token))


_HAS_LETTER_OR_DIGIT = re.compile(r"[^\W_]")
_NO_LETTER_OR_DIGIT_TOKEN = re.compile(r"(?<!\S)(?:[^\w\s]|_)+(?!\S)")


@dataclass(slots=True)
class NaturalnessAcc:
    turns: int = 0
    words: int = 0
    repeated_turns: int = 0
    robotic_phrases: int = 0
    long_turns: int = 0
    seen: set[int] = field(default_factory=set)


class Naturalness(QaMetric):
    name = "naturalness"
    label = "Naturalness"
    value_meaning = "Average words per agent turn"
    default_threshold = 60
    judge_kind = "llm"
    handles = frozenset({"turn"})

    def start(self) -> NaturalnessAcc:
        return NaturalnessAcc()

    def update(self, acc: NaturalnessAcc, event: Turn, call: CallState) -> None:
        if event.data.role != "agent":
            return
        words = word_count(event.data.text)
        if words == 0:
            return
        acc.turns += 1
        acc.words += words
        if words > LONG_TURN_WORDS:
            acc.long_turns += 1
        read = reading(event.data.text)
        normalised = read.phrase
        acc.robotic_phrases += len(read.robotic)
        if normalised:
            digest = _digest(normalised)
            if digest in acc.seen:
                acc.repeated_turns += 1
            else:
                acc.seen.add(digest)

    def finalize(self, acc: NaturalnessAcc, call: CallState) -> MetricResult:
        if acc.turns == 0:
            return self.not_applicable(NOT_APPLICABLE)
        average = acc.words / acc.turns
        score = (
            100
            - REPEATED_TURN_PENALTY * acc.repeated_turns
            - ROBOTIC_PHRASE_PENALTY * acc.robotic_phrases
            - LONG_TURN_PENALTY * acc.long_turns
            - PER_WORD_ABOVE_AVERAGE_PENALTY * max(0.0, average - COMFORTABLE_AVERAGE_WORDS)
        )
        return self.scored(
            average,
            max(0.0, score),
            agent_turns=acc.turns,
            repeated_turns=acc.repeated_turns,
            robotic_phrases=acc.robotic_phrases,
            long_turns=acc.long_turns,
        )
