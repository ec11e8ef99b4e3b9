"""Configuration documents from files: a JSON list (or object holding the list) or TOML tables."""

from __future__ import annotations

import json
import tomllib
from typing import Any


def load_documents(path: str, key: str) -> list[dict[str, Any]]:
    """The list of documents in `path`: a JSON list, a JSON object with the list under `key`, or a TOML
    file with an array of tables `[[key]]`."""
    with open(path, "rb") as handle:
        raw = handle.read()
    kind = "TOML" if path.endswith(".toml") else "JSON"
    try:
        document: Any = tomllib.loads(raw.decode("utf-8")) if kind == "TOML" else json.loads(raw)
    except (ValueError, RecursionError) as exc:  # (TOMLDecodeError and UnicodeDecodeError are ValueErrors)
        raise ValueError(f"{path}: not valid {kind} ({exc})") from None
    if isinstance(document, dict):
        document = document.get(key, [])
    if not isinstance(document, list) or not all(isinstance(item, dict) for item in document):
        raise ValueError(f"{path}: expected a list of {key} (objects)")
    return document
