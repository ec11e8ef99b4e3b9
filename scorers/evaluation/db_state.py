"""DB-state signals: the canonical DB hash, `db_state_match` and `db_state_assertions`.

The hash (`models.db_hash.db_state_hash`) canonicalises a DB before hashing so that equal end states
hash equally (its module says how).

From `db.state` events (the latest per side wins; each names its `hash`, its `db`, or both):
- `db_state_expected_hash`, `db_state_actual_hash`, `db_state_match` — only when the scenario has an
  `expected_db_hash`. The actual hash is the agent side's `hash`, or the hash of its `db` when only the
  DB was sent; null when the agent side sent neither, which is a failed match, not "N/A".
- `db_state_diff` — a failed match whose scenario also sent its `expected_db`, and whose agent's
  latest state carried its DB: how the two differ (scorers/evaluation/db_diff.py). It is not a
  metrics.json key: the export writes it as the scenario's db_state_diff.json.
- `db_state_assertion_verdicts`, `db_state_assertion_pass_rate` — only when the scenario has
  `db_state_assertions`. Each assertion `{func_name, side ("agent"|"user"), assert_value, arguments?,
  message?}` runs a named predicate on that side's latest DB and passes when the predicate's answer
  `== assert_value`. No side (or another one), no DB for that side, a missing predicate or a predicate
  that raises gives `passed: false` with the reason in `error`, worded as the harness words it
  ("Unknown side None; …", "No predicate …", "Predicate raised: …"; a missing DB: "no agent DB
  available: …", naming the call's events). Verdicts are taken when a side's DB
  arrives, so a call keeps verdicts, never whole DBs, and `db.state` must follow `call.started`.

Predicates are pure functions `predicate(db: dict, **arguments) -> Any` kept in a `PredicateRegistry`,
either generic or scoped to a scenario domain (a domain's own predicate wins over a generic one of the
same name). `default_predicates()` builds a registry with the generic `field_equals`, `count` and
`exists`. To add your own, register it on a registry and hand that registry to the scorers:

    predicates = default_predicates()

    @predicates.register(domain="tau2_telecom")
    def assert_mobile_data_status(db: dict, expected_status: bool) -> bool:
        return db["device"]["mobile_data"] == expected_status

    registry = ScorerRegistry.build(signal_scorers(predicates=predicates), qa_metrics())
    engine = CallEngine(registry=registry)

(`scorers.registry.signal_scorers` passes `predicates` to `DbStateScorer`; `scorers.engine.CallEngine`
takes the registry.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from models.call_state import CallState
from models.db_hash import db_state_hash
from models.events import DbState, ScenarioSpec
from scorers.base import Scorer
from scorers.evaluation.db_diff import compute_db_diff

SIDES = ("agent", "user")
# Rides in the evaluation document beside judge_result; the export writes it as db_state_diff.json.
DB_STATE_DIFF_KEY = "db_state_diff"

Predicate = Callable[..., Any]


# ------------------------------------------------------------------------------------ predicates


class PredicateRegistry:
    """Named DB-state predicates, generic or scoped to one scenario domain."""

    def __init__(self) -> None:
        self._generic: dict[str, Predicate] = {}
        self._by_domain: dict[str, dict[str, Predicate]] = {}

    def register(
        self, predicate: Predicate | None = None, *, name: str | None = None, domain: str | None = None
    ) -> Predicate:
        """Add a predicate under `name` (default: the function's name). Usable as `register(fn)`,
        `@register` or `@register(name=..., domain=...)`. A name taken in the same scope is an error."""

        def add(fn: Predicate) -> Predicate:
            key = name or fn.__name__
            scope = self._by_domain.setdefault(domain, {}) if domain is not None else self._generic
            if key in scope:
                where = f"domain {domain!r}" if domain is not None else "the generic predicates"
                raise ValueError(f"a predicate named {key!r} is already registered in {where}")
            scope[key] = fn
            return fn

        return add(predicate) if predicate is not None else add

    def lookup(self, func_name: str, domain: str | None = None) -> Predicate | None:
        if domain is not None and func_name in self._by_domain.get(domain, {}):
            return self._by_domain[domain][func_name]
        return self._generic.get(func_name)

    def names(self, domain: str | None = None) -> list[str]:
        scoped = self._by_domain.get(domain, {}) if domain is not None else {}
        return sorted(set(self._generic) | set(scoped))


def value_at(db: Any, path: str) -> Any:
    """The value at a dotted path (`"users.u1.bookings.0"`: dict keys, or list indexes); raises
    KeyError or IndexError when a step is missing."""
    value = db
    for step in path.split("."):
        if isinstance(value, list):
            value = value[int(step)]
        elif isinstance(value, dict):
            value = value[step]
        else:
            raise KeyError(f"{step!r}: {type(value).__name__} at this point of path {path!r} has no fields")
    return value


def field_equals(db: dict[str, Any], path: str) -> Any:
    """The value at `path`; the assertion's `assert_value` is what it must equal."""
    return value_at(db, path)


def count(db: dict[str, Any], path: str) -> int:
    """How many items the list (or dict) at `path` holds."""
    value = value_at(db, path)
    if not isinstance(value, (list, dict)):
        raise TypeError(f"{path!r} holds a {type(value).__name__}, not a list or an object")
    return len(value)


def exists(db: dict[str, Any], path: str) -> bool:
    """Whether `path` leads somewhere (a present null counts)."""
    try:
        value_at(db, path)
    except (KeyError, IndexError, ValueError):
        return False
    return True


def default_predicates() -> PredicateRegistry:
    predicates = PredicateRegistry()
    for predicate in (field_equals, count, exists):
        predicates.register(predicate)
    return predicates


# -------------------------------------------------------------------------------------- verdicts


def assertion_side(assertion: Any) -> Any:
    """The side an assertion names; none named is None (the harness fails it: "Unknown side None")."""
    return assertion.get("side") if isinstance(assertion, dict) else None


def assertion_verdict(
    assertion: Any,
    db: dict[str, Any] | None,
    predicates: PredicateRegistry | None = None,
    domain: str | None = None,
    hash_only: bool = False,
) -> dict[str, Any]:
    """One assertion's verdict `{func_name, side, passed, expected, actual, message, error}` on the DB
    of its side (None: that side sent no DB; `hash_only`: its latest state had a hash but no DB).
    Never raises. Checked in the harness's order: the side, the DB, the predicate, then the
    predicate's own failure; worded as the harness words them but for the missing DB, whose cause
    differs here (a call's events, not the harness's bridge)."""
    spec = assertion if isinstance(assertion, dict) else {}
    func_name, side = spec.get("func_name"), assertion_side(assertion)
    verdict: dict[str, Any] = {
        "func_name": func_name,
        "side": side,
        "passed": False,
        "expected": spec.get("assert_value"),
        "actual": None,
        "message": spec.get("message"),
        "error": None,
    }
    arguments = spec.get("arguments") or {}
    predicate = predicates.lookup(func_name, domain) if predicates is not None and isinstance(func_name, str) else None
    if side not in SIDES:
        verdict["error"] = f"Unknown side {side!r}; expected 'user' or 'agent'."
    elif db is None:
        # (callqa's wording here: the harness's names its bridge; the sample's files carry this one)
        why = (
            f"the latest db.state of side {side!r} carried a hash but no db (the latest state of a side is the "
            f"one judged)"
            if hash_only
            else f"the call sent no db.state with a db for side {side!r}"
        )
        verdict["error"] = f"no {side} DB available: {why}"
    elif predicate is None:
        known = predicates.names(domain) if predicates is not None else []
        verdict["error"] = f"No predicate {func_name!r} registered under domain={domain!r}. Available: {known}."
    elif not isinstance(arguments, dict):
        verdict["error"] = f"Predicate raised: TypeError: arguments must be a mapping, not {type(arguments).__name__}"
    else:
        try:
            actual = predicate(db, **arguments)
        except Exception as exc:  # a predicate's failure is that assertion's verdict, never the call's
            verdict["error"] = f"Predicate raised: {type(exc).__name__}: {exc}"
        else:
            verdict["actual"] = actual
            verdict["passed"] = bool(actual == verdict["expected"])
    return verdict


# ---------------------------------------------------------------------------------------- scorer


@dataclass(slots=True)
class DbStateAcc:
    agent_hash: str | None = None
    # How the agent's latest DB differs from the scenario's expected DB (only when the scenario sends
    # that DB; None when the latest agent state had no DB). The diff is kept, never the DB.
    agent_diff: dict[str, Any] | None = None
    # One verdict per scenario assertion, in the scenario's order; None until its side sent a DB.
    verdicts: list[dict[str, Any] | None] = field(default_factory=list)


class DbStateScorer(Scorer):
    name = "db_state"
    handles = frozenset({"db.state"})

    def __init__(self, predicates: PredicateRegistry | None = None) -> None:
        self.predicates = predicates if predicates is not None else default_predicates()

    def start(self) -> DbStateAcc:
        return DbStateAcc()

    def update(self, acc: DbStateAcc, event: DbState, call: CallState) -> None:
        data = event.data
        if data.hash is None and data.db is None:
            return
        if data.side == "agent":
            acc.agent_hash = data.hash if data.hash is not None or data.db is None else db_state_hash(data.db)
            expected = call.scenario.expected_db if call.scenario is not None else None
            acc.agent_diff = (
                compute_db_diff(expected, data.db) if expected is not None and data.db is not None else None
            )
        assertions = (call.scenario.db_state_assertions if call.scenario is not None else None) or []
        if len(acc.verdicts) != len(assertions):
            acc.verdicts = [None] * len(assertions)
        domain = call.scenario.domain if call.scenario is not None else None
        for index, assertion in enumerate(assertions):
            if assertion_side(assertion) == data.side:
                acc.verdicts[index] = assertion_verdict(
                    assertion, data.db, self.predicates, domain, hash_only=data.db is None
                )


def db_state_fields(acc: DbStateAcc, scenario: ScenarioSpec | None) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if scenario is None:
        return fields
    if scenario.expected_db_hash is not None:
        fields["db_state_expected_hash"] = scenario.expected_db_hash
        fields["db_state_actual_hash"] = acc.agent_hash
        fields["db_state_match"] = acc.agent_hash == scenario.expected_db_hash  # no agent hash: False
        if not fields["db_state_match"] and acc.agent_diff is not None:
            fields[DB_STATE_DIFF_KEY] = acc.agent_diff
    if scenario.db_state_assertions:
        verdicts = []
        for index, assertion in enumerate(scenario.db_state_assertions):
            taken = acc.verdicts[index] if index < len(acc.verdicts) else None
            verdicts.append(dict(taken) if taken is not None else assertion_verdict(assertion, None))
        fields["db_state_assertion_verdicts"] = verdicts
        fields["db_state_assertion_pass_rate"] = sum(1 for v in verdicts if v["passed"]) / len(verdicts)
    return fields
