"""Configuration documents on the wire: JSON or MessagePack bytes, and readable validation errors.

Cohorts and alert rules arrive the same ways (HTTP bodies, topic values, files), so they share how a
document is recognised and how msgspec's errors are turned into "`field`: problem" for the user.
"""

from __future__ import annotations

from typing import Any

import msgspec


def decode_document(document: Any, error: type[Exception], what: str) -> Any:
    """Python builtins of `document`: bytes or text are decoded, anything else is returned as it is.

    JSON objects and arrays start with "{" or "[" (possibly after whitespace); a MessagePack map or
    array never does, so the first byte tells the two apart. Undecodable bytes raise `error`.
    """
    if not isinstance(document, (bytes, bytearray, memoryview, str)):
        return document  # already decoded: the type check says what is wrong with it
    raw = document.encode() if isinstance(document, str) else bytes(document)
    try:
        if raw.lstrip()[:1] in (b"{", b"["):
            return msgspec.json.decode(raw)
        return msgspec.msgpack.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise error(f"invalid {what}: undecodable document: {exc}") from None


def split_validation_error(exc: msgspec.ValidationError) -> tuple[str, str]:
    """msgspec's "Expected `int` <= 100 - at `$.metrics[0].weight`" as ("Expected …", "metrics[0].weight").

    The path is empty when the problem is with the document as a whole (a missing field, say).
    """
    problem, _, path = str(exc).partition(" - at `$")
    return problem, path.rstrip("`").lstrip(".")


def missing_field(problem: str) -> str | None:
    """The field named by msgspec's "Object missing required field `name`", else None."""
    if not problem.startswith("Object missing required field"):
        return None
    return problem.rpartition(" ")[2].strip("`")
