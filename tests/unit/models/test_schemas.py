"""schemas/ is generated from models/ and agrees with the decoder on real records."""

from __future__ import annotations

import json

import jsonschema
import msgspec
import pytest

from models.schema_export import all_schemas, render
from models.wire import MAX_MESSAGE_BYTES, decode_message
from streams.files.event_log import read_log
from tests.helpers.logkit import build_log
from tests.helpers.paths import REPO

SCHEMAS = REPO / "schemas"
SAMPLE = REPO / "samples" / "calls.jsonl"


def test_committed_schemas_equal_the_ones_generated_from_the_models():
    generated = {name: render(schema) for name, schema in all_schemas().items()}
    committed = {path.name: path.read_text() for path in SCHEMAS.glob("*.json")}
    assert committed == generated, "run `python -m models.schema_export schemas` and commit"


def test_every_schema_is_a_valid_draft_2020_12_schema():
    for schema in all_schemas().values():
        jsonschema.Draft202012Validator.check_schema(schema)


def _validator(event_type: str):
    path = SCHEMAS / f"event.{event_type}.json"
    return jsonschema.Draft202012Validator(json.loads(path.read_text())) if path.exists() else None


def _agreement(records: list[bytes]) -> tuple[int, int]:
    """For each single-event JSON record: the decoder accepts it exactly when its type's schema does."""
    checked = rejected = 0
    for raw in records:
        if len(raw) > MAX_MESSAGE_BYTES:
            continue  # a size limit of the transport, not of the document
        try:
            document = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(document, dict) or "events" in document:
            continue
        accepted = not decode_message(raw).rejected
        validator = _validator(document.get("type")) if isinstance(document.get("type"), str) else None
        valid = validator is not None and validator.is_valid(document)
        assert accepted == valid, raw[:200]
        checked += 1
        rejected += not accepted
    return checked, rejected


def test_decoder_and_schemas_agree_on_a_synthetic_log(tmp_path):
    log = tmp_path / "calls.jsonl"
    build_log(str(log), calls=20)
    checked, rejected = _agreement(list(read_log(str(log))))
    # 20 calls of 6 turns: 418 JSON events; two are malformed (role "bot", an unknown type); the
    # oversized one is left out (a transport limit).
    assert checked == 418 and rejected == 2


@pytest.mark.skipif(not SAMPLE.exists(), reason="no bundled sample log")
def test_decoder_and_schemas_agree_on_the_bundled_sample_log():
    checked, rejected = _agreement(list(read_log(str(SAMPLE))))
    manifest = json.loads(SAMPLE.with_name("calls.manifest.json").read_text())
    # Every event line, plus the malformed lines that are JSON objects (all but the plain log line
    # and the truncated one), which both the decoder and the schemas refuse.
    malformed_objects = manifest["malformed_lines"] - len({"log_line", "truncated"} & set(manifest["malformed_kinds"]))
    assert (checked, rejected) == (manifest["event_lines"] + malformed_objects, malformed_objects)


def test_result_documents_validate_against_the_result_schema(tmp_path):
    from tests.helpers.livekit import replay_results

    log = tmp_path / "calls.jsonl"
    build_log(str(log), calls=10)
    results, _ = replay_results(str(log))
    validator = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "result.json").read_text()))
    for result in results:
        assert validator.is_valid(result), list(validator.iter_errors(result))[:1]
    broken = dict(results[0], evaluation={"scenario_name": "x"})
    assert not validator.is_valid(broken)


def test_dead_letter_documents_validate_against_their_schema():
    from models.deadletter import DeadLetter

    validator = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "deadletter.json").read_text()))
    letter = DeadLetter("event 'x': bad", "callqa.events", 0, 7, b"\xc1", "x", "c1", None)
    assert validator.is_valid(json.loads(msgspec.json.encode(letter.to_document())))


def test_a_dead_letter_of_an_oversized_message_keeps_its_head_size_and_digest():
    import base64
    import hashlib

    from models.deadletter import ORIGINAL_KEPT_BYTES, DeadLetter

    original = b"{" + b"x" * (2 * 1024 * 1024) + b"}"
    document = DeadLetter("too big", "callqa.events", 2, 40, original).to_document()
    assert document.original_truncated and document.original_size == len(original)
    assert document.original_sha256 == hashlib.sha256(original).hexdigest()
    assert base64.b64decode(document.original_b64) == original[:ORIGINAL_KEPT_BYTES]
    assert len(msgspec.json.encode(document)) < 1_000_000  # fits in a Kafka message of its own


def test_a_result_whose_success_is_not_applicable_validates_without_is_task_successful():
    from tests.helpers.eventkit import event, run_call

    scenario = {"name": "s", "success_signals": ["is_action_match"], "min_agent_turns": 0}
    _, results = run_call(
        [event("call.started", {"agent_id": "a", "scenario": scenario}), event("call.ended", {"stop_reason": "[EXIT]"})]
    )
    document = json.loads(msgspec.json.encode(results[-1]))
    assert document["evaluation"]["is_successful"] == "N/A" and "is_task_successful" not in document["evaluation"]
    validator = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "result.json").read_text()))
    assert validator.is_valid(document), list(validator.iter_errors(document))[:1]
    boolean = dict(document, evaluation={**document["evaluation"], "is_successful": True})
    assert not validator.is_valid(boolean)  # a verdict comes with is_task_successful


@pytest.mark.parametrize(
    "document, accepted",
    [
        (
            {"cohort_id": "c", "name": "C", "criteria": [{"name": "r", "field": "agent_id", "op": "eq", "value": "a"}]},
            True,
        ),
        ({"cohort_id": "c", "deleted": True}, True),
        ({"cohort_id": "c"}, False),
        ({"cohort_id": "c", "name": "C", "metrics": [{"metric": "nope"}]}, False),
        (
            {"cohort_id": "c", "name": "C", "criteria": [{"name": "r", "field": "agent_id", "op": "in", "value": "a"}]},
            False,
        ),
    ],
)
def test_the_cohort_schema_accepts_what_the_decoder_accepts(document, accepted):
    from models.cohorts import CohortError, decode_cohort
    from scorers.registry import qa_metrics

    validator = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "cohort.json").read_text()))
    try:
        decode_cohort(document, [m.name for m in qa_metrics()])
        decoded = True
    except CohortError:
        decoded = False
    assert validator.is_valid(document) is accepted and decoded is accepted


def test_the_bundled_cohorts_validate_against_the_cohort_schema():
    validator = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "cohort.json").read_text()))
    cohorts = json.loads((SAMPLE.parent / "cohorts.json").read_text())
    for cohort in cohorts if isinstance(cohorts, list) else cohorts["cohorts"]:
        assert validator.is_valid(cohort), list(validator.iter_errors(cohort))[:1]


@pytest.mark.parametrize("ids", [{"event_id": "", "call_id": "c1"}, {"event_id": "e1", "call_id": ""}])
def test_an_empty_event_id_or_call_id_is_refused_by_the_schemas_as_by_the_decoder(ids):
    document = {"v": 1, "type": "call.annotated", "ts_ms": 1, "data": {}, **ids}
    assert decode_message(json.dumps(document).encode()).rejected
    assert not _validator("call.annotated").is_valid(document)
    assert _validator("call.annotated").is_valid({**document, "event_id": "e1", "call_id": "c1"})
    batch = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "batch.json").read_text()))
    assert not batch.is_valid({"v": 1, "events": [document]})


def test_alert_events_and_the_sample_rules_validate_against_their_schemas(tmp_path):
    import tomllib

    from streams.cli.main import main

    samples = REPO / "samples"
    alerts = tmp_path / "alerts.jsonl"
    assert (
        main(
            [
                "replay",
                str(SAMPLE),
                "--out",
                str(tmp_path / "results.jsonl"),
                "--jobs",
                "1",
                "--rules",
                str(samples / "alert-rules.toml"),
                "--alerts-out",
                str(alerts),
            ]
        )
        == 0
    )
    documents = [json.loads(line) for line in alerts.read_text().splitlines()]
    assert {document["state"] for document in documents} == {"pending", "firing"}
    validator = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "alert.json").read_text()))
    for document in documents:
        assert validator.is_valid(document), list(validator.iter_errors(document))[:1]
    assert not validator.is_valid({**documents[0], "state": "on fire"})
    rules = tomllib.loads((samples / "alert-rules.toml").read_text())["rules"]
    validator = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "alert-rule.json").read_text()))
    for rule in rules:
        assert validator.is_valid(rule), list(validator.iter_errors(rule))[:1]
    assert not validator.is_valid({**rules[0], "fire_below": 1.5}) and not validator.is_valid(
        {**rules[0], "colour": "red"}
    )


def _cohort_accepted(document) -> bool:
    from models.cohorts import CohortError, decode_cohort
    from scorers.registry import qa_metric_names

    try:
        decode_cohort(document, qa_metric_names())
        return True
    except CohortError:
        return False


def _rule_accepted(document) -> bool:
    from models.alert_rules import AlertRuleError, decode_rule
    from scorers.registry import qa_metric_names

    try:
        decode_rule(json.dumps(document).encode(), qa_metric_names())
        return True
    except AlertRuleError:
        return False


COHORT = {
    "cohort_id": "c",
    "name": "C",
    "agents": ["billing-*"],
    "metrics": [{"metric": "wer"}],
    "criteria": [
        {"name": "r", "field": "evaluation.stop_reason", "op": "eq", "value": "[EXIT]"},
        {"name": "q", "kind": "llm", "question": "Resolved?"},
    ],
}


def _rule(**change):
    return {**COHORT["criteria"][0], **change}


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"cohort_id": " "},
        {"cohort_id": "a\x01b"},
        {"cohort_id": "x" * 201},
        {"name": "x" * 201},
        {"agents": [""]},
        {"agents": ["a"] * 101},
        {"criteria": [_rule(op="lt", value=[1])]},
        {"criteria": [_rule(op="lt")]},
        {"criteria": [_rule(op="lt", value=3)]},
        {"criteria": [_rule(op="contains", value=None)]},
        {"criteria": [_rule(op="contains", value=True)]},
        {"criteria": [_rule(op="exists", value=1)]},
        {"criteria": [_rule(op="exists")]},
        {"criteria": [_rule(field="foo.bar")]},
        {"criteria": [_rule(field="metrics.nope.value")]},
        {"criteria": [_rule(field="metrics.wer.score")]},
        {"criteria": [_rule(field="a..b")]},
        {"criteria": [_rule(name=" ")]},
        {"criteria": [{"name": "q", "kind": "llm", "question": ""}]},
        {"criteria": [{"name": "q", "kind": "llm", "question": "x" * 2001}]},
        {"criteria": [_rule(name=f"r{i}") for i in range(51)]},
    ],
)
def test_the_cohort_schema_refuses_what_the_worker_refuses(change):
    document = {**COHORT, **change}
    validator = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "cohort.json").read_text()))
    assert validator.is_valid(document) is _cohort_accepted(document)


RULE = {"name": "r", "scope": "agent:*", "metric": "latency", "window_s": 60, "fire_below": 0.5}


@pytest.mark.parametrize(
    "change, accepted",
    [
        ({}, True),
        ({"name": " "}, False),
        ({"metric": None}, False),
        ({"window_s": None}, False),
        ({"fire_below": None}, False),
        ({"fire_below": 0}, False),
        ({"window_s": 1e-7}, False),
        ({"window_s": 0.002}, True),
        ({"metric": "nope"}, False),
        ({"scope": "bogus"}, False),
        ({"scope": "agent:"}, False),
        ({"scope": "cohort:a*"}, False),
        ({"metric": "weighted_score"}, False),
        ({"metric": "weighted_score", "scope": "cohort:*"}, True),
        ({"deleted": True, "metric": None, "window_s": None, "fire_below": None}, True),
    ],
)
def test_the_alert_rule_schema_refuses_what_the_worker_refuses(change, accepted):
    document = {key: value for key, value in {**RULE, **change}.items() if value is not None}
    validator = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "alert-rule.json").read_text()))
    assert (validator.is_valid(document), _rule_accepted(document)) == (accepted, accepted)


TURN = {"v": 1, "event_id": "e1", "call_id": "c1", "ts_ms": 1, "type": "turn", "data": {"role": "user", "text": "hi"}}


@pytest.mark.parametrize(
    "document, schema, accepted",
    [
        (TURN, "event.turn.json", True),
        ({**TURN, "events": []}, "event.turn.json", False),
        ({"v": 1, "call_id": "c1", "events": [TURN]}, "batch.json", True),
        ({"v": 1, "events": []}, "batch.json", False),
        ({"v": 1, "call_id": "", "events": [TURN]}, "batch.json", False),
    ],
)
def test_the_event_and_batch_schemas_refuse_what_the_decoder_refuses(document, schema, accepted):
    validator = jsonschema.Draft202012Validator(json.loads((SCHEMAS / schema).read_text()))
    decoded = decode_message(json.dumps(document).encode())
    assert validator.is_valid(document) is accepted
    assert (not decoded.rejected and bool(decoded.events)) is accepted
