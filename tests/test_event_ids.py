"""A call's seen event_ids: membership and insertion as a set of strings, in a few bytes an id."""

from __future__ import annotations

import sys

from models.call_state import EventIds


def test_an_added_id_is_seen_and_others_are_not():
    ids = EventIds()
    ids.add("e1")
    assert "e1" in ids and "e2" not in ids


def test_adding_an_id_twice_keeps_it_once_and_says_so():
    ids = EventIds(["a", "b"])
    assert ids.add("c") is True
    assert ids.add("a") is False
    assert len(ids) == 3


def test_ids_added_in_any_order_are_all_found():
    names = [f"id-{n * 7919 % 1000}" for n in range(1000)]
    ids = EventIds()
    for name in names:
        ids.add(name)
    assert len(ids) == 1000 and all(name in ids for name in names) and "id-1000" not in ids


def test_an_id_costs_eight_bytes_instead_of_a_string_and_a_set_slot():
    names = [f"{n:032x}" for n in range(1000)]  # UUID-sized ids
    ids = EventIds(names)
    as_set = set(names)
    # 1,000 hashes: 8,000 bytes of array, against >80,000 bytes of strings plus the set's table.
    assert sys.getsizeof(ids._hashes) < 10_000 < sys.getsizeof(as_set) + sum(sys.getsizeof(n) for n in names) // 8
