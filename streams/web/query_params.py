"""The query parameters a route takes, parsed and checked in one place: an unknown, repeated or malformed
parameter is a 400 that names it, never silently ignored (`?window_s=3600` once was).

A route declares its parameters as `Param`s (streams/web/routes.py); `parse_query` turns the request's
query into plain values, and the same declarations write the parameters into /openapi.json.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# Kinds of value a parameter takes, with their OpenAPI schema.
SCHEMAS: dict[str, dict[str, Any]] = {
    "text": {"type": "string"},
    "int": {"type": "integer"},
    "seconds": {"type": "number", "exclusiveMinimum": 0},
    "time": {
        "oneOf": [{"type": "integer", "description": "Unix milliseconds"}, {"type": "string", "format": "date-time"}]
    },
    "choice": {"type": "string"},
}
# The latest time a parameter may name: the events' own limit (year 9999), so that it fits in ms.
MAX_TIME_MS = 253_402_300_799_999


class QueryError(ValueError):
    """A query the route cannot answer; the message names the parameter."""


@dataclass(frozen=True)
class Param:
    name: str
    kind: str = "text"  # a key of SCHEMAS
    description: str = ""
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None

    def schema(self) -> dict[str, Any]:
        schema = dict(SCHEMAS[self.kind])
        if self.choices:
            schema["enum"] = list(self.choices)
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        return schema

    def parse(self, raw: str) -> Any:
        if self.kind == "int":
            return self._bounded(_whole_number(self.name, raw))
        if self.kind == "seconds":
            try:
                value = float(raw)
            except ValueError:
                raise QueryError(f"query parameter {self.name!r}: expected a number of seconds, got {raw!r}") from None
            if not math.isfinite(value) or value <= 0:
                raise QueryError(f"query parameter {self.name!r}: expected a positive number of seconds, got {raw!r}")
            return value
        if self.kind == "time":
            return parse_time(self.name, raw)
        if self.kind == "choice" and raw not in self.choices:
            raise QueryError(f"query parameter {self.name!r}: {raw!r} is not one of {', '.join(self.choices)}")
        if not raw:
            raise QueryError(f"query parameter {self.name!r} is empty")
        return raw

    def _bounded(self, value: int) -> int:
        if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
            raise QueryError(f"query parameter {self.name!r}: {value} is not within {self.minimum}..{self.maximum}")
        return value


def parse_query(query: Mapping[str, str] | Iterable[tuple[str, str]], params: Iterable[Param]) -> dict[str, Any]:
    """The query's values by parameter name (absent ones left out). `query` is the request's multidict
    (or its items): a parameter given twice is refused, as one of the two would be ignored."""
    known = {param.name: param for param in params}
    items = list(query.items()) if isinstance(query, Mapping) or hasattr(query, "items") else list(query)
    values: dict[str, Any] = {}
    for name, raw in items:
        param = known.get(name)
        if param is None:
            listed = ", ".join(sorted(known)) or "none"
            raise QueryError(f"unknown query parameter {name!r} (known: {listed})")
        if name in values:
            raise QueryError(f"query parameter {name!r} is given more than once")
        values[name] = param.parse(raw)
    return values


def parse_time(name: str, raw: str) -> int:
    """Unix milliseconds (`1759741200000`) or ISO 8601 (`2025-10-06T09:00:00Z`; no zone: UTC) as ms."""
    text = raw.strip()
    if text.lstrip("-").isdigit():
        value = int(text)
    else:
        try:
            moment = datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
        except ValueError:
            raise QueryError(f"query parameter {name!r}: expected Unix milliseconds or ISO 8601, got {raw!r}") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        value = round(moment.timestamp() * 1000)
    if not 0 <= value <= MAX_TIME_MS:
        raise QueryError(f"query parameter {name!r}: {raw!r} is outside 1970..9999")
    return value


def _whole_number(name: str, raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise QueryError(f"query parameter {name!r}: expected a whole number, got {raw!r}") from None
