"""Configuration documents from files: a JSON list (or object holding the list) or TOML tables."""

from __future__ import annotations

import json
import tomllib
from typing import Any


def load_documents(path: str, key: str) -> list[dict[str, Any]]:
    """The list of documents in `path`: a JSON list, a JSON object with the list under `key`, or a TOML
    file with an array of tables `[[key]]`. An object without `key` is an error, not an empty list: a
    misspelt key, or another kind of file given by mistake, must not load nothing in silence."""
    with open(path, "rb") as handle:
        raw = handle.read()
    kind = "TOML" if path.endswith(".toml") else "JSON"
    try:
        document: Any = tomllib.loads(raw.decode("utf-8")) if kind == "TOML" else json.loads(raw)
    except (ValueError, RecursionError) as exc:  # (TOMLDecodeError and UnicodeDecodeError are ValueErrors)
        raise ValueError(f"{path}: not valid {kind} ({exc})") from None
    if isinstance(document, dict):
        if key not in document:
            found = ", ".join(f"`{name}`" for name in document) or "nothing"
            layout = f"[[{key}]] tables" if kind == "TOML" else f"a list under `{key}`"
            raise ValueError(f"{path}: expected {layout}, found {found}")
        document = document[key]
    if not isinstance(document, list) or not all(isinstance(item, dict) for item in document):
        raise ValueError(f"{path}: expected a list of {key} (objects)")
    return document
