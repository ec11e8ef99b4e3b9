"""The throughput stages of a full bench run in interleaved rounds; each figure is the median round."""

from __future__ import annotations

import subprocess
import sys
import time

from streams.bench.runner import _run_rounds, cpu_figures, median_round
from streams.processes import process_cpu_seconds


def test_the_median_round_is_kept_whole_with_every_rate_listed_in_run_order():
    rounds = [{"events_per_s": 30.0, "seconds": 1.0}, {"events_per_s": 10.0, "seconds": 3.0},
              {"events_per_s": 20.0, "seconds": 2.0}]
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
    assert "rounds_cpu_us_per_event" not in median_round([{"events_per_s": 1.0}, {"events_per_s": 2.0, "cpu_us_per_event": 3.0}])


def test_cpu_figures_are_the_cost_per_event_and_the_cores_kept_busy():
    assert cpu_figures(1.0, 3.0, 1_000_000, 4.0) == {"cpu_seconds": 2.0, "cpu_us_per_event": 2.0, "cores_busy": 0.5}
    assert cpu_figures(None, 3.0, 10, 1.0) == {} and cpu_figures(1.0, 2.0, 0, 1.0) == {}


def test_a_child_process_cpu_time_is_read_from_proc_while_it_runs():
    busy = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 0.6\n"
                             "while time.process_time() < end: pass\ntime.sleep(30)"])
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
