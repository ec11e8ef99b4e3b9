"""`GET /calls/{id}/events`: a call's events as the wire has them, for the call page's timeline (word
timings, tool calls with their arguments and results, node transitions, transfers), which a result
does not hold.

They are read from the call journal (streams/journal/call_journal.py) of the worker whose partition
the call is: the segments that hold the call's entries, and the entries not yet written to a segment.
So a worker has them for the calls it holds, open or ended and retained (`CALLQA_RETENTION_AFTER_END_S`,
a day of event time by default); any other worker passes the request on to it. A call forgotten since
has its result and no events (404, with the reason).
"""

from __future__ import annotations

from typing import Any

import msgspec

from models.wire import decode_message
from streams.journal.call_journal import decode_partition_segment, partition_segment_key


def journaled_events(book: Any, journal: Any, call_id: str) -> list[dict[str, Any]] | None:
    """The call's events in the order the worker applied them, each once (None: the journal of this
    worker holds none of the call's)."""
    found = book.segments_of_call.get(call_id)
    raws: list[bytes] = []
    partition = None
    if found is not None:
        partition, sequences = found
        for sequence in sequences:
            value = journal.get(partition_segment_key(partition, sequence))
            if value is not None:
                raws.extend(raw for owner, _, raw in decode_partition_segment(value).entries if owner == call_id)
    for waiting_partition, pending in book.pending.items():  # (staged, not yet written: the last second's)
        if partition is None or waiting_partition == partition:
            raws.extend(raw for owner, _, raw in pending.entries if owner == call_id)
    if not raws:
        return None
    events, seen = [], set()
    for raw in raws:
        for event in decode_message(raw, len(raw)).events:  # (the worker took it: no size limit again)
            # (A message of one call is journaled whole: an event it repeated, ignored as a duplicate
            # when applied, is listed once here too.)
            if event.call_id == call_id and event.event_id not in seen:
                seen.add(event.event_id)
                events.append(msgspec.to_builtins(event))
    return events
