"""The dead-letter document: input the worker could not accept, kept whole with the reason."""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass

from msgspec import Struct


class DeadLetterDocument(Struct, kw_only=True):
    reason: str  # one line: the event_id when readable, the field and the problem
    topic: str
    partition: int
    offset: int
    batch_index: int | None = None  # the item's index when the message was a batch
    event_id: str | None = None
    call_id: str | None = None
    # The original message bytes, base64 (the first ORIGINAL_KEPT_BYTES when larger); for an item of a
    # batch (batch_index set), the item's own bytes in it.
    original_b64: str
    original_text: str | None = None  # the same bytes as text, when they are UTF-8
    # A dead letter must fit in a Kafka message itself: past ORIGINAL_KEPT_BYTES the original is cut here
    # and stays whole at topic/partition/offset; its size and digest identify it.
    original_size: int = 0
    original_sha256: str = ""
    original_truncated: bool = False


ORIGINAL_KEPT_BYTES = 256 * 1024


def oversized_result_reason(call_id: str, version: int, size: int, limit: int) -> str:
    """Why a result was dead-lettered instead of published (the worker) or written (replay)."""
    return (
        f"the result (version {version}) of call {call_id!r} is {size} bytes, above the {limit}-byte limit "
        "for a message (CALLQA_MAX_MESSAGE_BYTES): not published"
    )


# A reason is one line for people and dashboards: a producer's event_id or type quoted in full made
# reasons of 99,326 characters. Past this its long quoted values are cut, then if need be its middle
# (the head names the event, the tail the field and the problem); the dead letter keeps the record whole.
MAX_REASON_CHARS = 800
_REASON_HEAD_CHARS = 500
_CUT = " … "


# A value the reason quotes (an id, a type) longer than this is cut first: what the reason says of it
# stays whole.
QUOTED_KEPT_CHARS = 60
_LONG_QUOTED_CHARS = QUOTED_KEPT_CHARS + 20
_LONG_QUOTED = re.compile(rf"'([^'\n]{{{_LONG_QUOTED_CHARS},}})'|\"([^\"\n]{{{_LONG_QUOTED_CHARS},}})\"")


def _cut_quoted(match: re.Match[str]) -> str:
    quote = match.group(0)[0]
    return f"{quote}{match.group(0)[1 : QUOTED_KEPT_CHARS + 1]}…{quote}"


def bounded_reason(reason: str) -> str:
    """`reason` with its long quoted values cut, then cut in the middle if still longer than
    MAX_REASON_CHARS."""
    if len(reason) <= MAX_REASON_CHARS:
        return reason
    reason = _LONG_QUOTED.sub(_cut_quoted, reason)
    if len(reason) <= MAX_REASON_CHARS:
        return reason
    tail = MAX_REASON_CHARS - _REASON_HEAD_CHARS - len(_CUT)
    return reason[:_REASON_HEAD_CHARS] + _CUT + reason[-tail:]


def failure_reason(event_id: str | None, exc: BaseException) -> str:
    """Why an event (or a message, event_id None) that passed the decoder was dead-lettered: handling
    it raised. A bug, not bad input, but one message must never stop a partition (the worker and
    replay dead-letter it alike and go on)."""
    subject = f"event {event_id!r}" if event_id is not None else "the message"
    return (
        f"{subject}: handling it failed ({type(exc).__name__}: {str(exc)[:200]}); dead-lettered, and its "
        "partition goes on"
    )


@dataclass(slots=True)
class DeadLetter:
    """A message (or one event of it) refused, where it was read, and why: the worker publishes it to the
    dead-letter topic as `to_document()`, `callqa send` and replay write the same document."""

    reason: str
    topic: str
    partition: int
    offset: int
    original: bytes
    event_id: str | None = None
    call_id: str | None = None
    batch_index: int | None = None

    def __post_init__(self) -> None:
        self.reason = bounded_reason(self.reason)

    def to_document(self) -> DeadLetterDocument:
        kept = self.original[:ORIGINAL_KEPT_BYTES]
        try:
            text: str | None = kept.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        return DeadLetterDocument(
            reason=self.reason,
            topic=self.topic,
            partition=self.partition,
            offset=self.offset,
            batch_index=self.batch_index,
            event_id=self.event_id,
            call_id=self.call_id,
            original_b64=base64.b64encode(kept).decode("ascii"),
            original_text=text,
            original_size=len(self.original),
            original_sha256=hashlib.sha256(self.original).hexdigest(),
            original_truncated=len(kept) < len(self.original),
        )
