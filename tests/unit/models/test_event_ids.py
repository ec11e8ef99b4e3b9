"""A call's seen event_ids: membership and insertion as a set of strings, in a few bytes an id, each
with the signature of the event it was applied to."""

from __future__ import annotations

import sys

from models.call_state import EventIds


def test_an_added_id_is_seen_and_others_are_not():
    ids = EventIds()
    ids.add("e1", 7)
    assert "e1" in ids and "e2" not in ids


def test_adding_an_id_twice_keeps_it_once_and_answers_with_what_it_was_added_with():
    ids = EventIds()
    assert ids.add("a", 1) is None and ids.add("b", 2) is None and ids.add("c", 3) is None
    assert ids.add("a", 99) == 1  # the first signature stays
    assert ids.add("a", 1) == 1
    assert len(ids) == 3


def test_ids_added_in_any_order_are_all_found_with_their_own_signatures():
    names = [f"id-{n * 7919 % 1000}" for n in range(1000)]
    ids = EventIds()
    for name in names:
        ids.add(name, int(name[3:]))
    assert len(ids) == 1000 and all(name in ids for name in names) and "id-1000" not in ids
    assert all(ids.add(name, -1) == int(name[3:]) for name in names)


def test_an_id_costs_sixteen_bytes_instead_of_a_string_and_a_set_slot():
    names = [f"{n:032x}" for n in range(1000)]  # UUID-sized ids
    ids = EventIds()
    for number, name in enumerate(names):
        ids.add(name, number)
    as_set = set(names)
    # 1,000 hashes and signatures: 16,000 bytes of arrays, against >80,000 bytes of strings plus the set's table.
    held = sys.getsizeof(ids._hashes) + sys.getsizeof(ids._signatures)
    assert held < 20_000 < sys.getsizeof(as_set) + sum(sys.getsizeof(n) for n in names) // 4


def test_a_discarded_id_is_forgotten_with_its_signature_and_the_others_stay():
    ids = EventIds()
    for number, name in enumerate(["a", "b", "c"]):
        ids.add(name, number)
    ids.discard("b")
    ids.discard("never added")
    assert "b" not in ids and len(ids) == 2 and ids.add("a", 9) == 0 and ids.add("c", 9) == 2
    assert ids.add("b", 5) is None and ids.add("b", 6) == 5
