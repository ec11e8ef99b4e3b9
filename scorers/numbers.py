"""Numbers read out of free-form JSON (RTVI payloads, tool results, judge answers).

Such values may be any JSON: a bool, a string, an integer of 400 digits (JSON has no limit, and
`float()` of it overflows), or NaN and infinity (MessagePack carries them). Scorers read them through
these helpers, so that none of that can raise or turn a score into NaN.
"""

from __future__ import annotations

import math
from typing import Any


def finite_number(value: Any) -> float | None:
    """`value` as a finite float when it is a JSON number (not a bool) that has one, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond the float range
        return None
    return number if math.isfinite(number) else None


def count(value: Any) -> int:
    """`value` as a whole count (truncated toward zero), 0 when it is not a finite, non-negative JSON
    number: a negative count counts nothing (as a negative TTFB measures nothing), rather than taking
    tokens off the call's and its run's totals."""
    number = finite_number(value)
    return int(number) if number is not None and number >= 0 else 0
