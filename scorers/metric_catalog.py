"""The metric catalog behind `GET /qa/metrics`: every QA metric with its label, meaning and default pass-at."""

from __future__ import annotations

from typing import Any

from scorers.registry import ScorerRegistry, default_registry

# The "Judge" column of the seed's summary table, by judge kind.
JUDGE_LABELS = {"llm": "LLM, heuristic fallback", "computed": "Computed"}


def metric_catalog(registry: ScorerRegistry | None = None) -> list[dict[str, Any]]:
    registry = registry if registry is not None else default_registry()
    return [
        {
            "metric": metric.name,
            "label": metric.label,
            "value": metric.value_meaning,
            "default_threshold": metric.default_threshold,
            "judge": JUDGE_LABELS[metric.judge_kind],
            "judge_kind": metric.judge_kind,
        }
        for metric in registry.qa
    ]
