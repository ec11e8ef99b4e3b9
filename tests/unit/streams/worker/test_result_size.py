"""Results too large for a message because of their cohort verdicts are published with the verdicts'
details cut to what overviews and alerts read; the worker and replay write the same bytes."""

from __future__ import annotations

import asyncio
import json

from scorers.cohort_overview import contribution
from scorers.cohorts import CohortBook
from scorers.engine import CallEngine
from streams.replay.log_replay import PartitionReplay, ReplayOutputs
from streams.result_size import CUT_KEY, fitted
from streams.worker.live_scorer import LiveScorer
from streams.worker.message_flow import MessageFlow
from tests.helpers.eventkit import T0
from tests.helpers.workerkit import DictSink, KafkaMessage, message

MINUTE = 60_000


def large_cohort(index: int) -> dict:
    return {
        "cohort_id": f"big{index:02d}",
        "name": "n" * 200,
        "agents": ["*"],
        "metrics": [{"metric": "wer"}, {"metric": "latency", "weight": 2}],
        "criteria": [
            {"name": f"{j:03d}" + "c" * 197, "field": "evaluation.stop_reason", "op": "exists"} for j in range(50)
        ],
    }


def book(cohorts: int) -> CohortBook:
    return CohortBook(cohorts=[large_cohort(i) for i in range(cohorts)])


def one_call(call_id: str, start: int) -> list[bytes]:
    return [
        message("call.started", {"agent_id": "a1"}, f"{call_id}-1", start, call_id),
        message("turn", {"role": "user", "text": "my order 48213 is late"}, f"{call_id}-2", start + 1000, call_id),
        message("call.ended", {"stop_reason": "[EXIT]"}, f"{call_id}-3", start + 2000, call_id),
    ]


def scored(cohorts: int):
    engine = CallEngine(cohorts=book(cohorts))
    results = []
    PartitionReplay(engine, 1, ReplayOutputs(lambda key, result, line: results.append(result))).run(one_call("c1", T0))
    return results[-1]


def test_a_result_that_fits_is_published_whole():
    result = scored(2)
    fit = fitted(result, 1_048_576)
    assert fit.result is result and len(fit.value) == fit.full_size
    assert fitted(result, None).value == fit.value


def test_too_large_the_verdicts_keep_what_overviews_and_alerts_read_and_say_why():
    result = scored(4)
    whole = fitted(result, None)
    limit = whole.full_size - 1
    fit = fitted(result, limit)
    assert fit.value is not None and len(fit.value) <= limit and fit.full_size == whole.full_size
    published = json.loads(fit.value)
    for before, after, raw in zip(result.cohorts, fit.result.cohorts, published["cohorts"], strict=False):
        assert (after.cohort_id, after.weighted_score, after.passed, after.metrics_counted) == (
            before.cohort_id,
            before.weighted_score,
            before.passed,
            before.metrics_counted,
        )
        assert contribution(after, fit.result) == contribution(before, result)
        assert set(raw["details"]) == {"metrics", CUT_KEY}
        assert f"the whole result was {whole.full_size} bytes, above the {limit}-byte limit" in raw["details"][CUT_KEY]
    assert published["metrics"] == json.loads(whole.value)["metrics"]  # the call's own metrics stay whole


def test_too_large_even_cut_it_is_not_published():
    result = scored(1)
    assert fitted(result, 2_000).value is None


def test_the_worker_publishes_the_cut_result_replay_writes_it_the_same_and_the_rest_fits_whole():
    limit = fitted(scored(4), None).full_size - 1
    messages = one_call("c1", T0) + one_call("c2", T0 + MINUTE)
    sink = DictSink({})
    flow = MessageFlow(LiveScorer(CallEngine(cohorts=book(4))), sink)
    flow.max_result_bytes = limit

    async def run() -> None:
        for offset, raw in enumerate(messages):
            await flow.score(KafkaMessage(raw, offset))

    asyncio.run(run())
    live = [value for topic, _, value in sink.sent if topic == "results"]
    replayed: list[bytes] = []
    PartitionReplay(
        CallEngine(cohorts=book(4)),
        1,
        ReplayOutputs(lambda key, result, line: replayed.append(line)),
        max_result_bytes=limit,
    ).run(messages)
    assert len(live) == 2 and live == replayed
    assert all(CUT_KEY in json.loads(value)["cohorts"][0]["details"] for value in live)


def test_a_transcript_too_large_for_a_message_is_cut_turn_by_turn_and_the_rest_kept():
    """8 turns of 50,000 Chinese characters (1.2 MB): every metric, the evaluation's signals and the
    turns' order, roles and times stay; each turn's text is cut to a length that fits (here, turns alike, the
    longest)."""
    engine = CallEngine()
    messages = [message("call.started", {"agent_id": "a1"}, "c1-0", T0, "c1")]
    for index in range(8):
        messages.append(
            message(
                "turn",
                {"role": ("user", "agent")[index % 2], "text": "余额" * 25_000},
                f"c1-{index + 1}",
                T0 + 1000 * (index + 1),
                "c1",
            )
        )
    messages.append(message("call.ended", {"stop_reason": "[EXIT]"}, "c1-9", T0 + 10_000, "c1"))
    results = []
    PartitionReplay(engine, 1, ReplayOutputs(lambda key, result, line: results.append(result))).run(messages)
    whole = fitted(results[-1], None)
    limit = 1_048_576
    assert whole.full_size > limit
    fit = fitted(results[-1], limit)
    assert fit.value is not None and len(fit.value) <= limit
    published, original = json.loads(fit.value), json.loads(whole.value)
    assert published["metrics"] == original["metrics"]
    kept = {key: value for key, value in published["evaluation"].items() if key not in ("turns", "turns_cut")}
    assert kept == {key: value for key, value in original["evaluation"].items() if key != "turns"}
    cut_turns = published["evaluation"]["turns"]
    assert [(t["role"], t["timestamp"]) for t in cut_turns] == [
        (t["role"], t["timestamp"]) for t in original["evaluation"]["turns"]
    ]
    length = len(cut_turns[0]["text"]) - 1
    assert all(t["text"] == ("余额" * 25_000)[:length] + "\u2026" for t in cut_turns)
    assert f"cut to its first {length} characters" in published["evaluation"]["turns_cut"]
    # The longest that fits: one character more each would not.
    longer = json.loads(fit.value)
    for turn in longer["evaluation"]["turns"]:
        turn["text"] = ("余额" * 25_000)[: length + 1] + "\u2026"
    longer["evaluation"]["turns_cut"] = longer["evaluation"]["turns_cut"].replace(str(length), str(length + 1))
    assert len(json.dumps(longer, ensure_ascii=False, separators=(",", ":")).encode()) > limit
