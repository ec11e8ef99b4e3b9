"""The wire's limits, decided once: what an accepted event may hold so that the journal (MessagePack),
the result document (JSON) and a recorded log can all hold it too.

The decoder's types bound most fields already (event times, durations, finite numbers). What they
cannot bound is the free-form content (`Any`: an RTVI message's data, a tool's result, variables,
a judge's answer) and the plain `int` and `float` fields: a JSON `100000000000000000000` decodes
into Python's unbounded int, which the journal then cannot encode, and MessagePack carries NaN,
binary values and extension types, which JSON cannot hold. `limit_problem(event)` names the first
such value with its field; the decoder refuses the event with it (models/wire.py). Strings and the
size of lists and maps are bounded by the message size (`CALLQA_MAX_MESSAGE_BYTES`).

The checks are compiled once per event type from the types themselves (msgspec.inspect), so a type
with nothing unbounded in it (a turn, a latency) costs one dictionary lookup.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import msgspec
import msgspec.inspect as mi

# MessagePack's integers: signed 64 bits below zero, unsigned 64 bits above.
MIN_INT = -(2**63)
MAX_INT = 2**64 - 1
# Free-form content nested deeper than this below its field is refused: the result document adds a
# few levels of its own, and encoders stop at about a thousand.
MAX_FREE_FORM_DEPTH = 64
# How much of an offending value a reason quotes.
QUOTED_CHARS = 40

# A check returns None, or the problem and the path to it (innermost part first, joined at the end).
Problem = tuple[str, list[str]]
Check = Callable[[Any], "Problem | None"]


def limit_problem(event: msgspec.Struct) -> str | None:
    """Why `event` cannot be accepted (the field and the problem), or None when it fits the wire."""
    check = _EVENT_CHECKS.get(type(event))
    if check is None:
        return None
    found = check(event)
    if found is None:
        return None
    problem, path = found
    return f"{problem} - at `{'.'.join(reversed(path))}`"


def _quoted(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= QUOTED_CHARS else text[: QUOTED_CHARS - 1] + "…"


def _int_problem(value: int) -> str | None:
    if MIN_INT <= value <= MAX_INT:
        return None
    return f"the integer {_quoted(value)} does not fit in 64 bits"


def _float_problem(value: float) -> str | None:
    return None if math.isfinite(value) else f"the number {value!r} is not finite"


def _free(value: Any, depth: int = 0) -> Problem | None:
    """A free-form value: JSON's kinds only, numbers within the limits, nested at most so deep."""
    kind = type(value)
    if value is None or kind is str or kind is bool:
        return None
    if kind is int:
        problem = _int_problem(value)
        return None if problem is None else (problem, [])
    if kind is float:
        problem = _float_problem(value)
        return None if problem is None else (problem, [])
    if kind is list or kind is dict:
        if depth >= MAX_FREE_FORM_DEPTH:
            return (f"nested more than {MAX_FREE_FORM_DEPTH} levels deep", [])
        if kind is list:
            for index, item in enumerate(value):
                found = _free(item, depth + 1)
                if found is not None:
                    found[1].append(str(index))
                    return found
            return None
        for key, item in value.items():
            # (An integer key is written as text in JSON, as db_hash reads it: only other kinds are refused.)
            if type(key) is not str and (type(key) is not int or _int_problem(key) is not None):
                return (f"a map key that is neither text nor a 64-bit integer ({_quoted(key)})", [])
            found = _free(item, depth + 1)
            if found is not None:
                shown = str(key)
                found[1].append(shown if len(shown) <= QUOTED_CHARS else shown[: QUOTED_CHARS - 1] + "…")
                return found
        return None
    return (f"a {kind.__name__} value (a MessagePack binary or extension type), which JSON cannot hold", [])


def _check_free(value: Any) -> Problem | None:
    return _free(value)


def _check_int(value: Any) -> Problem | None:
    problem = _int_problem(value) if type(value) is int else None
    return None if problem is None else (problem, [])


def _check_float(value: Any) -> Problem | None:
    problem = _float_problem(value) if type(value) is float else None
    return None if problem is None else (problem, [])


def _int_bounded(info: mi.IntType) -> bool:
    low = info.ge if info.ge is not None else (info.gt + 1 if info.gt is not None else None)
    high = info.le if info.le is not None else (info.lt - 1 if info.lt is not None else None)
    return low is not None and high is not None and low >= MIN_INT and high <= MAX_INT


def _float_bounded(info: mi.FloatType) -> bool:
    low = info.ge if info.ge is not None else info.gt
    high = info.le if info.le is not None else info.lt
    return low is not None and high is not None and math.isfinite(low) and math.isfinite(high)


def _compile(info: mi.Type) -> Check | None:
    """The check a value of the type needs, or None when the type bounds it already."""
    if isinstance(info, mi.AnyType):
        return _check_free
    if isinstance(info, mi.IntType):
        return None if _int_bounded(info) else _check_int
    if isinstance(info, mi.FloatType):
        return None if _float_bounded(info) else _check_float
    if isinstance(info, mi.StructType):
        return _struct_check(info)
    if isinstance(info, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
        return _items_check(_compile(info.item_type))
    if isinstance(info, mi.TupleType):
        return _tuple_check([_compile(item) for item in info.item_types])
    if isinstance(info, mi.DictType):
        return _dict_check(_compile(info.value_type))
    if isinstance(info, mi.UnionType):
        return _union_check(info.types)
    return None  # str, bool, None, literals, enums: bounded by the decoder or the message size


def _struct_check(info: mi.StructType) -> Check | None:
    fields = [
        (field.name, field.encode_name, compiled)
        for field in info.fields
        if (compiled := _compile(field.type)) is not None
    ]
    if not fields:
        return None

    def check(value: Any) -> Problem | None:
        for name, shown, field_check in fields:
            found = field_check(getattr(value, name))
            if found is not None:
                found[1].append(shown)
                return found
        return None

    return check


def _items_check(item_check: Check | None) -> Check | None:
    if item_check is None:
        return None

    def check(value: Any) -> Problem | None:
        for index, item in enumerate(value):
            found = item_check(item)
            if found is not None:
                found[1].append(str(index))
                return found
        return None

    return check


def _tuple_check(item_checks: list[Check | None]) -> Check | None:
    if all(item is None for item in item_checks):
        return None

    def check(value: Any) -> Problem | None:
        for index, (item, item_check) in enumerate(zip(value, item_checks, strict=False)):
            found = None if item_check is None else item_check(item)
            if found is not None:
                found[1].append(str(index))
                return found
        return None

    return check


def _dict_check(value_check: Check | None) -> Check | None:
    if value_check is None:
        return None

    def check(value: Any) -> Problem | None:
        for key, item in value.items():
            found = value_check(item)
            if found is not None:
                found[1].append(str(key))
                return found
        return None

    return check


def _union_check(members: tuple[mi.Type, ...]) -> Check | None:
    # Which member a decoded value took is told by its Python type.
    by_kind: dict[type, Check] = {}
    free: Check | None = None
    for member in members:
        compiled = _compile(member)
        if compiled is None:
            continue
        if isinstance(member, mi.AnyType):
            free = compiled
        elif isinstance(member, mi.StructType):
            by_kind[member.cls] = compiled
        elif isinstance(member, (mi.ListType, mi.VarTupleType, mi.TupleType)):
            by_kind[list] = by_kind[tuple] = compiled
        elif isinstance(member, mi.DictType):
            by_kind[dict] = compiled
        elif isinstance(member, mi.IntType):
            by_kind[int] = compiled
        elif isinstance(member, mi.FloatType):
            by_kind[float] = compiled
    if not by_kind and free is None:
        return None

    def check(value: Any) -> Problem | None:
        member_check = by_kind.get(type(value), free)
        return None if member_check is None else member_check(value)

    return check


def _event_checks() -> dict[type, Check]:
    from models.events import EVENT_TYPES  # (the event types are the models' own; read once)

    checks = {}
    for cls in EVENT_TYPES.values():
        check = _compile(mi.type_info(cls))
        if check is not None:
            checks[cls] = check
    return checks


_EVENT_CHECKS = _event_checks()
