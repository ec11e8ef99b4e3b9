"""Alert rules: the document, its defaults, the rules file (TOML or JSON) and validation errors that
name the rule and the field."""

from __future__ import annotations

import json

import pytest

from models.alert_rules import (
    DEFAULT_MIN_CALLS,
    AlertRule,
    AlertRuleError,
    decode_rule,
    encode_rule,
    load_rules,
    scope_matches,
)
from scorers.alerting.rulebook import RuleBook
from scorers.registry import qa_metrics
from tests.helpers.alertkit import AGENT_LATENCY_TOML

KNOWN = [m.name for m in qa_metrics()]
LATENCY = {
    "name": "agent latency",
    "scope": "agent:*",
    "metric": "latency",
    "window_s": 300,
    "fire_below": 0.5,
    "clear_above": 0.8,
    "min_calls": 5,
    "for_s": 60,
    "severity": "critical",
}

TOML_RULES = (
    AGENT_LATENCY_TOML
    + """
[[rules]]
name = "billing verdict"
scope = "cohort:billing"
metric = "weighted_score"
window_s = 600
fire_below = 0.7
long_window_s = 3600
"""
)


def _error(document: dict) -> str:
    with pytest.raises(AlertRuleError) as info:
        decode_rule(document, KNOWN)
    return str(info.value)


# ------------------------------------------------------------------------------------- loading


def test_a_toml_file_lists_its_rules_under_rules(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text(TOML_RULES)
    latency, billing = load_rules(path, KNOWN)
    assert (latency.name, latency.scope, latency.metric, latency.window_ms, latency.for_ms) == (
        "agent latency",
        "agent:*",
        "latency",
        300_000,
        60_000,
    )
    assert (latency.fire_at, latency.clear_at, latency.min_calls, latency.severity) == (0.5, 0.8, 5, "critical")
    assert (billing.metric, billing.long_window_ms) == ("weighted_score", 3_600_000)


def test_a_toml_file_saved_with_a_byte_order_mark_reads_as_without(tmp_path):
    plain, marked = tmp_path / "rules.toml", tmp_path / "marked.toml"
    plain.write_text(TOML_RULES)
    marked.write_bytes(b"\xef\xbb\xbf" + TOML_RULES.encode())
    assert load_rules(marked, KNOWN) == load_rules(plain, KNOWN)


def test_a_json_file_holds_rules_under_rules_or_as_a_bare_list(tmp_path):
    wrapped, bare = tmp_path / "wrapped.json", tmp_path / "bare.json"
    wrapped.write_text(json.dumps({"rules": [LATENCY]}))
    bare.write_text(json.dumps([LATENCY]))
    assert load_rules(wrapped, KNOWN) == load_rules(bare, KNOWN) == [decode_rule(LATENCY, KNOWN)]


def test_left_out_fields_take_their_defaults():
    rule = decode_rule({"name": "r", "metric": "wer", "window_s": 60, "fire_below": 0.9}, KNOWN)
    assert (rule.scope, rule.min_calls, rule.for_s, rule.severity, rule.long_window_s) == (
        "all",
        DEFAULT_MIN_CALLS,
        0,
        "warning",
        None,
    )
    # Without clear_above there is no hysteresis band: the rule clears where it fires.
    assert rule.clear_at == rule.fire_at == 0.9
    assert rule.active


def test_a_rule_document_round_trips_through_the_topic_encoding():
    rule = decode_rule(LATENCY, KNOWN)
    assert decode_rule(encode_rule(rule), KNOWN) == rule


def test_a_delete_needs_only_the_name():
    rule = decode_rule({"name": "agent latency", "deleted": True}, KNOWN)
    assert rule.deleted and not rule.active


# ---------------------------------------------------------------------------------- validation


def test_an_unknown_metric_is_named_with_the_rule_and_field():
    message = _error({**LATENCY, "metric": "latencyy"})
    assert "rule 'agent latency'" in message and "`metric`: unknown metric 'latencyy'" in message


def test_a_pass_rate_above_one_names_the_field():
    assert "`fire_below`" in _error({**LATENCY, "fire_below": 1.5, "clear_above": 1.5})


def test_clear_above_below_fire_below_is_refused():
    assert "`clear_above` (0.4) must be at least `fire_below` (0.5)" in _error({**LATENCY, "clear_above": 0.4})


def test_the_long_window_must_be_longer_than_the_window():
    assert "`long_window_s` (300) must be longer than `window_s` (300)" in _error({**LATENCY, "long_window_s": 300})
    # Windows are counted in milliseconds: a difference below one is no difference.
    assert "must be longer than `window_s`" in _error({**LATENCY, "long_window_s": 300.0004})


def test_a_window_shorter_than_a_millisecond_is_refused():
    assert "`window_s` (0.0004) must be at least a millisecond" in _error({**LATENCY, "window_s": 0.0004})


def test_the_weighted_score_needs_a_cohort_scope():
    assert "needs a cohort scope" in _error({**LATENCY, "metric": "weighted_score"})
    assert decode_rule({**LATENCY, "metric": "weighted_score", "scope": "cohort:*"}, KNOWN).scope == "cohort:*"


@pytest.mark.parametrize("scope", ["agents:*", "agent:", "team:x", "agent:billing-*"])
def test_a_scope_outside_the_known_forms_is_refused(scope):
    assert "`scope`" in _error({**LATENCY, "scope": scope})


def test_a_misspelt_field_is_refused():
    assert "fire_bellow" in _error({**LATENCY, "fire_bellow": 0.5})


@pytest.mark.parametrize("severity", ["page", "ticket", "sev1", "info"])
def test_any_severity_label_is_accepted_as_prometheus_takes_any(severity):
    assert decode_rule({**LATENCY, "severity": severity}, KNOWN).severity == severity


@pytest.mark.parametrize("severity", ["", "page me", "p@ge"])
def test_a_severity_that_cannot_be_a_label_value_is_refused_and_says_what_one_is(severity):
    assert "a severity is a word" in _error({**LATENCY, "severity": severity})


def test_missing_required_fields_are_each_named():
    message = _error({"name": "bare"})
    assert all(f"`{field}` is required" in message for field in ("metric", "window_s", "fire_below"))


def test_a_file_error_names_the_file_and_the_rules_position(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps([LATENCY, {"scope": "all", "metric": "wer", "window_s": 60, "fire_below": 0.5}]))
    with pytest.raises(AlertRuleError) as info:
        load_rules(path, KNOWN)
    assert str(info.value).startswith(f"{path}: invalid alert rule (rule #2): `name` is required")


def test_a_name_used_twice_in_a_file_is_refused(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps([LATENCY, LATENCY]))
    with pytest.raises(AlertRuleError, match=r"'agent latency' \(rule #2\): the name is used twice"):
        load_rules(path, KNOWN)


def test_a_file_that_does_not_parse_says_which_format(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text("[[rules]\nname = ")
    with pytest.raises(AlertRuleError, match="not valid TOML"):
        load_rules(path, KNOWN)


# -------------------------------------------------------------------------------------- scopes


def test_scope_templates_match_every_agent_or_cohort_and_nothing_else():
    assert scope_matches("agent:*", "agent:a1") and not scope_matches("agent:*", "cohort:a1")
    assert scope_matches("cohort:billing", "cohort:billing") and not scope_matches("cohort:billing", "cohort:sales")
    assert scope_matches("all", "all") and not scope_matches("all", "agent:a1")


# ------------------------------------------------------------------------------------ rulebook


def test_topic_documents_override_file_rules_by_name_and_deletes_remove_them():
    file_rule = decode_rule(LATENCY, KNOWN)
    book = RuleBook.from_file_rules([file_rule])
    stricter = decode_rule({**LATENCY, "fire_below": 0.6, "clear_above": 0.9}, KNOWN)
    book.apply("agent latency", stricter)
    assert book.rules() == [stricter]
    book.apply("agent latency", decode_rule({"name": "agent latency", "deleted": True}, KNOWN))
    assert book.rules() == []


def test_the_rulebook_revision_moves_only_on_a_change():
    book = RuleBook()
    rule = AlertRule(name="r", metric="wer", window_s=60, fire_below=0.5)
    book.apply("r", rule)
    revision = book.revision
    book.apply("r", rule)  # the compacted topic read again from the beginning
    assert book.revision == revision


@pytest.mark.parametrize("field", ["window_s", "long_window_s", "for_s"])
def test_an_infinite_or_longer_than_a_year_duration_is_refused(field):
    for value in (float("inf"), 400 * 86_400):
        document = {**LATENCY, field: value}
        assert f"`{field}`: Expected `" in _error(document) and "<= 31622400" in _error(document)


def test_a_toml_file_with_an_infinite_window_is_refused_naming_the_field(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text(AGENT_LATENCY_TOML.replace("window_s = 300", "window_s = inf"))
    with pytest.raises(AlertRuleError, match="`window_s`: Expected `float` <= 31622400"):
        load_rules(str(path), KNOWN)
