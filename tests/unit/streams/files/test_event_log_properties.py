"""What holds of any MessagePack log `MsgpackRecordReader` reads, damaged or not.

Damage between records (bytes that are no map, or start no value: zero padding, newlines, pasted text)
costs no record. A record damaged inside or cut short may take later records with it (it reads on into
them, and a map nested in one reads like a record), so there only the records before it are promised.
Whatever the bytes, the records put together are the log: nothing is lost, added or reordered.
"""

from __future__ import annotations

import string
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from models.wire import decode_message, encode_batch, encode_event
from streams.files import event_log
from streams.files.event_log import MsgpackRecordReader
from tests.helpers.eventkit import event

# (No deadline: the machine the suite runs on may be busy, and the reader's time is not what is checked.)
examples = settings(deadline=None, max_examples=200)

call_ids = st.text(string.ascii_lowercase + string.digits + "-", min_size=1, max_size=12)
texts = st.text(st.characters(codec="utf-8"), max_size=400)  # up to str16 headers, any script


@st.composite
def messages(draw) -> bytes:
    """One valid message: an event or a batch, as MessagePack."""
    call_id = draw(call_ids)
    turns = draw(
        st.lists(
            texts.map(lambda text: event("turn", {"role": "user", "text": text}, call_id=call_id)),
            min_size=1,
            max_size=3,
        )
    )
    started = event("call.started", {"agent_id": draw(call_ids)}, call_id=call_id)
    raw = draw(
        st.sampled_from(
            [
                encode_event(started),
                encode_event(turns[0]),
                encode_batch(turns, call_id),
                encode_batch([started, *turns], None),
            ]
        )
    )
    assert not decode_message(raw).rejected
    return raw


# Bytes that are no map (MessagePack reads each 0x00-0x7f as a small number) or start no value (0xc1).
damage = st.lists(st.sampled_from([*range(0x80), 0xC1]), min_size=1, max_size=40).map(bytes)


def read(log: bytes, chunk_bytes: int = 1 << 20) -> list[bytes]:
    """The records of `log`, read in chunks of `chunk_bytes`."""
    chunks = iter([log[at : at + chunk_bytes] for at in range(0, len(log), chunk_bytes)])
    with mock.patch.object(event_log, "_LOG_CHUNK_BYTES", chunk_bytes):
        return list(MsgpackRecordReader(chunks).records())


@st.composite
def logs_damaged_between_records(draw) -> list[tuple[bool, bytes]]:
    """Messages with damage before, between or after them: each piece, and whether it is damage."""
    pieces: list[tuple[bool, bytes]] = []
    for message in draw(st.lists(messages(), min_size=1, max_size=8)):
        pieces += [(True, piece) for piece in draw(st.lists(damage, max_size=2))]
        pieces.append((False, message))
    pieces += [(True, piece) for piece in draw(st.lists(damage, max_size=2))]
    return pieces


def records_expected(pieces: list[tuple[bool, bytes]]) -> list[bytes]:
    """Each message, and each stretch of damage (however many pieces) as one record."""
    records: list[bytes] = []
    after_damage = False
    for is_damage, raw in pieces:
        if is_damage and after_damage:
            records[-1] += raw
        else:
            records.append(raw)
        after_damage = is_damage
    return records


@st.composite
def damaged_messages(draw, message: bytes) -> bytes:
    """`message` cut short, or with any bytes put inside it (not before: that is damage between)."""
    at = draw(st.integers(1, len(message) - 1))
    return draw(st.sampled_from([message[:at], message[:at] + draw(st.binary(min_size=1, max_size=40)) + message[at:]]))


@st.composite
def logs_damaged_anywhere(draw) -> bytes:
    """Messages, any of them damaged inside or cut short, with any bytes between them."""
    parts = []
    for message in draw(st.lists(messages(), max_size=8)):
        parts.append(draw(st.binary(max_size=40)))
        parts.append(draw(damaged_messages(message)) if draw(st.booleans()) else message)
    return b"".join(parts)


@examples
@given(logs_damaged_between_records())
def test_damage_between_records_costs_no_record_and_is_one_record_a_stretch(pieces):
    assert read(b"".join(raw for _, raw in pieces)) == records_expected(pieces)


@examples
@given(logs_damaged_between_records(), st.integers(1, 300))
def test_the_records_do_not_depend_on_the_chunks_the_log_is_read_in(pieces, chunk_bytes):
    log = b"".join(raw for _, raw in pieces)
    assert read(log, chunk_bytes) == records_expected(pieces)


@examples
@given(st.one_of(st.binary(max_size=2000), logs_damaged_anywhere()), st.sampled_from([1, 7, 64, 1 << 20]))
def test_whatever_the_bytes_the_records_put_together_are_the_log(log, chunk_bytes):
    records = read(log, chunk_bytes)
    assert all(records)
    assert b"".join(records) == log


@examples
@given(st.lists(messages(), min_size=1, max_size=6), st.data())
def test_the_records_before_one_damaged_inside_or_cut_short_come_back_whole(messages_, data):
    broken = data.draw(st.integers(0, len(messages_) - 1))
    damaged = data.draw(damaged_messages(messages_[broken]))
    log = b"".join(messages_[:broken]) + damaged + b"".join(messages_[broken + 1 :])
    assert read(log)[:broken] == messages_[:broken]
