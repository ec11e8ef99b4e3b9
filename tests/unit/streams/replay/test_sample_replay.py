"""The bundled sample log through `callqa replay`: deterministic, every line accounted for, and every
metric both applicable and not applicable somewhere."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from models.wire import decode_message
from streams.cli.main import main
from streams.files.event_log import read_log
from tests.helpers.paths import REPO

SAMPLE = REPO / "samples" / "calls.jsonl"
pytestmark = pytest.mark.skipif(not SAMPLE.exists(), reason="no bundled sample log")


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay")
    for name in ("a", "b"):
        assert (
            main(
                [
                    "replay",
                    str(SAMPLE),
                    "--out",
                    str(out / f"{name}.jsonl"),
                    "--deadletter",
                    str(out / f"{name}.dead.jsonl"),
                ]
            )
            == 0
        )
    return out


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_replaying_the_sample_twice_gives_byte_identical_results(replayed):
    assert (replayed / "a.jsonl").read_bytes() == (replayed / "b.jsonl").read_bytes()
    assert (replayed / "a.dead.jsonl").read_bytes() == (replayed / "b.dead.jsonl").read_bytes()


def test_every_line_of_the_sample_is_accounted_for(replayed):
    records = list(read_log(str(SAMPLE)))
    accepted: list = []
    malformed = 0
    for raw in records:
        decoded = decode_message(raw)
        accepted.extend(decoded.events)
        malformed += len(decoded.rejected)
    ids = Counter(e.event_id for e in accepted)
    duplicates = sum(n - 1 for n in ids.values())
    dead = read_jsonl(replayed / "a.dead.jsonl")
    results = read_jsonl(replayed / "a.jsonl")
    calls = {e.call_id for e in accepted if e.call_id != "__watermark__"}
    # Each malformed record is dead-lettered with a reason; so is any event arriving after its call ended.
    assert malformed >= 6
    assert sum(1 for d in dead if d["event_id"] is None or d["event_id"] not in ids) >= 1
    assert all(d["reason"] for d in dead)
    assert len(dead) >= malformed
    # Every call has a result, and no (call, version) pair has two different contents.
    assert {r["call_id"] for r in results} == calls
    seen: dict[tuple[str, int], dict] = {}
    for r in results:
        assert seen.setdefault((r["call_id"], r["version"]), r) == r
    # Versions count up from 1 without gaps.
    by_call: dict[str, list[int]] = {}
    for r in results:
        by_call.setdefault(r["call_id"], []).append(r["version"])
    assert all(v == list(range(1, len(v) + 1)) for v in by_call.values())
    assert duplicates >= 1


def test_every_metric_applies_on_some_calls_and_not_on_others(replayed):
    latest: dict[str, dict] = {}
    for r in read_jsonl(replayed / "a.jsonl"):
        latest[r["call_id"]] = r
    applicable: Counter = Counter()
    not_applicable: Counter = Counter()
    for r in latest.values():
        for m in r["metrics"]:
            (applicable if m["score"] is not None else not_applicable)[m["metric"]] += 1
    names = {m["metric"] for r in latest.values() for m in r["metrics"]}
    assert len(names) == 11
    for name in names:
        assert applicable[name] > 0 and not_applicable[name] > 0, name
    # These two apply wherever the agent spoke (the seed lists no reason for them): not on the sample's
    # dead calls, where a TTS failure left the caller talking to no one.
    dead = sum(1 for r in latest.values() if r["no_conversation"])
    assert dead == 2
    assert applicable["hallucination"] == applicable["overlapping_speech"] == len(latest) - dead
