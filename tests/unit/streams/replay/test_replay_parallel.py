"""`callqa replay --jobs N`: the partitions shared among N processes, and every output file byte for
byte the one of a replay in one process (results, dead letters, alerts, the order of every line)."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
from collections.abc import Callable
from pathlib import Path

import msgpack
import pytest

from scorers.engine import CallEngine
from streams.cli.main import main
from streams.partitioning import partition_for
from streams.replay.outputs import ReplayFiles
from streams.replay.parallel import ReplayJobError, replay_log
from tests.helpers.logkit import build_log
from tests.helpers.paths import REPO

SAMPLES = REPO / "samples"
SAMPLE_LOG, SAMPLE_COHORTS = SAMPLES / "calls.jsonl", SAMPLES / "cohorts.json"
SAMPLE_RULES = SAMPLES / "alert-rules.toml"

# Flaps with the generated log's sentiment verdicts, so that the alerts depend on the results' order.
SENTIMENT_RULE = """
[[rules]]
name = "sentiment"
scope = "all"
metric = "sentiment"
window_s = 30
fire_below = 0.7
clear_above = 0.8
min_calls = 2
for_s = 0
severity = "warning"
"""


def replay_files(tmp_path: Path, log: Path, jobs: int, rules: Path, *options: str) -> dict[str, bytes]:
    """The three files `callqa replay` writes for `log` with `--jobs jobs`, by name."""
    out = tmp_path / f"{log.stem}-{jobs}"
    out.mkdir()
    paths = {name: out / f"{name}.jsonl" for name in ("results", "dead", "alerts")}
    code = main(
        [
            "replay",
            str(log),
            "--out",
            str(paths["results"]),
            "--deadletter",
            str(paths["dead"]),
            "--rules",
            str(rules),
            "--alerts-out",
            str(paths["alerts"]),
            "--jobs",
            str(jobs),
            *options,
        ]
    )
    assert code == 0
    return {name: path.read_bytes() for name, path in paths.items()}


def generated_log(directory: Path) -> Path:
    """logkit's log (duplicates, malformed records, calls that never end and are swept mid-log), with
    batches that mix calls of several partitions in one record, watermarks that name a partition, and
    halfway a record whose outputs interleave across jobs (`crossing_record`)."""
    jsonl = directory / "generated.jsonl"
    build_log(str(jsonl), calls=120, inactivity_timeout_s=2)
    lines = jsonl.read_text().splitlines()
    records: list[str] = []
    position = 0
    while position < len(lines):
        line = lines[position]
        if position == len(lines) // 2:
            records.append(crossing_record(lines[:position]))
        if position % 40 == 7 and all(_event(lines[position + k]) for k in range(4)):
            records.append(json.dumps({"v": 1, "events": [json.loads(lines[position + k]) for k in range(4)]}))
            position += 4
            continue
        if position % 150 == 60 and _event(line):
            records.append(json.dumps(watermark(f"wm-{position}", position % 4, _event(line)["ts_ms"] + 5_000)))
        records.append(line)
        position += 1
    jsonl.write_text("\n".join(records) + "\n")
    return jsonl


def crossing_record(before: list[str]) -> str:
    """One batch: a watermark far ahead on an odd partition (its open calls are swept), the end of an
    open call on an even partition (a result), then a watermark far ahead there too. Replayed, it
    yields: the call's result, the odd partition's sweep, the even one's; job 0 owns the even
    partition, so only the keys put the odd sweep before the even one."""
    seen: dict[str, int] = {}
    ended: set[str] = set()
    for line in before:
        event = _event(line)
        if event:
            seen[event["call_id"]] = event["ts_ms"]
            if event["type"] == "call.ended":
                ended.add(event["call_id"])
    ts = max(seen.values())
    open_calls = [call for call, last in seen.items() if call not in ended and last > ts - 10_000]
    ending = next(call for call in open_calls if partition_for(call, 4) == 2)
    assert any(partition_for(call, 4) == 1 for call in open_calls)
    end = {
        "v": 1,
        "event_id": f"{ending}:ended-early",
        "call_id": ending,
        "ts_ms": ts,
        "type": "call.ended",
        "data": {"stop_reason": "[EXIT]"},
    }
    far_ahead = ts + 600_000
    return json.dumps({"v": 1, "events": [watermark("wm-odd", 1, far_ahead), end, watermark("wm-even", 2, far_ahead)]})


def watermark(event_id: str, partition: int, ts_ms: int) -> dict:
    return {
        "v": 1,
        "event_id": event_id,
        "call_id": "__watermark__",
        "ts_ms": ts_ms,
        "type": "watermark",
        "data": {"partition": partition},
    }


def _event(line: str) -> dict | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event.get("call_id"), str) else None


def as_msgpack(jsonl: Path) -> Path:
    """The same records as MessagePack (a line that is no JSON becomes a MessagePack string)."""
    path = jsonl.with_suffix(".msgpack")
    with open(path, "wb") as out:
        for line in jsonl.read_text().splitlines():
            try:
                value = json.loads(line)
            except ValueError:
                value = line
            out.write(msgpack.packb(value))
    return path


@pytest.fixture(scope="module")
def sample_one_job(tmp_path_factory) -> dict[str, bytes]:
    return replay_files(tmp_path_factory.mktemp("one"), SAMPLE_LOG, 1, SAMPLE_RULES, "--cohorts", str(SAMPLE_COHORTS))


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("generated")
    (directory / "rules.toml").write_text(SENTIMENT_RULE)
    return generated_log(directory)


@pytest.mark.parametrize("jobs", [2, 3])
def test_the_sample_replayed_in_jobs_writes_the_files_of_one_process(tmp_path, sample_one_job, jobs):
    assert sample_one_job["dead"] and sample_one_job["alerts"]
    assert replay_files(tmp_path, SAMPLE_LOG, jobs, SAMPLE_RULES, "--cohorts", str(SAMPLE_COHORTS)) == sample_one_job


@pytest.mark.parametrize("fmt", ["jsonl", "msgpack"])
def test_a_generated_log_replayed_in_jobs_writes_the_files_of_one_process(tmp_path, generated, fmt):
    log = generated if fmt == "jsonl" else as_msgpack(generated)
    rules = generated.with_name("rules.toml")
    one = replay_files(tmp_path, log, 1, rules)
    assert one["dead"] and one["alerts"]
    assert replay_files(tmp_path, log, 2, rules) == one
    assert replay_files(tmp_path, log, 3, rules) == one


def test_more_jobs_than_partitions_is_one_job_per_partition_and_the_same_files(tmp_path, generated):
    rules = generated.with_name("rules.toml")
    one = replay_files(tmp_path, generated, 1, rules, "--partitions", "2")
    assert replay_files(tmp_path, generated, 5, rules, "--partitions", "2") == one


def test_the_report_of_jobs_is_the_report_of_one_process(tmp_path, generated):
    def report(jobs: int):
        files = ReplayFiles.open(str(tmp_path / f"results-{jobs}.jsonl"), str(tmp_path / f"dead-{jobs}.jsonl"))
        try:
            return replay_log(str(generated), 4, jobs, CallEngine, files)
        finally:
            files.close()

    one, two = report(1), report(2)
    assert one.swept > 0 and one.duplicates > 0 and one.rejected > 0 and one.watermarks > 0
    assert dataclasses.replace(two, seconds=0.0) == dataclasses.replace(one, seconds=0.0)


# ---------------------------------------------------------------------------------------- failures


def test_a_log_that_cannot_be_read_fails_the_replay_with_the_readers_error(tmp_path, capsys):
    log = tmp_path / "misnamed.msgpack"
    log.write_bytes(b'{"v": 1}\n')  # JSON Lines under a MessagePack name
    assert main(["replay", str(log), "--out", str(tmp_path / "out.jsonl"), "--jobs", "2"]) == 2
    assert f"{log}: this is JSON, not MessagePack" in capsys.readouterr().err


def fails_in_one_job(marker: Path, fail: Callable[[], CallEngine]) -> Callable[[], CallEngine]:
    """An engine factory that fails in whichever job calls it first, and builds an engine in the others."""

    def new_engine() -> CallEngine:
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return CallEngine()
        return fail()

    return new_engine


def raise_value_error() -> CallEngine:
    raise ValueError("cohort book unreadable")


@pytest.mark.timeout(60)
def test_a_job_that_raises_fails_the_replay_with_its_error_and_leaves_no_process_behind(tmp_path, generated):
    files = ReplayFiles.open(str(tmp_path / "results.jsonl"))
    with pytest.raises(ValueError, match="cohort book unreadable") as raised:
        replay_log(str(generated), 4, 2, fails_in_one_job(tmp_path / "failed", raise_value_error), files)
    files.close()
    assert any("in replay job" in note and "raise_value_error" in note for note in raised.value.__notes__)
    assert multiprocessing.active_children() == []


@pytest.mark.timeout(60)
def test_a_job_that_dies_without_a_word_fails_the_replay(tmp_path, generated):
    files = ReplayFiles.open(str(tmp_path / "results.jsonl"))
    with pytest.raises(ReplayJobError, match=r"exited \(code 3\) without a report"):
        replay_log(str(generated), 4, 2, fails_in_one_job(tmp_path / "died", lambda: os._exit(3)), files)
    files.close()
    assert multiprocessing.active_children() == []


def test_a_result_too_large_to_publish_is_dead_lettered_by_replay_as_by_the_worker(tmp_path):
    outputs = {}
    for jobs in (1, 2):
        out, dead = tmp_path / f"r{jobs}.jsonl", tmp_path / f"d{jobs}.jsonl"
        with ReplayFiles.open(str(out), str(dead)) as files:
            report = replay_log(str(SAMPLE_LOG), 4, jobs, CallEngine, files, max_result_bytes=7_000)
        outputs[jobs] = (out.read_bytes(), dead.read_bytes())
        lines = out.read_bytes().splitlines()
        letters = [json.loads(line) for line in dead.read_bytes().splitlines()]
        refused = [letter for letter in letters if "bytes, above the 7000-byte limit for a message" in letter["reason"]]
        assert refused and all(len(line) <= 7_000 for line in lines) and report.results == len(lines)
        assert all(letter["call_id"] and letter["event_id"] is None for letter in refused)
    assert outputs[1] == outputs[2]
    with ReplayFiles.open(str(tmp_path / "all.jsonl")) as files:
        unlimited = replay_log(str(SAMPLE_LOG), 4, 1, CallEngine, files)
    assert unlimited.results == report.results + len(refused)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_log_whose_watermarks_name_partitions_the_replay_lacks_is_replayed_with_a_warning(tmp_path, capsys, jobs):
    # A topic of 8 partitions recorded, replayed with the default 4: its results differ from the workers'.
    lines = SAMPLE_LOG.read_text().splitlines()
    ts_ms = json.loads(lines[5])["ts_ms"]
    lines[6:6] = [json.dumps(watermark("wm-6", 6, ts_ms)), json.dumps(watermark("wm-5", 5, ts_ms))]
    log = tmp_path / "recorded.jsonl"
    log.write_text("\n".join(lines) + "\n")
    out = str(tmp_path / "out.jsonl")
    assert main(["replay", str(log), "--out", out, "--jobs", jobs]) == 0
    assert (
        "warning: the log's watermarks name partition 6, but the replay has 4 (--partitions 4): the log comes "
        "from a topic of at least 7 partitions"
    ) in capsys.readouterr().err
    assert main(["replay", str(log), "--out", out, "--jobs", jobs, "--partitions", "7"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_recording_a_log_whose_watermarks_name_partitions_the_replay_lacks_is_refused_before_it_starts(
    tmp_path, capsys
):
    # LOG2 would hold the sweeps of the wrong partitions for good (and a judge would be paid first).
    lines = SAMPLE_LOG.read_text().splitlines()
    lines.insert(6, json.dumps(watermark("wm-6", 6, json.loads(lines[5])["ts_ms"])))
    log, log2 = tmp_path / "recorded.jsonl", tmp_path / "log2.jsonl"
    log.write_text("\n".join(lines) + "\n")
    out = str(tmp_path / "out.jsonl")
    assert main(["replay", str(log), "--out", out, "--record", str(log2)]) == 2
    err = capsys.readouterr().err
    assert "the log's watermarks name partition 6, but the replay has 4" in err
    assert "LOG2 would record those sweeps" in err
    assert not log2.exists() and not Path(out).exists()
    assert main(["replay", str(log), "--out", out, "--record", str(log2), "--partitions", "8"]) == 0
    assert log2.exists()
