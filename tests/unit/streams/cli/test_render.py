"""The lines `callqa tail` and the demo print: producer-supplied text cannot drive the terminal."""

from __future__ import annotations

from streams.cli.render import alert_line, dead_letter_line, result_line, results_table

HOSTILE = "c1\x1b[2J\x1b[31m\r\nFAKE LINE turns=9\x9b"


def test_control_characters_from_the_producer_are_printed_escaped_in_every_line():
    result = {
        "call_id": HOSTILE,
        "version": 1,
        "agent_id": "a\nb",
        "metrics": [],
        "evaluation": {"stop_reason": "[EXIT]\r", "total_turns": 2},
    }
    alert = {"state": "firing", "rule": "r", "scope": f"agent:{HOSTILE}", "sample_call_ids": [HOSTILE]}
    lines = [
        result_line(result),
        alert_line(alert),
        dead_letter_line({"reason": f"bad {HOSTILE}"}),
        results_table([result]),
    ]
    for line in lines:
        printed = line.replace("\n", "") if line.startswith("call ") else line  # (the table's own rows)
        assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in printed), line
    assert result_line(result).startswith("c1\\x1b[2J\\x1b[31m\\x0d\\x0aFAKE LINE turns=9\\x9b v1 agent=a\\x0ab ")
    assert results_table([result]).count("\n") == 2  # a header, its rule and one row
