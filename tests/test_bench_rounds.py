"""The throughput stages of a full bench run in interleaved rounds; each figure is the median round."""

from __future__ import annotations

from streams.bench.runner import _run_rounds, median_round


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

