"""Events whose free-form parts (RTVI payloads, tool results, judge answers, DB states) hold odd
values — integers beyond the float range, NaN and infinity (MessagePack carries them), maps with
integer keys, JSON nested deeper than the parser goes — are scored without an exception and without
a NaN; and the contract's own numbers refuse what is not finite."""

from __future__ import annotations

import json
import math

import msgspec

from models.wire import decode_message
from scorers.engine import CallEngine
from scorers.numbers import count, finite_number
from scorers.text import canonical_number

_ids = iter(range(1, 1_000_000))


def envelope(type_: str, data: dict) -> dict:
    n = next(_ids)
    return {"v": 1, "type": type_, "event_id": f"f{n}", "call_id": "c1", "ts_ms": 1_760_000_000_000 + n, "data": data}


def score(documents: list[dict], as_msgpack: bool = False):
    """The call's last result, each document sent through the worker's decoder."""
    engine, result = CallEngine(), None
    for document in documents:
        raw = msgspec.msgpack.encode(document) if as_msgpack else json.dumps(document).encode()
        decoded = decode_message(raw)
        assert not decoded.rejected, decoded.rejected
        for event in decoded.events:
            result = engine.process(event).result or result
    assert result is not None
    for metric in result.metrics:
        assert metric.score is None or 0 <= metric.score <= 100, metric
    return result


def started(**data) -> dict:
    return envelope("call.started", {"agent_id": "a", **data})


def ended() -> dict:
    return envelope("call.ended", {"stop_reason": "[EXIT]"})


def metrics_message(data) -> dict:
    return envelope("rtvi", {"message": {"label": "rtvi-ai", "type": "metrics", "data": data}, "side": "agent"})


def metric(result, name: str):
    return next(m for m in result.metrics if m.metric == name)


def test_free_form_numbers_are_read_as_finite_floats_or_not_at_all():
    assert finite_number(3) == 3.0 and finite_number(2.5) == 2.5
    for value in (True, "3", None, [1], 10**400, float("nan"), float("inf")):
        assert finite_number(value) is None, value
    assert count(7.9) == 7 and count(10**400) == 0 and count(float("nan")) == 0


def test_token_metrics_of_any_shape_count_only_the_numbers_they_hold():
    result = score(
        [
            started(),
            metrics_message({"tokens": 7, "ttfb": 0.25}),
            metrics_message(
                {
                    "tokens": [{"prompt_tokens": 10**12, "completion_tokens": 5}],
                    "ttfb": [{"processor": "llm", "value": "fast"}, {"value": 0.5}],
                }
            ),
            ended(),
        ]
    )
    assert result.evaluation["token_usage"]["agent"] == {"n_calls": 1, "prompt": 10**12, "completion": 5}
    # A negative count counts nothing: it took tokens off the call's total, and its run's.
    negative = score(
        [
            started(),
            metrics_message({"tokens": [{"prompt_tokens": -5, "completion_tokens": 3}]}),
            metrics_message({"tokens": [{"prompt_tokens": 4, "completion_tokens": -0.5}]}),
            ended(),
        ]
    )
    assert negative.evaluation["token_usage"]["agent"] == {"n_calls": 2, "prompt": 4, "completion": 3}


def test_numbers_the_journal_or_json_cannot_hold_are_refused_at_decode_naming_the_field():
    # (models/wire_limits.py: an integer beyond 64 bits stopped the worker in the journal's encoder.)
    big = decode_message(json.dumps(metrics_message({"ttfb": [{"processor": "llm", "value": 10**400}]})).encode())
    assert not big.events and "does not fit in 64 bits - at `data.message.data.ttfb.0.value`" in big.rejected[0].reason
    nan = decode_message(msgspec.msgpack.encode(metrics_message({"tokens": [{"prompt_tokens": float("nan")}]})))
    assert not nan.events and "is not finite - at `data.message.data.tokens.0.prompt_tokens`" in nan.rejected[0].reason


# Deeper than any interpreter's decoders go: CPython 3.11 stops below 1,000 levels, 3.13 near 10,000.
TOO_DEEP = 100_000


def test_tool_results_with_huge_statuses_and_arguments_nested_too_deep_are_judged_not_crashed_on():
    deep = "[" * TOO_DEEP + "]" * TOO_DEEP
    result = score(
        [
            started(),
            envelope("tool.call", {"name": "lookup", "arguments": deep, "result": {"status": 200}}),
            envelope("tool.call", {"name": "lookup", "arguments": "{}", "result": "[" * TOO_DEEP}),
            ended(),
        ]
    )
    details = metric(result, "tool_call_accuracy").details
    # Arguments nested too deep to read are not valid JSON; a status of 200 is no failure status.
    assert (details["total"], details["good"]) == (2, 1)
    assert [call["why"] for call in details["bad_calls"]] == ["arguments are not valid JSON"]


def test_recorded_judge_scores_outside_0_to_1_are_held_to_it_and_odd_ones_are_an_error_not_a_crash():
    scenario = {"name": "s", "judge_threshold": 0.5, "nl_assertions": ["confirmed"], "min_agent_turns": 0}

    def judged(evaluation: dict, as_msgpack: bool = False):
        return score(
            [
                started(scenario=scenario),
                envelope("turn", {"role": "agent", "text": "Confirmed."}),
                ended(),
                envelope("judge.result", {"evaluation": evaluation}),
            ],
            as_msgpack,
        ).evaluation

    # A score outside 0 to 1 is held to it, as the harness keeps it (a 0-10 judge's 7 reads as 1.0).
    for outside, held in ((7, 1.0), (-3, 0.0), (1.0001, 1.0)):
        fields = judged({"score": outside, "reason": "r"})
        assert (fields["judge_score"], fields["judge_passed"]) == (held, held >= 0.5)
        assert fields["judge_result"]["reason"] == "r"
    assert judged({"score": 1, "reason": "r"})["judge_score"] == 1.0
    for odd, as_msgpack in (("high", False), ([0.5], True)):
        fields = judged({"score": odd, "reason": "r"}, as_msgpack)
        assert fields["judge_score"] == 0.0 and fields["judge_result"]["reason"].startswith(
            "Error: judge score is not a number"
        )
    verdicts = judged(
        {"score": 1.0, "reason": "r", "nl_assertion_verdicts": [{"index": "first", "passed": True}]}, as_msgpack=True
    )["judge_result"]["nl_assertion_verdicts"]
    assert verdicts[0]["passed"] is False


def test_maps_with_integer_keys_hash_as_json_text_keys_and_reach_the_judge_context():
    from models.db_hash import db_state_hash

    assert db_state_hash({"t": {1: "a", "count": 2}}) == db_state_hash({"t": {"1": "a", "count": 2}})
    score(
        [
            started(),
            envelope("tool.call", {"name": "n", "arguments": "{}", "result": {1: "a", "b": 2}}),
            envelope("db.state", {"side": "agent", "db": {"t": {1: "a", "count": 2}}}),
            ended(),
        ],
        as_msgpack=True,
    )


def test_long_numbers_keep_every_digit_so_a_made_up_one_is_not_grounded_by_a_near_one():
    assert canonical_number("1234567890123456789012345678901") == "1234567890123456789012345678901"
    assert canonical_number("٣٤.٥٠") == "34.5" and canonical_number("1,200.00") == "1200"
    assert canonical_number("00" + "1,000" * 2_000) == "1000" * 2_000  # past int()'s 4,300 digits
    result = score(
        [
            started(),
            envelope(
                "tool.call", {"name": "n", "arguments": "{}", "result": {"ref": "1234567890123456789012345678999"}}
            ),
            envelope("turn", {"role": "agent", "text": "Your reference is 1234567890123456789012345678901."}),
            ended(),
        ]
    )
    assert metric(result, "hallucination").details["fabrications"] == 1


def test_the_contracts_numbers_refuse_nan_and_infinity():
    for type_, data in (
        ("latency", {"latency_ms": float("nan")}),
        ("turn", {"role": "user", "text": "hi", "start_ms": float("inf")}),
        ("turn", {"role": "user", "text": "hi", "words": [["hi", 0.0, float("nan")]]}),
    ):
        raw = msgspec.msgpack.encode(envelope(type_, data))
        sent = msgspec.msgpack.decode(raw)["data"]
        number = sent.get("latency_ms", sent.get("start_ms")) if "words" not in sent else sent["words"][0][2]
        assert not math.isfinite(number)  # MessagePack really carries it
        (rejected,) = decode_message(raw).rejected
        assert "Expected `float`" in rejected.reason, rejected.reason


def test_a_message_nested_deeper_than_the_decoder_goes_is_rejected_not_raised():
    deep_json = b'{"a":' + b"[" * TOO_DEEP
    deep_msgpack = b"\x81\xa1x" + b"\x91" * TOO_DEEP + b"\x01"
    for raw in (deep_json, deep_msgpack):
        decoded = decode_message(raw)
        assert decoded.events == [] and [r.reason for r in decoded.rejected] == [
            "event without a readable event_id: undecodable: nested too deeply"
        ]
        assert decoded.rejected[0].raw == raw


def test_a_batch_holding_an_item_nested_too_deeply_is_rejected_whole_with_the_reason():
    # Splitting the batch into its items already goes too deep, so it cannot keep its good items: it
    # is dead-lettered whole, bytes and reason, and the worker goes on.
    good = msgspec.msgpack.encode(started())
    deep = (
        b"\x85\xa1v\x01\xa4type\xa9tool.call\xa8event_id\xa2d1\xa7call_id\xa2c1\xa4data" + b"\x91" * TOO_DEEP + b"\x01"
    )
    batch = msgspec.msgpack.encode({"v": 1, "events": [msgspec.Raw(good), msgspec.Raw(deep)]})
    decoded = decode_message(batch)
    assert decoded.events == [] and len(decoded.rejected) == 1
    assert decoded.rejected[0].reason.endswith("undecodable: nested too deeply") and decoded.rejected[0].raw == batch
