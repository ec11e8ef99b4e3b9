"""`callqa bench --quick` runs every stage end to end and writes a complete report.

A smoke run: small counts, every stage at once, so its figures mean nothing and no speed is
asserted here — only that each key the issue asks for is there and is a number.
"""

from __future__ import annotations

import json
import numbers
import tempfile

import pytest

from streams.bench.runner import run_bench

pytestmark = pytest.mark.broker
# The Quix Streams peer comes with the `bench` extra, which `make test` installs; a bare
# `pip install -e '.[test]'` skips this test rather than fail on a peer it did not ask for.
pytest.importorskip("quixstreams", reason="the bench extra is not installed")

# Every figure the report must carry (dotted names are nested objects).
REQUIRED_NUMBERS = [
    "single_event.events_per_s",
    "single_event.naive_faust_events_per_s",
    "single_event.callqa_stock_transport_events_per_s",
    "batched.events_per_s",
    "batched.bare_aiokafka_events_per_s",
    "batched.quix_stateful_events_per_s",
    "end_to_result_ms.p50",
    "end_to_result_ms.p99",
    "replay.events_per_s",
    "changelog_bytes_per_event.turns_100",
    "changelog_bytes_per_event.turns_1000",
    "memory_per_open_call_bytes",
    "two_workers_speedup",
    "machine.cpu_count",
    "machine.memory_bytes",
    # What each pipeline's events cost in CPU time, next to its rate.
    "single_event.cpu_us_per_event",
    "single_event.bare_aiokafka_cpu_us_per_event",
    "batched.cpu_us_per_event",
    "batched.bare_aiokafka_cpu_us_per_event",
    "batched.quix_stateful_cpu_us_per_event",
    "replay.cpu_us_per_event_one_process",
    # The worker on the batches `callqa send` makes (a partition's next events, across calls).
    "batched.as_callqa_send_batches.events_per_s",
    "batched.as_callqa_send_batches.average_events_per_message",
]
REQUIRED_TEXT = [
    "machine.cpu_model",
    "versions.python",
    "versions.faust",
    "versions.aiokafka",
    "versions.quixstreams",
    "versions.msgspec",
]


def _at(report: dict, dotted: str):
    node = report
    for part in dotted.split("."):
        node = node[part]
    return node


def test_a_quick_bench_writes_every_figure_of_the_report_and_leaves_nothing_else(broker, tmp_path, monkeypatch):
    out = tmp_path / "report.json"
    scratch = tmp_path / "tmp"  # where its working directory, its workers' and its peers' state go
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    run_bench(str(out), quick=True, broker=broker, log=lambda line: None)
    assert list(scratch.iterdir()) == []
    report = json.loads(out.read_text())
    for name in REQUIRED_NUMBERS:
        value = _at(report, name)
        assert isinstance(value, numbers.Real) and not isinstance(value, bool) and value > 0, name
    for name in REQUIRED_TEXT:
        assert isinstance(_at(report, name), str) and _at(report, name), name
    # Calls of 10 turns may end before a journal segment is due in so short a run: a number or null.
    turns_10 = report["changelog_bytes_per_event"]["turns_10"]
    assert turns_10 is None or turns_10 > 0
    assert report["quick"] is True
    # Every callqa run reads topics of its own, never those of an earlier run nor the peers' topic:
    # a worker reads its results back, and would re-read every earlier run's.
    callqa_topics = [
        report["single_event"]["callqa"]["topic"],
        report["single_event"]["callqa_stock_transport"]["topic"],
        report["batched"]["callqa"]["topic"],
        report["batched"]["as_callqa_send_batches"]["callqa"]["topic"],
    ]
    assert len(set(callqa_topics)) == 4
    assert not set(callqa_topics) & {report["single_event"]["peers_topic"], report["batched"]["peers_topic"]}
    assert set(report["goals"]) >= {
        "single_event_vs_naive_faust",
        "batched_events_per_s",
        "end_to_result_p99_ms",
        "replay_events_per_s",
        "two_workers_speedup",
    }
