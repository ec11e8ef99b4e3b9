"""`read_log` of a `.msgpack` log: each record the very bytes it was written as."""

from __future__ import annotations

import msgpack
import pytest

from models.wire import (
    JSONL_LOG,
    MSGPACK_LOG,
    decode_message,
    encode_batch,
    encode_event,
)
from streams.files import event_log
from streams.files.event_log import log_format, read_log
from tests.helpers.eventkit import event


def started(call_id: str):
    return event("call.started", {"agent_id": "a1"}, call_id=call_id)


def turn(call_id: str, text: str):
    return event("turn", {"role": "user", "text": text}, call_id=call_id)


def test_each_record_comes_back_as_the_bytes_written_also_across_the_reading_chunks(tmp_path):
    records = [
        encode_event(started("c1")),
        encode_batch([turn("c1", "hello"), turn("c1", "again")], "c1"),
        encode_event(turn("c2", "policy text " * 150_000)),  # ~1.8 MB: spans two 1 MiB reads
        msgpack.packb("not an event"),
        encode_event(turn("c1", "bye")),
    ]
    log = tmp_path / "log.msgpack"
    log.write_bytes(b"".join(records))
    assert list(read_log(str(log))) == records


def test_records_decode_as_they_did_when_each_was_unpacked_and_packed_again(tmp_path):
    records = [
        encode_event(started("c1")),
        encode_batch([turn("c1", "hi"), turn("c2", "yo")], None),
        msgpack.packb({"v": 1, "type": "turn"}),
    ]
    log = tmp_path / "log.msgpack"
    log.write_bytes(b"".join(records))
    for raw in read_log(str(log)):
        assert decode_message(raw) == decode_message(msgpack.packb(msgpack.unpackb(raw)))


def test_a_record_cut_short_at_the_end_of_the_log_comes_back_as_it_is_and_is_dead_lettered(tmp_path):
    whole, cut = encode_event(started("c1")), encode_event(started("c2"))[:-3]
    log = tmp_path / "log.msgpack"
    log.write_bytes(whole + cut)
    assert list(read_log(str(log))) == [whole, cut]
    (rejected,) = decode_message(cut).rejected
    assert "undecodable" in rejected.reason


def test_a_byte_order_mark_before_the_first_line_of_a_jsonl_log_is_not_part_of_the_record(tmp_path):
    line = b'{"v": 1, "type": "call.started", "event_id": "e1", "call_id": "c1", "ts_ms": 1, "data": {"agent_id": "a"}}'
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"\xef\xbb\xbf" + line + b"\n" + line + b"\n")
    assert list(read_log(str(log))) == [line, line]


def test_bytes_that_start_no_value_are_one_record_up_to_the_next_event_and_reading_goes_on(tmp_path):
    first, second = encode_event(started("c1")), encode_batch([turn("c2", "hi")], "c2")
    big = encode_event(turn("c3", "policy text " * 150_000))  # found again past the 1 MiB read
    log = tmp_path / "log.msgpack"
    damaged = b"\xc1" + b"\x85\xc1" * 700_000  # map headers that start no record, across reads
    log.write_bytes(first + b"\xc1\xc1" + second + damaged + big + first)
    assert list(read_log(str(log))) == [first, b"\xc1\xc1", second, damaged, big, first]
    (rejected,) = decode_message(b"\xc1\xc1").rejected
    assert "undecodable: MessagePack data is malformed" in rejected.reason


def test_a_damaged_end_with_no_record_after_it_is_one_record(tmp_path):
    first, cut = encode_event(started("c1")), encode_event(started("c2"))[:-3]
    log = tmp_path / "log.msgpack"
    log.write_bytes(first + b"\xc1" + cut)
    assert list(read_log(str(log))) == [first, b"\xc1" + cut]


@pytest.mark.parametrize("start", [b"{", b"  \n{", b"\xef\xbb\xbf{"])
def test_a_json_lines_log_named_msgpack_is_refused_at_once(tmp_path, start):
    log = tmp_path / "log.msgpack"
    log.write_bytes(start + b'"v": 1, "type": "turn"}\n')
    with pytest.raises(ValueError, match=r"log.msgpack: this is JSON, not MessagePack .*anything but \*\.msgpack"):
        next(read_log(str(log)))


@pytest.mark.parametrize(
    "stretch",
    [b"\0" * 4096, b'{"v": 1, "type": "turn", "call_id": "c9"}\n', b"\x01\xa3abc\x7f"],
    ids=["zero padding", "a pasted JSON line", "numbers and a string"],
)
def test_values_that_are_no_map_are_a_damaged_stretch_and_one_record(tmp_path, stretch):
    # Each of these bytes reads as a small MessagePack number: one record a byte, before.
    first, second = encode_event(started("c1")), encode_batch([turn("c2", "hi")], "c2")
    log = tmp_path / "log.msgpack"
    log.write_bytes(first + stretch + second + stretch)
    assert list(read_log(str(log))) == [first, stretch, second, stretch]
    assert len(decode_message(stretch).rejected) == 1


def test_a_newline_written_after_each_record_is_a_damaged_stretch_of_its_own_across_the_reading_chunks(tmp_path):
    # The unpacker goes on past each newline as it is (made anew for each, reading took ten times as
    # long): the records and the newlines must still come back one by one, past the 1 MiB chunks too.
    records = ([encode_event(turn("c1", "policy text " * 100_000))] + _workload_records(12)) * 4  # ~4.8 MB
    log = tmp_path / "log.msgpack"
    log.write_bytes(b"".join(record + b"\n" for record in records))
    assert list(read_log(str(log))) == [part for record in records for part in (record, b"\n")]


def test_a_record_straddling_a_reading_chunk_after_a_long_damaged_stretch_is_found(tmp_path):
    # The search for the next record goes on from where the bytes read so far left it undecided (not
    # from the damage again, which took minutes for 100 MiB of padding): a record that starts before
    # the end of a chunk and ends in the next one must still be found where it starts.
    first, second, third = (encode_event(started(f"c{n}")) for n in (1, 2, 3))
    padding = b"\0" * ((2 << 20) - len(first) - 50)  # `second` starts 50 bytes before the second chunk ends
    log = tmp_path / "log.msgpack"
    log.write_bytes(first + padding + second + b"\0" * 100 + third)
    assert list(read_log(str(log))) == [first, padding, second, b"\0" * 100, third]


@pytest.mark.parametrize("name", ["log.MSGPACK", "log.bin", "log"])
def test_a_msgpack_log_is_read_as_one_whatever_its_name(tmp_path, name):
    records = [encode_event(started("c1")), encode_event(turn("c1", "hello"))]
    log = tmp_path / name
    log.write_bytes(b"".join(records))
    assert log_format(str(log)) == MSGPACK_LOG
    assert list(read_log(str(log))) == records


@pytest.mark.parametrize("content", [b'{"v": 1}\n', b"\xef\xbb\xbf{}\n", b"not json at all\n", b""])
def test_anything_else_not_named_msgpack_is_read_as_json_lines(tmp_path, content):
    log = tmp_path / "events.log"
    log.write_bytes(content)
    assert log_format(str(log)) == JSONL_LOG


def _workload_records(count: int) -> list[bytes]:
    from streams.bench.workload import Workload

    return list(Workload(calls=3, turns=3, seed=1).records())[:count]


@pytest.mark.parametrize("cut", [1, 40, 120])
def test_a_record_cut_short_inside_the_log_loses_only_itself(tmp_path, cut):
    # Cut short, the record read on into the records after it (at 1 byte, over all of them to the
    # end of the file), which came back dead-lettered with it or as pieces of damage.
    records = _workload_records(12)
    broken = records[5][:cut]
    log = tmp_path / "log.msgpack"
    log.write_bytes(b"".join(records[:5]) + broken + b"".join(records[6:]))
    assert list(read_log(str(log))) == records[:5] + [broken] + records[6:]


def test_a_record_cut_short_inside_the_log_is_found_again_past_the_reading_chunks(tmp_path):
    records = [encode_event(turn("c1", "policy text " * 100_000))] + _workload_records(6)  # ~1.2 MB first
    broken = records[3][:40]
    log = tmp_path / "log.msgpack"
    log.write_bytes(b"".join(records[:3]) + broken + b"".join(records[4:]))
    assert list(read_log(str(log))) == records[:3] + [broken] + records[4:]


def test_a_whole_record_followed_by_damage_is_not_cut_at_an_event_nested_in_it(tmp_path):
    # A tool's result may hold anything, an event's very shape included: the record decodes, so it is
    # kept whole, and only the damage after it is dead-lettered.
    nested = msgpack.unpackb(encode_event(started("c9")))
    whole = encode_event(
        event("tool.call", {"name": "lookup", "arguments": "{}", "result": {"echo": nested}}, call_id="c1")
    )
    after = encode_event(started("c2"))
    log = tmp_path / "log.msgpack"
    log.write_bytes(whole + b"\x00\x00\x00" + after)
    assert not decode_message(whole).rejected
    assert list(read_log(str(log))) == [whole, b"\x00\x00\x00", after]


def _turn_record(n: int, text: str) -> bytes:
    return msgpack.packb(
        {
            "v": 1,
            "event_id": f"e{n}",
            "call_id": "c1",
            "ts_ms": 1_760_000_000_000 + n,
            "type": "turn",
            "data": {"role": "user", "text": text},
        }
    )


def test_a_record_cut_short_where_a_read_of_the_file_ends_loses_only_itself(tmp_path):
    # Found near the end of a 1 MiB read, the record after it was not yet read whole: it was lost too.
    broken = _turn_record(1, "Your booking is not eligible for a refund, but it is eligible for credit")[:-20]
    good = _turn_record(2, "thanks, bye")
    filler = _turn_record(0, "x" * ((1 << 20) - len(broken) - 40 - 60))
    filler = _turn_record(
        0, "x" * (len(msgpack.unpackb(filler)["data"]["text"]) + (1 << 20) - len(broken) - 40 - len(filler))
    )
    log = tmp_path / "log.msgpack"
    log.write_bytes(filler + broken + good)
    assert list(read_log(str(log))) == [filler, broken, good]


def test_a_valid_batch_over_the_size_limit_is_not_cut_at_its_items(tmp_path):
    # Refused for its size (and so dead-lettered whole), it is still no damage to look inside of.
    batch = encode_batch([turn("c1", "a"), turn("c1", "x" * 1_100_000), turn("c1", "b")], "c1")
    broken = encode_event(turn("c1", "bye"))[:-5]
    log = tmp_path / "log.msgpack"
    log.write_bytes(batch + broken)
    assert list(read_log(str(log))) == [batch, broken]


def test_many_values_cut_short_by_the_end_of_the_file_read_without_end(tmp_path):
    # Each header claims 4 GiB: each runs to the end of the file, and reading starts again inside it.
    claim, good = b"\xdb\xff\xff\xff\xff", encode_event(started("c1"))
    log = tmp_path / "log.msgpack"
    log.write_bytes((claim + good) * 1000)
    assert list(read_log(str(log))) == [claim, good] * 1000


def test_a_record_larger_than_msgpacks_own_buffer_is_read_whole_and_refused_for_its_size(tmp_path):
    # msgpack's unpacker holds 100 MiB by default: past that, the whole replay ended with BufferFull.
    before, after = encode_event(started("c1")), encode_event(turn("c1", "bye"))
    huge = encode_event(turn("c1", "x" * (101 << 20)))
    log = tmp_path / "log.msgpack"
    log.write_bytes(before + huge + after)
    records = list(read_log(str(log)))
    assert records == [before, huge, after]
    (rejected,) = decode_message(records[1]).rejected
    assert f"message of {len(huge)} bytes exceeds" in rejected.reason


def test_a_record_longer_than_the_reader_can_hold_is_a_clear_error_naming_the_log(tmp_path, monkeypatch):
    monkeypatch.setattr(event_log, "_UNPACKER_BUFFER_BYTES", 3 << 20)
    log = tmp_path / "log.msgpack"
    log.write_bytes(encode_event(started("c1")) + encode_event(turn("c1", "x" * (5 << 20))))
    with pytest.raises(ValueError, match=r"log\.msgpack: a record \(or a damaged stretch\) runs on past 3145728 bytes"):
        list(read_log(str(log)))


def test_a_record_just_under_the_readers_limit_is_read_whatever_follows_it(tmp_path, monkeypatch):
    # Reading ever larger stretches after an unfinished record, the reader fed the unpacker the events
    # after it too, and refused records of two thirds of its limit.
    monkeypatch.setattr(event_log, "_UNPACKER_BUFFER_BYTES", 7 << 20)
    large = encode_event(turn("c1", "y" * (6_500_000)))
    after = [encode_event(turn("c1", f"after {i} " + "x" * 300)) for i in range(30_000)]
    log = tmp_path / "log.msgpack"
    log.write_bytes(large + b"".join(after))
    records = read_log(str(log))
    assert next(records) == large
    assert sum(1 for _ in records) == len(after)
