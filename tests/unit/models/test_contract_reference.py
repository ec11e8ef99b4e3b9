"""docs/reference/events.md cannot drift from the contract: its field tables are the JSON Schemas'
(rendered again here), every event type has one, every example decodes as its section's type, and its
stop reasons are the ones the code knows."""

from __future__ import annotations

import json
import re

from models.contract_reference import documented_types, event_types, render
from models.events import EVENT_TYPES, STOP_REASONS
from models.wire import decode_message
from scorers.evaluation.conversation_end import AGENT_EXIT_STOP_REASON, SIMULATOR_EXIT_STOP_REASON
from scorers.inactivity import INACTIVITY_STOP_REASON
from tests.helpers.paths import REPO

REFERENCE = REPO / "docs" / "reference" / "events.md"


def test_the_field_tables_are_the_schemas():
    document = REFERENCE.read_text()
    assert render(document) == document, "run `python -m models.contract_reference docs/reference/events.md`"


def test_every_event_type_has_its_table():
    assert documented_types(REFERENCE.read_text()) == event_types() == sorted(EVENT_TYPES)


def examples() -> list[tuple[str, str]]:
    """(section's event type, example) for every JSON example under an event type's heading."""
    found, section = [], None
    for block in re.split(r"(^### `[a-z.]+`$|^```json\n.*?^```$)", REFERENCE.read_text(), flags=re.M | re.S):
        heading = re.match(r"^### `([a-z.]+)`$", block)
        if heading:
            section = heading.group(1)
        elif block.startswith("```json") and section is not None:
            found.append((section, block[len("```json\n") : -len("```")]))
    return found


def test_every_event_type_has_an_example_that_decodes_as_that_type():
    found = examples()
    assert sorted({section for section, _ in found}) == sorted(EVENT_TYPES)
    for section, example in found:
        decoded = decode_message(json.dumps(json.loads(example)).encode())
        assert decoded.rejected == [], (section, decoded.rejected[0].reason)
        assert [type(e).__struct_config__.tag for e in decoded.events] == [section]


def test_the_stop_reasons_listed_are_the_ones_the_code_knows():
    table = REFERENCE.read_text().split("<!-- stop reasons -->")[1].split("<!-- /stop reasons -->")[0]
    rows = dict(re.findall(r"^\| `(\[[A-Z_]+\])` \| (.+) \|$", table, flags=re.M))
    assert rows == STOP_REASONS
    assert {AGENT_EXIT_STOP_REASON, SIMULATOR_EXIT_STOP_REASON, INACTIVITY_STOP_REASON} <= set(STOP_REASONS)
