"""Configuration documents on the wire: JSON or MessagePack bytes, and readable validation errors.

Cohorts and alert rules arrive the same ways (HTTP bodies, topic values, files), so they share how a
document is recognised, how a file of them is read, and how msgspec's errors are turned into
"`field`: problem" for the user.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import msgspec

Decoded = TypeVar("Decoded")


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


def load_document_file(path: str | Path, key: str, error: type[Exception]) -> list[Any]:
    """The documents of a file: a JSON list, a JSON object with the list under `key`, or a TOML file of
    `[[key]]` tables (by the name's suffix). An object without `key` is an error, not an empty list:
    a misspelt key, or another kind of file given by mistake, must not load nothing in silence; so
    is an empty list."""
    path = Path(path)
    toml = path.suffix.lower() == ".toml"
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise error(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        # (utf-8-sig: a byte-order mark, as some editors write, is read past, as json.loads does)
        document: Any = tomllib.loads(raw.decode("utf-8-sig")) if toml else json.loads(raw)
    except (ValueError, RecursionError) as exc:  # (TOMLDecodeError and UnicodeDecodeError are ValueErrors)
        raise error(f"{path}: not valid {'TOML' if toml else 'JSON'} ({exc})") from None
    if isinstance(document, dict):
        if key not in document:
            found = ", ".join(f"`{name}`" for name in document) or "nothing"
            raise error(f"{path}: expected {f'[[{key}]] tables' if toml else f'a list under `{key}`'}, found {found}")
        others = [name for name in document if name != key]
        if others:  # (a misspelt second key, or another kind of file merged in: nothing is dropped in silence)
            raise error(
                f"{path}: unknown {'tables' if toml else 'keys'} beside `{key}`: "
                + ", ".join(f"`{name}`" for name in others)
            )
        document = document[key]
    if not isinstance(document, list):
        raise error(f"{path}: expected a list of {key}")
    if not document:  # (an empty list is as likely a mistake as a file without the key)
        raise error(f"{path}: defines no {key} (an empty list): with none to apply, leave the file out")
    return document


def decode_each_once(
    path: str | Path,
    documents: Iterable[Any],
    decode: Callable[[Any, int], Decoded],
    name_of: Callable[[Decoded], str],
    twice: Callable[[Decoded, int], str],
    error: type[Exception],
) -> list[Decoded]:
    """Each document decoded (`decode(document, number)`, numbered from 1), every name once: a second
    definition under one name would silently replace the first. Errors name the file."""
    decoded: list[Decoded] = []
    seen: set[str] = set()
    for number, document in enumerate(documents, start=1):
        try:
            item = decode(document, number)
        except error as exc:
            raise error(f"{path}: {exc}") from None
        if name_of(item) in seen:
            raise error(f"{path}: {twice(item, number)}")
        seen.add(name_of(item))
        decoded.append(item)
    return decoded
