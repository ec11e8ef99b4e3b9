"""The alert engine: published call results in, alert events out, in event time.

`observe(result)` counts the result in the windows (scorers/alerting/windows.py), then evaluates every
rule on every scope whose windows changed, plus every open episode (time alone can make a pending
episode fire). Scopes are evaluated in a fixed order (rule name, then scope), and nothing reads a
clock: the same results in the same order give the same alerts, byte for byte.

Rules can change while results flow (`set_rules`): an episode whose rule is removed, disabled or now
names another scope or metric is resolved; a rule whose thresholds changed keeps its episodes and is
re-evaluated at once, as is a new rule.

The live worker persists what it needs to restart where it stopped: the calls still kept
(`kept_calls`, changed calls via `take_changes`), the open episodes (`episodes_document`) and the
rules they were evaluated under (`state_document`); see `restore`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import msgspec

from models.alert_rules import AlertRule, scope_kind, scope_matches
from models.alerts import Alert, WindowReading
from scorers.alerting.calls import ScoredCall, scored_call
from scorers.alerting.episodes import Episode, dedupe_key, transitions, verdict
from scorers.alerting.windows import EventTimeWindows, Needs, WindowTotals
from scorers.watermarks import DEFAULT_MAX_LEAP_MS

SAMPLE_CALLS = 5


@dataclass(slots=True)
class AlertCounters:
    observed: int = 0
    counted: int = 0
    stale: int = 0  # too late for every window: a result alerting lost
    # The version already counted, read again (a redelivery after a restart or a take-over): harmless,
    # and kept apart from `stale` so that `stale` stays a signal that alerting lost input.
    repeated: int = 0
    # A version older than the one counted, read after it: results count in event time, and a judge's
    # answer, stamped just after the call's end, comes before an annotation made later (its version
    # holds the annotation already). Harmless too; counted as `repeated`, it read as restarts.
    superseded: int = 0
    unwatched: int = 0  # arrived while no rule was in force (neither counted nor stale)
    untimed: int = 0  # no event time at all
    alerts: int = 0


@dataclass(slots=True)
class StateChanges:
    """What changed in the engine's persistent state since the last `take_changes()`."""

    calls: dict[str, ScoredCall] = field(default_factory=dict)  # kept, new or replaced
    dropped: set[str] = field(default_factory=set)  # no longer kept
    episodes: bool = False  # the open episodes changed
    rules: bool = False  # the rules in force changed (`state_document`)
    time: bool = False  # the windows' event time or the leap they hold back moved (`time_document`)

    def __bool__(self) -> bool:
        return bool(self.calls or self.dropped or self.episodes or self.rules or self.time)


class AlertEngine:
    def __init__(self, rules: Iterable[AlertRule] = (), max_leap_ms: int = DEFAULT_MAX_LEAP_MS) -> None:
        self._rules: dict[str, AlertRule] = {}
        self._by_metric: dict[str, list[AlertRule]] = {}
        self._episodes: dict[tuple[str, str], Episode] = {}
        self._rule_changes = 0  # how many times the rule set changed: part of a rule change's dedupe key
        self.windows = EventTimeWindows(max_leap_ms=max_leap_ms)
        self.counters = AlertCounters()
        self._changes = StateChanges()
        self.set_rules(rules)

    # ------------------------------------------------------------------------------------ rules

    @property
    def rules(self) -> list[AlertRule]:
        return list(self._rules.values())

    def set_rules(self, rules: Iterable[AlertRule]) -> list[dict[str, Any]]:
        """Replace the rule set (inactive rules are left out); returns the alerts this causes."""
        new = {rule.name: rule for rule in sorted(rules, key=lambda r: r.name) if rule.active}
        changed = [rule for name, rule in new.items() if self._rules.get(name) != rule]
        if not changed and new.keys() == self._rules.keys():
            return []
        self._rule_changes += 1
        self._changes.rules = True
        self._rules = new
        self._by_metric = {}
        for rule in new.values():
            self._by_metric.setdefault(rule.metric or "", []).append(rule)
        # Episodes whose rule is gone are resolved first, with their windows as they stand: the new
        # rules may no longer keep those windows.
        alerts = self._close_orphaned_episodes()
        needs = window_needs(new.values())
        if needs != self.windows.needs:
            self._record_dropped(self.windows.configure(needs))
            self.windows.take_dirty()
        candidates = {(rule.name, scope) for rule in changed for scope in self._scopes_of(rule)}
        candidates.update(key for key in self._episodes if key[0] in {rule.name for rule in changed})
        alerts.extend(self._evaluate(candidates, cause=None))
        return alerts

    def _close_orphaned_episodes(self) -> list[dict[str, Any]]:
        alerts: list[dict[str, Any]] = []
        for key in sorted(self._episodes):
            episode = self._episodes[key]
            rule = self._rules.get(episode.rule.name)
            if rule is None:
                reason = "rule removed or disabled"
            elif rule.metric != episode.rule.metric or not scope_matches(rule.scope, episode.scope):
                reason = "rule changed its scope or metric"
            else:
                episode.rule = rule
                continue
            del self._episodes[key]
            self._changes.episodes = True
            alerts.append(self._alert(episode.rule, episode.scope, episode, "resolved", reason))
        self.counters.alerts += len(alerts)  # (as `_evaluate` counts its own)
        return alerts

    def _scopes_of(self, rule: AlertRule) -> list[str]:
        return [
            scope
            for scope in self.windows.scopes(rule.window_ms, rule.metric or "")
            if scope_matches(rule.scope, scope)
        ]

    # ---------------------------------------------------------------------------------- results

    def observe(self, result: Any) -> list[dict[str, Any]]:
        """Count one published result (a `CallResult`, its dict or JSON, or a compact document) and
        return the alert events it causes, in order."""
        call = self.read(result)
        return [] if call is None else self.count(call)

    def read(self, result: Any) -> ScoredCall | None:
        """The alerting view of one published result (None, counted as untimed, when it has no time)."""
        self.counters.observed += 1
        call = scored_call(result)
        if call is None:
            self.counters.untimed += 1
        return call

    def count(self, call: ScoredCall) -> list[dict[str, Any]]:
        """Count a result read with `read` and return the alert events it causes, in order."""
        time_before = (self.windows.watermark, self.windows.ahead)
        counted_version = self.windows.counted_version(call.call_id)
        taken, dropped = self.windows.put(call)
        if (self.windows.watermark, self.windows.ahead) != time_before:
            self._changes.time = True
        self._record_dropped(dropped)
        if not self._rules:
            # The windows still move with event time (a rule added later starts from there), but the
            # result counts for no rule: it used to read as `counted`, or as `stale` when behind the newest.
            self.counters.unwatched += 1
        elif taken:
            self.counters.counted += 1
        elif call.redelivered or call.version == counted_version:
            self.counters.repeated += 1
        elif counted_version is not None and call.version < counted_version:
            self.counters.superseded += 1
        else:
            self.counters.stale += 1
        if not taken:
            return []
        if call.call_id in self.windows.calls:  # (else left behind every window at once: not kept)
            self._changes.calls[call.call_id] = call
            self._changes.dropped.discard(call.call_id)
        candidates = set(self._episodes)
        for length, scope, metric in self.windows.take_dirty():
            for rule in self._by_metric.get(metric, ()):
                if length in (rule.window_ms, rule.long_window_ms) and scope_matches(rule.scope, scope):
                    candidates.add((rule.name, scope))
        return self._evaluate(candidates, cause=f"result {call.call_id} v{call.version}")

    def firing(self) -> list[dict[str, Any]]:
        """The firing events of the episodes firing now, in rule and scope order."""
        return [e.firing_alert for _, e in sorted(self._episodes.items()) if e.state == "firing" and e.firing_alert]

    def open_episodes(self) -> list[tuple[str, str, str]]:
        """(rule, severity, state) of each episode open now, pending or firing, in rule and scope order."""
        return [(e.rule.name, e.rule.severity, e.state) for _, e in sorted(self._episodes.items())]

    def reading(self, scope: str, metric: str, window_s: float) -> dict[str, Any] | None:
        """A window's figures now (None when no rule reads that window of that scope kind and metric)."""
        length = round(window_s * 1000)
        if (scope_kind(scope), metric) not in self.windows.needs.get(length, ()):
            return None
        return cast("dict[str, Any]", msgspec.to_builtins(self._reading(length, scope, metric)))

    # ------------------------------------------------------------------------------- evaluation

    def _evaluate(self, candidates: set[tuple[str, str]], cause: str | None) -> list[dict[str, Any]]:
        """`cause`: the result just counted, or None for a change of rules (each rule then names itself)."""
        now = self.windows.watermark
        if now is None:
            return []
        alerts: list[dict[str, Any]] = []
        for name, scope in sorted(candidates):
            rule = self._rules.get(name)
            if rule is None:
                continue
            metric = rule.metric or ""
            window = self.windows.totals(rule.window_ms, scope, metric)
            long_ms = rule.long_window_ms
            long_window = self.windows.totals(long_ms, scope, metric) if long_ms else None
            episode = self._episodes.get((name, scope))
            for state in transitions(rule, episode, verdict(rule, window, long_window), now):
                if state == "pending":
                    # A rule change names itself and its number: editing a rule back and forth at
                    # one watermark starts episodes that must not share a key.
                    started_by = cause if cause is not None else f"rule change {self._rule_changes}: {_rule_text(rule)}"
                    episode = Episode(
                        rule=rule,
                        scope=scope,
                        state="pending",
                        started_ms=now,
                        dedupe_key=dedupe_key(name, scope, metric, now, started_by),
                    )
                    self._episodes[(name, scope)] = episode
                elif state == "firing" and episode is not None:
                    episode.state = "firing"
                elif state == "resolved":
                    del self._episodes[(name, scope)]
                assert episode is not None
                alert = self._alert(rule, scope, episode, state, _reason(rule, state, window, long_window))
                if state == "firing":
                    episode.firing_alert = alert
                self._changes.episodes = True
                alerts.append(alert)
        self.counters.alerts += len(alerts)
        return alerts

    def _alert(self, rule: AlertRule, scope: str, episode: Episode, state: str, reason: str) -> dict[str, Any]:
        metric = rule.metric or ""
        window = self._reading(rule.window_ms, scope, metric)
        long_ms = rule.long_window_ms
        alert = Alert(
            rule=rule.name,
            scope=scope,
            metric=metric,
            state=state,  # type: ignore[arg-type]
            severity=rule.severity,
            pass_rate=window.pass_rate,
            passed=window.passed,
            total=window.total,
            average_score=window.average_score,
            window_s=window.window_s,
            window_start_ms=window.window_start_ms,
            window_end_ms=window.window_end_ms,
            fire_below=rule.fire_at,
            clear_above=rule.clear_at,
            min_calls=rule.min_calls,
            for_s=float(rule.for_s),
            long_window=self._reading(long_ms, scope, metric) if long_ms else None,
            sample_call_ids=self.windows.samples(rule.window_ms, scope, metric, SAMPLE_CALLS),
            episode_start_ms=episode.started_ms,
            event_ts_ms=self.windows.watermark if self.windows.watermark is not None else episode.started_ms,
            dedupe_key=episode.dedupe_key,
            reason=reason,
        )
        return cast("dict[str, Any]", msgspec.to_builtins(alert))

    def _reading(self, length_ms: int, scope: str, metric: str) -> WindowReading:
        totals = self.windows.totals(length_ms, scope, metric)
        start, end = self.windows.bounds(length_ms)
        return WindowReading(
            window_s=length_ms / 1000,
            window_start_ms=start,
            window_end_ms=end,
            total=totals.total,
            passed=totals.passed,
            pass_rate=totals.pass_rate,
            average_score=totals.average_score,
        )

    # ------------------------------------------------------------------------------ persistence

    def take_changes(self) -> StateChanges:
        changes, self._changes = self._changes, StateChanges()
        return changes

    def kept_calls(self) -> list[ScoredCall]:
        return list(self.windows.calls.values())

    def episodes_document(self) -> list[dict[str, Any]]:
        return [msgspec.to_builtins(episode) for _, episode in sorted(self._episodes.items())]

    def state_document(self) -> dict[str, Any]:
        """The rules in force and the count of rule changes: restored with them, and handed the
        current rules afterwards, an engine evaluates a change made meanwhile as this one would have."""
        return {
            "rules": [msgspec.to_builtins(rule) for rule in self._rules.values()],
            "rule_changes": self._rule_changes,
        }

    def time_document(self) -> dict[str, Any]:
        """The windows' event time and the leap they hold back. Kept as they are: rebuilt from the
        kept calls, they would assume the calls were counted in order of their time, which a result
        later than the lateness (counted where it arrives) or the very first result belies."""
        return {"watermark": self.windows.watermark, "ahead": self.windows.ahead}

    @staticmethod
    def rules_of_state(state: dict[str, Any]) -> list[AlertRule]:
        return msgspec.convert(state.get("rules", []), list[AlertRule])

    def restore(
        self,
        calls: Iterable[Any],
        episodes: Iterable[dict[str, Any]],
        state: dict[str, Any] | None = None,
        time: dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """Start again from persisted state: kept calls (`ScoredCall`s or their documents), the open
        episodes, `state_document()` (the engine should be built with `rules_of_state(state)`) and
        `time_document()` (None: rebuilt from the kept calls, as tables written before it was kept
        are). Returns the resolved events of episodes whose rule is gone meanwhile."""
        if state is not None:
            self._rule_changes = int(state.get("rule_changes", 0))
        kept = [c for c in (c if isinstance(c, ScoredCall) else scored_call(c) for c in calls) if c is not None]
        if time is None:
            self.windows.restore(kept)
        else:
            ahead = time.get("ahead")
            self.windows.restore(
                kept, (time.get("watermark"), None if ahead is None else (int(ahead[0]), str(ahead[1])))
            )
        self.windows.take_dirty()
        self._episodes = {}
        for document in episodes:
            episode = msgspec.convert(document, Episode)
            self._episodes[(episode.rule.name, episode.scope)] = episode
        self._changes = StateChanges(rules=True, time=True)  # (stored with the next changes, as restored)
        # Kept calls no rule reads any more are not restored: their stored copies go too.
        self._record_dropped(sorted({c.call_id for c in kept} - set(self.windows.calls)))
        return self._close_orphaned_episodes()

    def _record_dropped(self, call_ids: Iterable[str]) -> None:
        for call_id in call_ids:
            self._changes.dropped.add(call_id)
            self._changes.calls.pop(call_id, None)


def window_needs(rules: Iterable[AlertRule]) -> Needs:
    """The aggregates the rules read: per window length, the (scope kind, metric) pairs."""
    needs: dict[int, set[tuple[str, str]]] = {}
    for rule in rules:
        for length in (rule.window_ms, rule.long_window_ms):
            if length:
                needs.setdefault(length, set()).add((scope_kind(rule.scope), rule.metric or ""))
    return {length: frozenset(pairs) for length, pairs in sorted(needs.items())}


def _reason(rule: AlertRule, state: str, window: WindowTotals, long_window: WindowTotals | None) -> str:
    rate = f"pass rate {window.pass_rate:.3f} ({window.passed}/{window.total})"
    if state == "resolved":
        return f"{rate} at or above {rule.clear_at:g}"
    longer = ""
    if long_window is not None and long_window.pass_rate is not None:
        longer = f", long window {long_window.pass_rate:.3f} ({long_window.passed}/{long_window.total})"
    if state == "firing":
        return f"{rate} below {rule.fire_at:g}{longer} for at least {rule.for_s:g} s"
    return f"{rate} below {rule.fire_at:g}{longer}"


def _rule_text(rule: AlertRule) -> str:
    return "rule " + msgspec.json.encode(rule).decode()
