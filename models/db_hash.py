"""The canonical hash of a DB state, as the evaluation harness computes it: equal end states hash equally.

The top-level `session` key is dropped; whole-number finite floats become ints; the strings "none" and
"null" (any case, surrounding blanks ignored) become null; lists under the order-independent keys are
sorted, at any depth, by each element's `json.dumps(x, sort_keys=True, default=str)`; the result is the
SHA-256 of `json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)`.

A scenario's expected hash (models/scenario.py) and the agent's actual one (the DB-state scorer) are
both this function's, so the two sides can only differ by their DBs.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

HASH_EXCLUDED_KEYS = frozenset({"session"})
ORDER_INDEPENDENT_LIST_KEYS = frozenset(
    {"standby_list", "notifications", "bookings", "system_accounts", "group_memberships", "asset_recoveries"}
)
NULL_STRINGS = frozenset({"none", "null"})


def _sort_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _json_key(key: Any) -> str:
    # A MessagePack map may have integer (or other) keys; JSON turns a key into text this way, and
    # sorting keys of mixed types would fail.
    return key if isinstance(key, str) else json.dumps(key, default=str)


def canonical_db(value: Any) -> Any:
    """The DB (or any part of it) as it is hashed, minus the top-level `session` drop; keys as JSON
    text, as the harness's DB (read from JSON) has them."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            key = _json_key(key)
            item = canonical_db(item)
            if key in ORDER_INDEPENDENT_LIST_KEYS and isinstance(item, list):
                item = sorted(item, key=_sort_key)
            out[key] = item
        return out
    if isinstance(value, list):
        return [canonical_db(item) for item in value]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lower() in NULL_STRINGS:
        return None
    return value


def db_state_hash(db: dict[str, Any]) -> str:
    """SHA-256 (hex) of the DB's canonical JSON."""
    kept = {key: value for key, value in db.items() if key not in HASH_EXCLUDED_KEYS}
    text = json.dumps(canonical_db(kept), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()
