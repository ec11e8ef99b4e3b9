"""Progress bars on stderr (quiet when stderr is not a terminal, e.g. in CI logs)."""

from __future__ import annotations

import sys

from tqdm import tqdm


class _Bar(tqdm):
    # No monitor thread: `callqa replay --jobs` forks its jobs while a bar shows, and a fork copies
    # no threads but whatever locks they hold. These bars are updated often enough not to need one.
    monitor_interval = 0


def progress_bar(total: int | None, desc: str, unit: str = "it", unit_scale: bool = False) -> tqdm:
    return _Bar(total=total, desc=desc, unit=unit, unit_scale=unit_scale, file=sys.stderr,
                disable=not sys.stderr.isatty(), leave=False, dynamic_ncols=True)
