"""Text in any script, put in the form the text rules (scorers/text.py) read it in.

Unicode forms
    The same word can reach two texts as different code points: composed or decomposed ("é" as one
    character or as "e" and a combining accent: a correction typed on another system), with invisible
    format characters in it (the direction marks an editor puts around a number in Arabic or Hebrew,
    a soft hyphen, a zero-width space between words), or in another case than `lower` can match ("ß"
    and "SS", Turkish "İ"). Text that is not ASCII is compared in one form (`unicode_normal`,
    `folded`), and its words include their combining marks (`word_pattern`). ASCII text, nearly every
    transcript, is already in that form and takes none of these steps.

Scripts written without spaces
    Chinese and Japanese (`IDEOGRAPHS`) are read character by character or in character pairs; the
    letters of every script that writes figures against its words (`UNSPACED_LETTERS`) do not glue a
    figure into a code.
"""

from __future__ import annotations

import re
import unicodedata

from scorers.combining_marks import COMBINING_MARK_RANGES

# ------------------------------------------------------------------------------- Unicode forms

# The form: format characters removed (a zero-width space made a space), case folded, the dot that
# folding puts on Turkish "İ" dropped, then composed (NFC).
_ZERO_WIDTH_SPACE = 0x200B
_DOTTED_I_FOLDED = "i\u0307"  # "İ".casefold()


class _FormatCharacters(dict[int, int | None]):
    """A `str.translate` table that removes format characters (Unicode category Cf) and makes a
    zero-width space a space; each character is classified the first time a text holds it (the
    table keeps the first 65,536 characters met, as wer's punctuation table does)."""

    __slots__ = ()
    MAX_REMEMBERED = 65_536

    def __missing__(self, code: int) -> int | None:
        kept: int | None = code if unicodedata.category(chr(code)) != "Cf" else None
        if len(self) < self.MAX_REMEMBERED:
            self[code] = kept
        return kept


_FORMAT_CHARACTERS = _FormatCharacters({_ZERO_WIDTH_SPACE: ord(" ")})


def unicode_normal(text: str) -> str:
    """`text` composed (NFC), its format characters removed and a zero-width space made a space."""
    return text if text.isascii() else unicodedata.normalize("NFC", text.translate(_FORMAT_CHARACTERS))


def folded(text: str) -> str:
    """`text` in the form texts are compared in (above), case folded."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFC", text.translate(_FORMAT_CHARACTERS).casefold().replace(_DOTTED_I_FOLDED, "i"))


# A word as `scorers.text.words` reads it: a run of letters, digits and combining marks, with
# apostrophes inside. The marks (Devanagari's vowel signs, Arabic's and Hebrew's vowel points, an
# accent left uncomposed) are not in `\w`, which cut a word in two at each ("नमस्ते" into "नमस" and
# "त").
_LETTER = f"(?:[^\\W_]|[{COMBINING_MARK_RANGES}])"
_WORD = re.compile(f"{_LETTER}+(?:'{_LETTER}+)*")


def word_pattern() -> re.Pattern[str]:
    return _WORD


# --------------------------------------------------------------------- scripts without spaces

# Chinese and Japanese are written without spaces between words, and no rule here can tell where one
# ends. So each Han or kana character is a word where words are counted or aligned (WER, a turn's
# length: as a character error rate does), and where texts are matched by their words (knowledge
# base recall, repeated turns), a run of them is read as its overlapping character pairs ("余额不足"
# as "余额", "额不", "不足"), which match the same passage said inside a longer sentence. (The Unicode
# blocks of kana, the CJK ideographs, their extensions and compatibility forms, half-width katakana.)
IDEOGRAPHS = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
IDEOGRAPH = re.compile(f"[{IDEOGRAPHS}]")
_IDEOGRAPH_RUNS_AND_THE_REST = re.compile(f"[{IDEOGRAPHS}]+|[^{IDEOGRAPHS}]+")


def ideograph_pairs(word: str) -> list[str]:
    """A word as `scorers.text.words` gives it: its runs of ideographs as overlapping pairs (a lone
    one as itself)."""
    if IDEOGRAPH.search(word) is None:
        return [word]
    pieces = []
    for part in _IDEOGRAPH_RUNS_AND_THE_REST.findall(word):
        if IDEOGRAPH.match(part):
            pieces.extend([part] if len(part) == 1 else [part[i : i + 2] for i in range(len(part) - 1)])
        elif part.strip("'"):
            pieces.append(part.strip("'"))
    return pieces


def ideographs_spaced(text: str) -> str:
    """`text` with each Han or kana character a word of its own (above): for aligning (WER)."""
    return IDEOGRAPH.sub(r" \g<0>", text) if has_ideographs(text) else text


def ideograph_count(text: str) -> int:
    """How many Han or kana characters `text` holds."""
    return 0 if text.isascii() else len(IDEOGRAPH.findall(text))


def without_ideographs(text: str) -> str:
    """`text` with each Han or kana character made a space."""
    return text if text.isascii() else IDEOGRAPH.sub(" ", text)


def is_ideograph_pair(word: str) -> bool:
    return len(word) == 2 and IDEOGRAPH.match(word) is not None and IDEOGRAPH.match(word, 1) is not None


def has_ideographs(text: str) -> bool:
    return not text.isascii() and IDEOGRAPH.search(text) is not None


# A figure glued to a letter is part of a code ("XK1234") or an ordinal ("4th"), not a figure; but
# scripts written without spaces between words (Han, kana, Thai, Lao, Khmer, Myanmar), and Korean,
# whose particles and counters attach to a number, glue figures to words as a matter of course:
# "订单号是4521", "9800円", "4521번" state figures. Their letters do not count as glue.
UNSPACED_LETTERS = (
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
)
