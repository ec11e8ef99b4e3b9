"""The call journal's Faust table, whose changelog writes can be waited for.

A table write (`table[key] = value`) only queues its changelog record in Faust's producer buffer. A
commit flushes that buffer first, but gives up once 0.1 s passes without a record going out
(`ProducerBuffer.flush_atmost`) and commits anyway. A worker killed then had committed messages whose
journal segment never reached the changelog: restarted, it neither held their calls nor was given the
messages again (a SIGKILL under load lost 5,116 events of 81 calls, and their calls were published
again from what was left, under versions already published). This table keeps each changelog write's
future, so that the worker acknowledges a segment's messages only once the segment is delivered
(streams/worker/message_flow.py).
"""

from __future__ import annotations

from typing import Any

import faust


class JournalTable(faust.Table[Any, Any]):
    """`faust.Table`, keeping the future of every changelog record it queues until they are taken."""

    def send_changelog(
        self, partition: int | None, key: Any, value: Any, key_serializer: Any = None, value_serializer: Any = None
    ) -> Any:
        # (Table.on_key_set and on_key_del, behind `table[key] = value` and `del table[key]`, send
        # through here; tests/test_journal_table.py pins them.)
        future = super().send_changelog(partition, key, value, key_serializer, value_serializer)
        self.__dict__.setdefault("_changelog_sends", []).append(future)
        return future

    def take_changelog_sends(self) -> list[Any]:
        """The futures of the changelog records queued since the last call, each done once the broker
        has its record."""
        sends: list[Any] = self.__dict__.pop("_changelog_sends", [])
        return sends


def journal_table(app: faust.App, name: str, **options: Any) -> JournalTable:
    """A JournalTable defined on `app` as `app.Table(name, **options)` defines a table."""
    table = JournalTable(app, name=name, beacon=app.tables.beacon, **options)
    app.tables.add(table)
    return table
