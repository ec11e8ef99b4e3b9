"""An alert rule: when a metric's pass rate over a window of calls is low enough to tell someone.

One rule is a document in a rules file (TOML or JSON, given by the `alert_rules_file` setting or to
`callqa replay --rules`) and an event on the compacted topic `callqa.alert-rules` (key = `name`). An
example in TOML:

    [[rules]]
    name = "agent latency"
    scope = "agent:*"          # all | agent:<id> | agent:* | cohort:<id> | cohort:*
    metric = "latency"         # a QA metric, conversation (the agent spoke), or weighted_score (cohort scopes)
    window_s = 900             # the calls that ended in the last 15 minutes of event time
    fire_below = 0.6           # breach: pass rate below 60 %
    clear_above = 0.8          # recovered: pass rate at or above 80 % (hysteresis)
    min_calls = 10             # fewer scored calls in the window: no verdict
    for_s = 120                # the breach must last 2 minutes of event time before firing
    severity = "critical"      # any label: info, warning, critical, page, ticket, ...
    long_window_s = 3600       # optional: the last hour must breach too

A JSON rules file holds the same documents as `{"rules": [...]}` or as a bare list.

Scopes: `all` is every call; `agent:<id>` the calls of one agent and `agent:*` each agent separately
(one alert per agent); `cohort:<id>` the calls in one cohort and `cohort:*` each cohort separately.
`weighted_score` is the cohort's own verdict on the call (its weighted score and pass mark), so it is
only defined for a cohort scope.

A document with `deleted: true` removes the rule (only `name` is needed); `enabled: false` keeps it
defined but evaluates nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct

from models.documents import (
    decode_document,
    decode_each_once,
    load_document_file,
    missing_field,
    split_validation_error,
)

WEIGHTED_SCORE = "weighted_score"
# A call "passes" conversation when its agent spoke (the result's `no_conversation` is false): a rule
# on it pages on dead calls, e.g. `fire_below = 0.95` for more than 5 % of calls with no conversation.
CONVERSATION = "conversation"
SCOPE_ALL = "all"
SCOPE_KINDS = ("agent", "cohort")
EVERY = "*"  # `agent:*`, `cohort:*`: one alert per agent or cohort

# Any label, as Prometheus and Alertmanager take any ("page" and "ticket" are common beside these):
# a word of letters, digits, `_`, `.` or `-`, so that it can be a label value and a routing key.
SEVERITY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
Severity = Annotated[str, Meta(pattern=SEVERITY_PATTERN)]
COMMON_SEVERITIES: tuple[str, ...] = ("info", "warning", "critical", "page", "ticket")
DEFAULT_SEVERITY = "warning"
# Fewer calls than this in the window say little about a pass rate; a rule may ask for more or fewer.
DEFAULT_MIN_CALLS = 10

Rate = Annotated[int, Meta(ge=0, le=1)] | Annotated[float, Meta(ge=0, le=1)]
# Durations are finite and at most a year (infinity, which TOML and Python's JSON reader accept, has no
# length in milliseconds).
MAX_SECONDS = 366 * 86_400
Seconds = Annotated[int, Meta(gt=0, le=MAX_SECONDS)] | Annotated[float, Meta(gt=0, le=MAX_SECONDS)]
NonNegativeSeconds = Annotated[int, Meta(ge=0, le=MAX_SECONDS)] | Annotated[float, Meta(ge=0, le=MAX_SECONDS)]


class AlertRuleError(ValueError):
    """A rule (or rules file) that cannot be accepted; the message names the rule, field and problem."""


class AlertRule(Struct, forbid_unknown_fields=True, kw_only=True):
    name: str
    scope: str = SCOPE_ALL
    # Required unless the document deletes the rule (checked by `validate_rule`).
    metric: str | None = None
    window_s: Seconds | None = None
    fire_below: Rate | None = None
    # None: the same as fire_below (no hysteresis band).
    clear_above: Rate | None = None
    min_calls: Annotated[int, Meta(ge=1)] = DEFAULT_MIN_CALLS
    for_s: NonNegativeSeconds = 0
    severity: Severity = DEFAULT_SEVERITY
    long_window_s: Seconds | None = None
    description: str = ""
    enabled: bool = True
    deleted: bool = False

    @property
    def fire_at(self) -> float:
        return float(self.fire_below or 0)

    @property
    def clear_at(self) -> float:
        return self.fire_at if self.clear_above is None else float(self.clear_above)

    @property
    def window_ms(self) -> int:
        return seconds_to_ms(self.window_s or 0)

    @property
    def long_window_ms(self) -> int | None:
        return None if self.long_window_s is None else seconds_to_ms(self.long_window_s)

    @property
    def for_ms(self) -> int:
        return seconds_to_ms(self.for_s)

    @property
    def active(self) -> bool:
        return self.enabled and not self.deleted


def seconds_to_ms(seconds: float) -> int:
    return round(seconds * 1000)


# ------------------------------------------------------------------------------------------ scopes


def scope_kind(scope: str) -> str:
    """`all`, `agent` or `cohort` (of a rule's scope or of one scope instance such as `agent:a1`)."""
    return scope.partition(":")[0]


def is_scope_template(scope: str) -> bool:
    return scope.endswith(":" + EVERY)


def scope_matches(rule_scope: str, instance: str) -> bool:
    """Does the scope instance `agent:a1` (or `cohort:x`, `all`) fall under the rule's scope?"""
    if is_scope_template(rule_scope):
        return scope_kind(instance) == scope_kind(rule_scope)
    return instance == rule_scope


# ---------------------------------------------------------------------------------------- decoding


def decode_rule(
    document: bytes | str | dict[str, Any] | AlertRule, known_metrics: Iterable[str], where: str = ""
) -> AlertRule:
    """Decode and validate one rule document (JSON or MessagePack bytes, a dict, or a rule).

    `known_metrics` are the QA metric names (the registry's); `where` says where the document came
    from in error messages (e.g. "rule #3"). Raises `AlertRuleError`.
    """
    if isinstance(document, AlertRule):
        rule = document
    else:
        data = decode_document(document, AlertRuleError, "alert rule")
        try:
            rule = msgspec.convert(data, AlertRule)
        except msgspec.ValidationError as exc:
            raise AlertRuleError(f"invalid alert {_subject(data, where)}: {_explain(exc)}") from None
    validate_rule(rule, known_metrics, where)
    return rule


def encode_rule(rule: AlertRule) -> bytes:
    """The JSON value written to `callqa.alert-rules` (key = the rule's name)."""
    return msgspec.json.encode(rule)


def load_rules(path: str | Path, known_metrics: Iterable[str]) -> list[AlertRule]:
    """The rules of a TOML (`[[rules]]`) or JSON (`{"rules": [...]}` or a list) file, validated.

    Names must be unique within the file. Raises `AlertRuleError` naming the file, rule and field.
    """
    known = list(known_metrics)
    return decode_each_once(
        path,
        load_document_file(path, "rules", AlertRuleError),
        lambda entry, number: decode_rule(entry, known, where=f"rule #{number}"),
        lambda rule: rule.name,
        lambda rule, number: f"invalid alert rule {rule.name!r} (rule #{number}): the name is used twice",
        AlertRuleError,
    )


def _subject(data: Any, where: str) -> str:
    name = data.get("name") if isinstance(data, dict) else None
    named = f"rule {name!r}" if isinstance(name, str) and name else "rule"
    return f"{named} ({where})" if where else named


def _explain(exc: msgspec.ValidationError) -> str:
    """msgspec's "Expected `float` <= 1 - at `$.fire_below`" as "`fire_below`: Expected …"."""
    problem, path = split_validation_error(exc)
    if path == "severity":
        problem += (
            f" (a severity is a word of up to 64 letters, digits, `_`, `.` or `-`, e.g. {', '.join(COMMON_SEVERITIES)})"
        )
    field = None if path else missing_field(problem)
    if field:
        return f"`{field}` is required"
    return f"`{path}`: {problem}" if path else problem


# -------------------------------------------------------------------------------------- validation


def validate_rule(rule: AlertRule, known_metrics: Iterable[str], where: str = "") -> None:
    """The checks a type cannot express: a known metric and scope, ordered thresholds and windows."""
    problems = _problems(rule, list(known_metrics))
    if problems:
        subject = f"rule {rule.name!r}" if rule.name.strip() else "rule"
        subject = f"{subject} ({where})" if where else subject
        raise AlertRuleError(f"invalid alert {subject}: " + "; ".join(problems))


def _problems(rule: AlertRule, known_metrics: list[str]) -> list[str]:
    if not rule.name.strip():
        return ["`name` must not be empty"]
    if rule.deleted:
        return []  # a delete needs nothing but the name
    problems: list[str] = []
    problems.extend(_scope_problems(rule.scope))
    if not rule.metric:
        problems.append("`metric` is required")
    elif rule.metric == WEIGHTED_SCORE:
        if scope_kind(rule.scope) != "cohort":
            problems.append(
                f"`metric`: {WEIGHTED_SCORE!r} is a cohort's verdict and needs a cohort scope (cohort:<id> or cohort:*)"
            )
    elif rule.metric not in known_metrics and rule.metric != CONVERSATION:
        problems.append(
            f"`metric`: unknown metric {rule.metric!r} "
            f"(known: {', '.join([*known_metrics, WEIGHTED_SCORE, CONVERSATION])})"
        )
    if rule.window_s is None:
        problems.append("`window_s` is required")
    if rule.fire_below is None:
        problems.append("`fire_below` is required")
    elif rule.fire_below == 0:
        problems.append("`fire_below` must be above 0 (a pass rate is never below 0)")
    elif rule.clear_above is not None and rule.clear_above < rule.fire_below:
        problems.append(f"`clear_above` ({rule.clear_above}) must be at least `fire_below` ({rule.fire_below})")
    if rule.window_s is not None and seconds_to_ms(rule.window_s) == 0:
        problems.append(f"`window_s` ({rule.window_s}) must be at least a millisecond (windows are counted in ms)")
    if (
        rule.long_window_s is not None
        and rule.window_s is not None
        and seconds_to_ms(rule.long_window_s) <= seconds_to_ms(rule.window_s)
    ):
        problems.append(
            f"`long_window_s` ({rule.long_window_s}) must be longer than `window_s` ({rule.window_s}), "
            "by a millisecond at least"
        )
    return problems


def _scope_problems(scope: str) -> list[str]:
    if scope == SCOPE_ALL:
        return []
    kind, colon, target = scope.partition(":")
    if not colon or kind not in SCOPE_KINDS or not target:
        return [f"`scope`: {scope!r} is not one of all, agent:<id>, agent:*, cohort:<id>, cohort:*"]
    if EVERY in target and target != EVERY:
        return [f"`scope`: {scope!r}: only `{kind}:*` (every {kind}) may use a wildcard"]
    return []
