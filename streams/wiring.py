"""Build the scoring engine from settings, the same way for the worker and for replay."""

from __future__ import annotations

from models.cohorts import CohortDefinition, CohortError
from scorers.cohorts import CohortBook
from scorers.engine import CallEngine
from streams.config import Settings
from streams.documents import load_documents


def cohort_book(settings: Settings, cohorts_file: str | None = None) -> CohortBook:
    """Cohorts from a file (JSON list / `{"cohorts": [...]}` / TOML `[[cohorts]]`), validated."""
    book = CohortBook()
    path = cohorts_file or settings.cohorts_file
    if path:
        for definition in load_cohorts(path, book):
            book.apply(definition)
    return book


def load_cohorts(path: str, book: CohortBook) -> list[CohortDefinition]:
    """The cohorts of a file, each validated against `book`'s metrics. A `cohort_id` may appear once:
    a second definition would silently replace the first. Raises CohortError naming the file and the
    cohort."""
    definitions: list[CohortDefinition] = []
    seen: set[str] = set()
    for index, document in enumerate(load_documents(path, "cohorts"), start=1):
        try:
            definition = book.decode(document)
        except CohortError as exc:
            raise CohortError(f"{path}: cohort #{index}: {exc}") from None
        if definition.cohort_id in seen:
            raise CohortError(f"{path}: cohort #{index}: cohort_id {definition.cohort_id!r} is used twice")
        seen.add(definition.cohort_id)
        definitions.append(definition)
    return definitions


def build_engine(settings: Settings, cohorts_file: str | None = None) -> CallEngine:
    return CallEngine(
        cohorts=cohort_book(settings, cohorts_file),
        allowed_lateness_ms=settings.allowed_lateness_ms,
        retention_after_end_ms=int(settings.retention_after_end_s * 1000),
    )
