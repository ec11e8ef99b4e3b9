"""Text leaves of an action list made comparable, in the harness's order and with NeMo's own rules
(`nemo.collections.asr.parts.utils.eval_utils`, which the harness calls).

1. `ignore_capitalization`: lowercased.
2. `ignore_punctuation`: each of NeMo's punctuation characters removed (ASCII only: "é" and "–" stay).
3. `clean_text`: NeMo's `clean_label` without number words: stripped; lowercased only under
   `ignore_capitalization`; quote marks removed; separators such as `/ , . : _ ! ;` become spaces;
   curly apostrophes become "'"; runs of whitespace become one space. It keeps "-" and "'".
"""

from __future__ import annotations

NEMO_PUNCTUATION = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'
# clean_label's character classes, as NeMo lists them.
CLEAN_TO_SPACE = '/?*",.:=?_{|}~¨«·»¡¿„…‧‹›≪≫!:;ː→'
CLEAN_TO_NOTHING = '`¨´‘’“”`ʻ‘’“"‘”'
CLEAN_TO_APOSTROPHE = "‘’ʻ‘’‘"


def remove_punctuation(text: str) -> str:
    return text.translate({ord(char): None for char in NEMO_PUNCTUATION})


def clean_label(text: str, *, lowercase: bool) -> str:
    text = text.strip()
    if lowercase:
        text = text.lower()
    # (in NeMo's order: removals first, so a curly quote is removed before it could become "'")
    for char in CLEAN_TO_NOTHING:
        text = text.replace(char, "")
    for char in CLEAN_TO_SPACE:
        text = text.replace(char, " ")
    for char in CLEAN_TO_APOSTROPHE:
        text = text.replace(char, "'")
    return " ".join(text.split())


def comparable_text(text: str, *, ignore_capitalization: bool, ignore_punctuation: bool, clean_text: bool) -> str:
    if ignore_capitalization:
        text = text.lower()
    if ignore_punctuation:
        text = remove_punctuation(text)
    if clean_text:
        text = clean_label(text, lowercase=ignore_capitalization)
    return text
