"""The evaluation harness's signals for a scenario's call: the conversation's end, action-list match,
DB-state match, the judge's fields, the server messages, success as a strict conjunction of the
applicable signals, and the per-scenario metrics.json document."""
