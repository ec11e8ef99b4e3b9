"""Progress bars on stderr (quiet when stderr is not a terminal, e.g. in CI logs)."""

from __future__ import annotations

import sys
from typing import Any


class _QuietBar:
    """What a disabled tqdm bar does (nothing; `n` stays 0), without importing tqdm: when stderr is
    not a terminal (a pipe, CI, a benchmark) its import was a tenth of `callqa replay`'s start-up."""

    def __init__(self, total: int | None) -> None:
        self.n = 0
        self.total = total

    def update(self, n: float | None = 1) -> None:
        pass

    def close(self) -> None:
        pass


def shown(bar: Any) -> bool:
    """Whether `bar` shows anything: a caller may skip counting for a quiet one."""
    return not isinstance(bar, _QuietBar)


def progress_bar(total: int | None, desc: str, unit: str = "it", unit_scale: bool = False) -> Any:
    if not sys.stderr.isatty():
        return _QuietBar(total)
    from tqdm import tqdm

    class _Bar(tqdm):
        # No monitor thread: `callqa replay --jobs` forks its jobs while a bar shows, and a fork copies
        # no threads but whatever locks they hold. These bars are updated often enough not to need one.
        monitor_interval = 0

    return _Bar(
        total=total,
        desc=desc,
        unit=unit,
        unit_scale=unit_scale,
        file=sys.stderr,
        disable=False,
        leave=False,
        dynamic_ncols=True,
    )
