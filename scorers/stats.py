"""Small statistics shared by the scorers and the run summaries."""

from __future__ import annotations

from collections.abc import Sequence


def nearest_rank(sorted_values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile without interpolation, as the evaluation harness computes it:
    `s[int(n * fraction)]`, clamped to the last element (so p50 = s[n // 2])."""
    n = len(sorted_values)
    return sorted_values[min(int(n * fraction), n - 1)]


def latency_stats(samples: Sequence[float], empty: float = 0.0) -> dict[str, float | int]:
    """count, mean_ms, p50_ms, p95_ms, min_ms, max_ms; every figure is `empty` when there are none."""
    if not samples:
        return {
            "count": int(empty),
            "mean_ms": empty,
            "p50_ms": empty,
            "p95_ms": empty,
            "min_ms": empty,
            "max_ms": empty,
        }
    ordered = sorted(samples)
    return {
        "count": len(ordered),
        "mean_ms": float(sum(ordered) / len(ordered)),
        "p50_ms": float(nearest_rank(ordered, 0.5)),
        "p95_ms": float(nearest_rank(ordered, 0.95)),
        "min_ms": float(ordered[0]),
        "max_ms": float(ordered[-1]),
    }
