"""`GET /metrics`: the worker in Prometheus' text exposition format (docs/guides/prometheus.md).

Two kinds of series, named by Prometheus' conventions (`callqa_` prefix, `_total` counters, seconds):
- Results, from the call index every worker keeps of the whole results topic: the same on every worker
  (`max without (instance)` in a query, not `sum`). A result version counts once, when first read.
- The worker's own health (events applied, duplicates, dead letters, consumer lag, judge queue):
  this worker's alone (`sum` over the workers).

The `agent` label is bounded: the first `metrics_max_agents` agents read keep their name, later ones
are counted under `other`, so that a deployment with thousands of agents does not make thousands of
series per metric. Values are read when scraped: nothing is kept twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from scorers.call_verdicts import NO_SCORE, VERDICT_WORDS, decode_scores
from streams.web.call_index import CallIndex, IndexedCall

OTHER_AGENT = "other"
NO_AGENT = "none"
SCORE_BUCKETS = (10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass
class AgentLabels:
    """The agent label of each agent: its id for the first `limit` agents, `other` after."""

    limit: int
    named: dict[str, str] = field(default_factory=dict)

    def of(self, agent_id: str | None) -> str:
        if not agent_id:
            return NO_AGENT
        label = self.named.get(agent_id)
        if label is None:
            label = agent_id if len(self.named) < self.limit else OTHER_AGENT
            if label != OTHER_AGENT:
                self.named[agent_id] = label
        return label


@dataclass
class ResultTallies:
    """Counted from the index's new versions, from the verdict and score bytes the index keeps (a result
    is not read again): verdicts of every version (counters), of each call's latest version (gauges),
    and the scores of every version (histograms)."""

    agents: AgentLabels
    metric_names: list[str]
    results: dict[str, int] = field(default_factory=dict)  # agent -> result versions
    # agent -> count per (metric place, verdict code): place * 4 + code (scorers/call_verdicts.py)
    verdicts: dict[str, list[int]] = field(default_factory=dict)
    latest: dict[str, list[int]] = field(default_factory=dict)
    score_counts: list[list[int]] = field(default_factory=list)  # per metric place: count per bucket (not cumulative)
    score_tenths: list[int] = field(default_factory=list)  # per metric place: the sum of the scores, in tenths

    def __post_init__(self) -> None:
        self.score_counts = [[0] * (len(SCORE_BUCKETS) + 1) for _ in self.metric_names]
        self.score_tenths = [0] * len(self.metric_names)

    def count(self, held: IndexedCall | None, now: IndexedCall) -> None:
        agent = self.agents.of(now.agent_id)
        self.results[agent] = self.results.get(agent, 0) + 1
        self._add(self.verdicts, agent, now.verdicts, 1)
        for place, tenths in enumerate(decode_scores(now.scores)):
            if tenths != NO_SCORE:
                self.score_counts[place][max(0, (tenths - 1) // 100)] += 1  # (bounds 10, 20, ... 100)
                self.score_tenths[place] += tenths
        if held is not None:
            self._add(self.latest, self.agents.of(held.agent_id), held.verdicts, -1)
        self._add(self.latest, agent, now.verdicts, 1)

    def let_go(self, entry: IndexedCall) -> None:
        """A call left the index's window: the gauges no longer count it (the counters keep it)."""
        self._add(self.latest, self.agents.of(entry.agent_id), entry.verdicts, -1)

    def _add(self, counts: dict[str, list[int]], agent: str, verdicts: bytes, sign: int) -> None:
        tally = counts.get(agent)
        if tally is None:
            tally = counts[agent] = [0] * (4 * len(self.metric_names))
        for place, code in enumerate(verdicts):
            tally[4 * place + code] += sign

    def samples(self, counts: dict[str, list[int]]) -> list[tuple[list[str], int]]:
        """([metric, agent, verdict], value) of every non-zero count."""
        rows = []
        for agent, tally in sorted(counts.items()):
            for place, name in enumerate(self.metric_names):
                for code, word in VERDICT_WORDS.items():
                    if tally[4 * place + code]:
                        rows.append(([name, agent, word], tally[4 * place + code]))
        return sorted(rows)


def watch_index(index: CallIndex, max_agents: int) -> ResultTallies:
    tallies = ResultTallies(AgentLabels(max_agents), index.metric_names)
    index.on_new_version.append(lambda result, held: tallies.count(held, index.calls[result.call_id]))
    index.on_let_go.append(lambda call_id, entry: tallies.let_go(entry))
    return tallies


@dataclass
class WorkerHealth:
    """What the worker's own series read when scraped (each a function, so nothing is copied)."""

    counters: Callable[[], dict[str, int]]  # engine counters and dead letters
    calls_in_memory: Callable[[], int]
    consumer_lag: Callable[[], dict[int, int]]  # events partition -> messages behind
    judge_queue: Callable[[], int | None]
    alert_states: Callable[[], list[tuple[str, str, str]]]  # (rule, severity, pending|firing)


class CallqaCollector:
    def __init__(self, index: CallIndex, tallies: ResultTallies, health: WorkerHealth) -> None:
        self.index, self.tallies, self.health = index, tallies, health

    def collect(self) -> Iterator[Metric]:
        yield from self._results()
        yield from self._worker()

    def _results(self) -> Iterator[Metric]:
        t = self.tallies
        results = CounterMetricFamily(
            "callqa_results", "Result versions read from the results topic (deployment-wide)", labels=["agent"]
        )
        for agent, value in sorted(t.results.items()):
            results.add_metric([agent], value)
        yield results
        verdicts = CounterMetricFamily(
            "callqa_metric_verdicts",
            "Metric verdicts of every result version read (deployment-wide)",
            labels=["metric", "agent", "verdict"],
        )
        for labels, value in t.samples(t.verdicts):
            verdicts.add_metric(labels, value)
        yield verdicts
        calls = GaugeMetricFamily(
            "callqa_calls",
            "Calls in the index's window by the metric verdict of their latest result (deployment-wide)",
            labels=["metric", "agent", "verdict"],
        )
        for labels, value in t.samples(t.latest):
            calls.add_metric(labels, value)
        yield calls
        scores = HistogramMetricFamily(
            "callqa_metric_score",
            "Metric scores (0-100) of every result version read where the metric applied (deployment-wide)",
            labels=["metric"],
        )
        for place, metric in enumerate(t.metric_names):
            counts = t.score_counts[place]
            if not any(counts):
                continue
            cumulative, buckets = 0, []
            for bound, count in zip([*map(str, SCORE_BUCKETS), "+Inf"], counts, strict=True):
                cumulative += count
                buckets.append((bound, cumulative))
            scores.add_metric([metric], buckets, sum_value=t.score_tenths[place] / 10)
        yield scores
        yield GaugeMetricFamily(
            "callqa_calls_indexed", "Calls in this worker's index of the results topic", value=len(self.index)
        )

    def _worker(self) -> Iterator[Metric]:
        h = self.health
        counters = h.counters()
        for name, key, help_text in (
            ("callqa_events_applied", "applied", "Events this worker applied to its calls"),
            ("callqa_events_duplicate", "duplicate", "Events this worker ignored as already applied"),
            ("callqa_events_rejected", "rejected", "Events this worker refused (dead-lettered)"),
            ("callqa_dead_letters", "dead_lettered", "Dead letters this worker sent"),
            ("callqa_results_published", "results", "Results this worker published"),
            ("callqa_results_unscored", "unscored", "Results this worker could not assemble"),
        ):
            yield CounterMetricFamily(name, help_text, value=counters.get(key, 0))
        yield GaugeMetricFamily(
            "callqa_calls_in_memory", "Calls this worker holds (open, or ended and retained)", value=h.calls_in_memory()
        )
        lag = GaugeMetricFamily(
            "callqa_consumer_lag_messages",
            "Messages of the events topic not yet read, per partition this worker holds",
            labels=["partition"],
        )
        for partition, behind in sorted(h.consumer_lag().items()):
            lag.add_metric([str(partition)], behind)
        yield lag
        queued = h.judge_queue()
        if queued is not None:
            yield GaugeMetricFamily("callqa_judge_queue_calls", "Ended calls waiting for the LLM judge", value=queued)
        alerts = GaugeMetricFamily(
            "callqa_alerts",
            "Alert episodes open now, by rule and state (on the worker that evaluates alerts)",
            labels=["rule", "severity", "state"],
        )
        open_episodes: dict[tuple[str, str, str], int] = {}
        for episode in h.alert_states():  # (one episode per scope: `agent:*` rules have several)
            open_episodes[episode] = open_episodes.get(episode, 0) + 1
        for labels, count in sorted(open_episodes.items()):
            alerts.add_metric(list(labels), count)
        yield alerts


def exposition(collector: CallqaCollector) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry)


def consumer_lag(consumer: Any, topic: str, partitions: Any) -> dict[int, int]:
    """Per partition of `topic` assigned to `consumer`: the high watermark less the next offset to read."""
    lag = {}
    for tp in list(consumer.assignment()):
        if tp.topic != topic:
            continue
        try:
            highwater = consumer.highwater(tp)
        except Exception:  # no fetch yet: no figure
            continue
        if highwater is None:
            continue
        state = partitions.get(tp.partition)
        next_offset = state.last_offset + 1 if state is not None else 0
        lag[tp.partition] = max(0, highwater - next_offset)
    return lag
