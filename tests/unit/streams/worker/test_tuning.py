"""CALLQA_GC_THRESHOLDS: read as three whole numbers, refused with a clear message otherwise."""

import pytest

from streams.tuning import GC_THRESHOLDS, gc_thresholds


def test_unset_or_empty_keeps_the_scorers_thresholds():
    assert gc_thresholds(None) == GC_THRESHOLDS and gc_thresholds("") == GC_THRESHOLDS


def test_three_whole_numbers_are_taken():
    assert gc_thresholds("700,10,10") == (700, 10, 10)
    assert gc_thresholds(" 1000, 5 ,0") == (1000, 5, 0)


@pytest.mark.parametrize("text", ["abc", "700,10", "700,10,10,1", "700,-1,10", "7e2,10,10", "700,,10"])
def test_anything_else_is_refused_naming_the_setting(text):
    with pytest.raises(ValueError, match=r"CALLQA_GC_THRESHOLDS must be three whole numbers.*got"):
        gc_thresholds(text)
