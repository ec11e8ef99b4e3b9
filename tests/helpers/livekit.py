"""Helpers for end-to-end tests through the real broker: a worker per test, send, collect results."""

from __future__ import annotations

import asyncio
import json
import tempfile
from dataclasses import dataclass, field

import msgspec

from scorers.engine import CallEngine
from streams.config import Settings
from streams.files.event_log import read_log
from streams.kafka.topic_reader import read_topic
from streams.replay.log_replay import replay
from streams.send.sender import send_log
from streams.topics import TopicNames
from streams.worker.processes import WorkerProcess


def settings_for(broker, prefix: str, partitions: int = 4) -> Settings:
    return Settings(broker=broker.url, topic_prefix=prefix, app_id=prefix, partitions=partitions)


def start_worker(
    broker, prefix: str, partitions: int = 4, data_dir: str | None = None, env: dict[str, str] | None = None
) -> WorkerProcess:
    data_dir = data_dir or tempfile.mkdtemp(prefix="callqa-worker-")
    worker = WorkerProcess(
        broker.url,
        data_dir,
        log_path=f"{data_dir}/worker.log",
        env={
            "CALLQA_TOPIC_PREFIX": prefix,
            "CALLQA_APP_ID": prefix,
            "CALLQA_PARTITIONS": str(partitions),
            **(env or {}),
        },
    )
    worker.start()
    worker.wait_ready()
    return worker


def replay_results(log: str, partitions: int = 4, **engine_options) -> tuple[list[dict], object]:
    results: list[dict] = []
    report = replay(
        read_log(log),
        CallEngine(**engine_options),
        partitions,
        lambda r: results.append(json.loads(msgspec.json.encode(r))),
    )
    return results, report


def latest_by_call(results: list[dict]) -> dict[str, dict]:
    latest: dict[str, dict] = {}
    for r in results:
        if r["call_id"] not in latest or r["version"] > latest[r["call_id"]]["version"]:
            latest[r["call_id"]] = r
    return latest


@dataclass
class Collected:
    results: list[dict] = field(default_factory=list)

    def latest(self) -> dict[str, dict]:
        return latest_by_call(self.results)


def collect(settings: Settings, topic: str, until, timeout_s: float = 120.0) -> list[dict]:
    records: list[dict] = []
    asyncio.run(
        read_topic(
            settings,
            topic,
            None,
            lambda k, v: records.append(json.loads(v)),
            until=lambda: until(records),
            timeout_s=timeout_s,
        )
    )
    return records


def collect_results(settings: Settings, expected_latest: dict[str, dict], timeout_s: float = 120.0) -> list[dict]:
    def complete(records: list[dict]) -> bool:
        latest = latest_by_call(records)
        return all(c in latest and latest[c]["version"] >= e["version"] for c, e in expected_latest.items())

    return collect(settings, TopicNames(settings.topic_prefix).results, complete, timeout_s)


def send(log: str, settings: Settings, **options) -> object:
    return asyncio.run(send_log(read_log(log), settings, **options))


def assert_one_content_per_version(results: list[dict]) -> None:
    """A result may be published twice (after a crash), never with two different contents."""
    by_version: dict[tuple[str, int], set[str]] = {}
    for r in results:
        by_version.setdefault((r["call_id"], r["version"]), set()).add(repr(r))
    assert all(len(contents) == 1 for contents in by_version.values())
