"""The throughput stages of a full bench run in interleaved rounds; each figure is the median round."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import TYPE_CHECKING

from streams.bench.runner import (
    _run_rounds,
    cpu_figures,
    median_latency,
    median_round,
    round_ratios,
)
from streams.worker.processes import process_cpu_seconds

if TYPE_CHECKING:
    from streams.bench.runner import Bench


def test_the_median_round_is_kept_whole_with_every_rate_listed_in_run_order():
    rounds = [
        {"events_per_s": 30.0, "seconds": 1.0},
        {"events_per_s": 10.0, "seconds": 3.0},
        {"events_per_s": 20.0, "seconds": 2.0},
    ]
    chosen = median_round(rounds)
    assert chosen == {"events_per_s": 20.0, "seconds": 2.0, "rounds_events_per_s": [30.0, 10.0, 20.0]}
    assert "rounds_events_per_s" not in rounds[2]  # the rounds themselves are left as they were


def test_an_even_count_keeps_the_lower_median_and_one_round_is_itself():
    assert median_round([{"events_per_s": 4.0}, {"events_per_s": 1.0}])["events_per_s"] == 1.0
    assert median_round([{"events_per_s": 7.0}]) == {"events_per_s": 7.0, "rounds_events_per_s": [7.0]}


def test_rounds_interleave_the_runs_rather_than_repeat_each_run_in_a_row():
    order: list[str] = []

    def run(name: str):
        def measure():
            order.append(name)
            return {"events_per_s": float(len(order))}

        return measure

    measured = _run_rounds({"a": run("a"), "b": run("b")}, 3, log=lambda line: None)
    assert order == ["a", "b", "a", "b", "a", "b"]
    assert measured["a"]["rounds_events_per_s"] == [1.0, 3.0, 5.0] and measured["a"]["events_per_s"] == 3.0
    assert measured["b"]["events_per_s"] == 4.0


def test_the_median_round_lists_every_round_s_cpu_cost_when_each_has_one():
    rounds = [{"events_per_s": 30.0, "cpu_us_per_event": 5.0}, {"events_per_s": 10.0, "cpu_us_per_event": 9.0}]
    assert median_round(rounds)["rounds_cpu_us_per_event"] == [5.0, 9.0]
    assert "rounds_cpu_us_per_event" not in median_round(
        [{"events_per_s": 1.0}, {"events_per_s": 2.0, "cpu_us_per_event": 3.0}]
    )


def test_cpu_figures_are_the_cost_per_event_and_the_cores_kept_busy():
    assert cpu_figures(1.0, 3.0, 1_000_000, 4.0) == {"cpu_seconds": 2.0, "cpu_us_per_event": 2.0, "cores_busy": 0.5}
    assert cpu_figures(None, 3.0, 10, 1.0) == {} and cpu_figures(1.0, 2.0, 0, 1.0) == {}


def test_a_child_process_cpu_time_is_read_from_proc_while_it_runs():
    busy = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\ntime.sleep(30)",
        ]
    )
    try:
        deadline = time.monotonic() + 20
        used = process_cpu_seconds(busy.pid)
        while (used or 0) < 0.6 and time.monotonic() < deadline:
            time.sleep(0.05)
            used = process_cpu_seconds(busy.pid)
        assert used is not None and 0.6 <= used < 5
    finally:
        busy.kill()
        busy.wait()
    assert process_cpu_seconds(busy.pid) is None  # reaped: no such process any more


def test_the_latency_figure_is_the_run_with_the_median_p50_and_keeps_its_own_p99():
    runs = [
        {"p50": 40.0, "p99": 90.0, "calls": 3},
        {"p50": 140.0, "p99": 450.0, "calls": 3},
        {"p50": 30.0, "p99": 120.0, "calls": 3},
    ]
    chosen = median_latency(runs)
    assert (chosen["p50"], chosen["p99"]) == (40.0, 90.0)
    assert chosen["rounds"] == [{"p50": 40.0, "p99": 90.0}, {"p50": 140.0, "p99": 450.0}, {"p50": 30.0, "p99": 120.0}]
    assert median_latency([{"p50": 5.0, "p99": 9.0}]) == {"p50": 5.0, "p99": 9.0, "rounds": [{"p50": 5.0, "p99": 9.0}]}


def test_the_ratio_to_a_peer_is_also_given_round_by_round():
    callqa = {"events_per_s": 10.0, "rounds_events_per_s": [12.0, 10.0, 8.0]}
    naive = {"events_per_s": 2.0, "rounds_events_per_s": [2.0, 2.5, 1.0]}
    assert round_ratios(callqa, naive) == [6.0, 4.0, 8.0]
    # Measured once, or not the same rounds: no pairs to give.
    assert round_ratios(callqa, {"events_per_s": 2.0}) is None
    assert round_ratios(callqa, {"rounds_events_per_s": [2.0, 2.0]}) is None
    assert round_ratios(None, naive) is None


class _CountingWorker:
    """A worker whose /health counters follow a script, one reading per poll."""

    def __init__(self, readings: list[int]) -> None:
        self.readings, self.process, self.log_path = iter(readings), None, "-"
        self.last = 0

    def health(self) -> dict:
        self.last = next(self.readings, self.last)
        return {"applied": self.last, "assigned_partitions": [0]}

    def cpu_seconds(self) -> float:
        return 0.0


def _bench() -> Bench:
    from streams.bench.runner import QUICK, Bench

    return Bench(QUICK, "/tmp", log=lambda line: None)


def test_a_rate_counts_from_the_first_event_seen_to_the_last():
    rate = _bench()._rate([_CountingWorker([0, 0, 100, 600, 1000])], 1000)
    assert rate["events"] == 1000 and rate["events_per_s"] > 0
    # From the poll that first saw events: the 900 events applied after it.
    assert abs(rate["events_per_s"] * rate["seconds"] - 900) < 1e-6


def test_all_events_applied_between_two_polls_still_give_a_rate():
    # (A smoke run's few events: they were a rate of 0 events/s, from a span that held none of them.)
    rate = _bench()._rate([_CountingWorker([0, 0, 1000])], 1000)
    assert rate["events_per_s"] > 0 and abs(rate["events_per_s"] * rate["seconds"] - 1000) < 1e-6
