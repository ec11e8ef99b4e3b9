"""Build the scoring engine from settings, the same way for the worker and for replay."""

from __future__ import annotations

from scorers.cohorts import CohortBook
from scorers.engine import CallEngine
from streams.config import Settings
from streams.documents import load_documents


def cohort_book(settings: Settings, cohorts_file: str | None = None) -> CohortBook:
    """Cohorts from a file (JSON list / `{"cohorts": [...]}` / TOML `[[cohorts]]`), validated."""
    book = CohortBook()
    path = cohorts_file or settings.cohorts_file
    if path:
        for document in load_documents(path, "cohorts"):
            book.apply(document)
    return book


def build_engine(settings: Settings, cohorts_file: str | None = None) -> CallEngine:
    return CallEngine(
        cohorts=cohort_book(settings, cohorts_file),
        allowed_lateness_ms=settings.allowed_lateness_ms,
        retention_after_end_ms=int(settings.retention_after_end_s * 1000),
    )
