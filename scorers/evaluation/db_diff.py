"""Why a `db_state_match` failed: a structured diff of the expected and the actual DB, in the shape of
the harness's `compute_db_diff` (its db_hash module), for people to read. The hash stays the verdict.

Top level: `tables_added` / `tables_removed` (sorted names) and `tables_modified` {table: …}. A table
that is an object diffs record by record (`records_added`, `records_removed`, `records_modified`
{key: record diff}); any other table that differs is `{"type": "non_dict_table", expected, actual}`.
A record diff compares values normalised as the hash normalises them (1.0 is 1, "null" is null, the
order-independent lists sorted), so only a difference the hash sees is reported:
- objects: `fields_added`, `fields_removed`, `fields_modified` {field: diff};
- lists: `list_length_mismatch`, or `list_differences` [{index, diff}] (the order-independent fields
  sorted first);
- different types: `type_mismatch` with both type names; other values: `value_mismatch`.
Equal parts are left out; two equal DBs give empty lists and no modified table.
"""

from __future__ import annotations

import json
from typing import Any

from models.db_hash import ORDER_INDEPENDENT_LIST_KEYS, canonical_db


def _sorted_items(items: list[Any]) -> list[Any]:
    return sorted(items, key=lambda item: json.dumps(item, sort_keys=True, default=str))


def _key_changes(expected: dict[Any, Any], actual: dict[Any, Any]) -> tuple[list[Any], list[Any], list[Any]]:
    """Keys added, keys removed, keys in both (each sorted; keys of mixed types by their text)."""

    def order(keys: Any) -> list[Any]:
        return sorted(keys, key=str)  # (a JSON DB's keys are all text)

    return (
        order(actual.keys() - expected.keys()),
        order(expected.keys() - actual.keys()),
        order(expected.keys() & actual.keys()),
    )


def record_diff(expected: Any, actual: Any, field_name: str = "") -> dict[str, Any] | None:
    """How one record (or any value inside it) differs; None when it does not."""
    expected, actual = canonical_db(expected), canonical_db(actual)
    if expected == actual:
        return None
    if type(expected) is not type(actual):
        return {
            "type": "type_mismatch",
            "expected": expected,
            "actual": actual,
            "expected_type": type(expected).__name__,
            "actual_type": type(actual).__name__,
        }
    if isinstance(expected, dict):
        added, removed, common = _key_changes(expected, actual)
        modified = {key: diff for key in common if (diff := record_diff(expected[key], actual[key], key)) is not None}
        if not (added or removed or modified):
            return None
        return {"fields_added": added, "fields_removed": removed, "fields_modified": modified}
    if isinstance(expected, list):
        if field_name in ORDER_INDEPENDENT_LIST_KEYS:
            expected, actual = _sorted_items(expected), _sorted_items(actual)
        if len(expected) != len(actual):
            return {
                "type": "list_length_mismatch",
                "expected": expected,
                "actual": actual,
                "expected_length": len(expected),
                "actual_length": len(actual),
            }
        differences = [
            {"index": index, "diff": diff}
            for index, (left, right) in enumerate(zip(expected, actual, strict=True))
            if (diff := record_diff(left, right)) is not None
        ]
        return {"type": "list_differences", "differences": differences} if differences else None
    return {"type": "value_mismatch", "expected": expected, "actual": actual}


def table_diff(expected: dict[Any, Any], actual: dict[Any, Any]) -> dict[str, Any] | None:
    added, removed, common = _key_changes(expected, actual)
    modified = {str(key): diff for key in common if (diff := record_diff(expected[key], actual[key])) is not None}
    if not (added or removed or modified):
        return None
    return {"records_added": added, "records_removed": removed, "records_modified": modified}


def compute_db_diff(expected_db: dict[str, Any], actual_db: dict[str, Any]) -> dict[str, Any]:
    added, removed, common = _key_changes(expected_db, actual_db)
    modified: dict[str, Any] = {}
    for table in common:
        expected, actual = expected_db[table], actual_db[table]
        if isinstance(expected, dict) and isinstance(actual, dict):
            diff = table_diff(expected, actual)
        else:
            diff = None if expected == actual else {"type": "non_dict_table", "expected": expected, "actual": actual}
        if diff is not None:
            modified[table] = diff
    return {"tables_added": added, "tables_removed": removed, "tables_modified": modified}
