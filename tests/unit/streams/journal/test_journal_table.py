"""The journal's Faust table keeps the future of every changelog record it queues, so that the worker
acknowledges a segment's messages only once the changelog has it (streams/journal/table.py)."""

from __future__ import annotations

import asyncio

import faust
from faust.tables.base import Collection
from faust.tables.table import Table
from faust.types import tuples as faust_tuples

from streams.journal.table import JournalTable, journal_table
from streams.kafka.transports import current_event_for
from tests.helpers.pinning import each_pin, source_digest

# What the table relies on: a key set or deleted sends its changelog record through `send_changelog`,
# which returns the record's future. An upgrade that changes one fails here: re-read, port, re-pin.
PINNED = {
    (Table, "on_key_set"): "a370e35ca55c2c7e36e93f0d4b485927c32d49199043cab2314572846184dd94",
    (Table, "on_key_del"): "4f2900b2f9d24a080d5cbc9eaa1f5566f1d11e56916e79b02f079c52f4751053",
    (Collection, "send_changelog"): "3dd3884e1b5fc0e1612bc688b83d9318a1805ddc49700d3b6b37bade73c3905d",
}


@each_pin(PINNED)
def test_what_the_journal_table_builds_on_is_unchanged(owner, name):
    assert source_digest(owner, name) == PINNED[(owner, name)]


def test_every_write_and_delete_leaves_the_future_of_its_changelog_record_until_taken():
    async def run() -> None:
        app = faust.App("t-journal-table", broker="tansu://127.0.0.1:9", autodiscover=False)
        table = journal_table(app, "call-journal", key_type=bytes, value_type=bytes, partitions=4)
        assert isinstance(table, JournalTable) and table in app.tables.values()
        message = faust_tuples.Message("events", 3, 41, 0.0, None, None, b"k", b"v", None)
        with current_event_for(app, message):
            table[b"segment"] = b"value"
            table.pop(b"segment", None)
        sends = table.take_changelog_sends()
        assert len(sends) == 2 and all(isinstance(send, asyncio.Future) and not send.done() for send in sends)
        assert [send.message.partition for send in sends] == [3, 3]  # (the message's partition)
        assert table.take_changelog_sends() == []

    asyncio.run(run())
