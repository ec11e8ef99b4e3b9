"""Build the scoring engine from settings, the same way for the worker and for replay."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from models.cohorts import CohortDefinition, CohortError
from models.documents import decode_each_once, load_document_file
from scorers.cohorts import CohortBook
from scorers.engine import CallEngine
from streams.config import Settings


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
    return decode_each_once(
        path,
        load_document_file(path, "cohorts", CohortError),
        lambda document, number: _numbered(number, book.decode, document),
        lambda definition: definition.cohort_id,
        lambda definition, number: f"cohort #{number}: cohort_id {definition.cohort_id!r} is used twice",
        CohortError,
    )


def _numbered(number: int, decode: Callable[[Any], CohortDefinition], document: Any) -> CohortDefinition:
    try:
        return decode(document)
    except CohortError as exc:
        raise CohortError(f"cohort #{number}: {exc}") from None


def build_engine(settings: Settings, cohorts_file: str | None = None, clock_ms: int | None = None) -> CallEngine:
    """The engine the settings describe; its clock for events from the future is `clock_ms`, else
    this machine's now (the worker sets it again before each message; replay keeps it)."""
    engine = CallEngine(
        cohorts=cohort_book(settings, cohorts_file),
        allowed_lateness_ms=settings.allowed_lateness_ms,
        max_watermark_leap_ms=settings.max_watermark_leap_ms,
        retention_after_end_ms=int(settings.retention_after_end_s * 1000),
        future_bound_ms=int(settings.future_bound_s * 1000),
    )
    engine.wall_clock_ms = int(time.time() * 1000) if clock_ms is None else clock_ms
    return engine
