"""Progress bars on stderr (quiet when stderr is not a terminal, e.g. in CI logs)."""

from __future__ import annotations

import sys

from tqdm import tqdm


def progress_bar(total: int | None, desc: str, unit: str = "it", unit_scale: bool = False) -> tqdm:
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=unit_scale, file=sys.stderr,
                disable=not sys.stderr.isatty(), leave=False, dynamic_ncols=True)
