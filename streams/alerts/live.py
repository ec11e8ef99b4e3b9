"""Alerts in the live worker: results → one evaluating agent → `callqa.alerts` (and the webhook).

Exactly one place evaluates: the windows and episodes must see every result of the deployment, but
`callqa.results` is spread over several partitions and workers. So:

1. `alerts-relay` (an agent over `callqa.results`, consumed by the whole group) reduces each result
   to what alerting reads (`ScoredCall.to_document()`) and re-keys it onto `callqa.alerts-input`, a
   topic of ONE partition.
2. `evaluate-alerts` consumes `callqa.alerts-input`. With one partition, exactly one worker of the
   group owns it at any time, so that worker alone runs the `AlertEngine` and publishes the alert
   events on `callqa.alerts` (one partition too, key = `dedupe_key`, JSON), in the order they happened.
   If that worker dies, the group hands the partition to another worker, which restores the engine
   from the `alert-engine` table (one partition, changelog-backed: the calls still inside the
   longest window and the open episodes) and goes on. A redelivered result is a version the engine
   already counted, so it changes nothing and raises no alert twice.

The relays of several workers append to the input topic in no particular event-time order, so the
evaluating agent holds each result until the end times seen are the allowed lateness past it and
counts the held results in event-time order (scorers/alerting/ordering.py; held results are kept in
the table until counted, and counted anyway once the input has been quiet for the setting
`alert_quiet_release_s`, counted from the last result taken or from the evaluation's take-over).
`callqa replay --rules` feeds the engine through the same stage, so live and replay raise the same
alerts when results arrive less than the allowed lateness out of order.

Rules: the `alert_rules_file` setting (TOML or JSON), overridden by name by the documents on the
compacted topic `callqa.alert-rules` (key = rule name; `deleted: true` or a tombstone removes one).
Every worker reads that topic from the beginning, outside any group, so whichever worker evaluates
has the full rule set. A change is announced on the input topic (RULES_CHANGED), so the evaluating
agent applies it, publishes what it causes and keeps its state at once, not with the next result.

`GET /alerts` answers `{"firing": [...], "watermark_ms", "rules", "counters"}`: the firing events of
the open episodes as they were published, the rule names in force and the engine's counters;
`GET /alerts/rules` the rules in force whole, as a JSON rules file. Both are routed to the worker that
owns the evaluation (through the `alert-engine` table), so any worker of the deployment answers them
(503 until the evaluation is assigned).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import faust
import msgspec
from faust.exceptions import SameNode
from faust.web.exceptions import ServiceUnavailable

from models.alert_rules import AlertRuleError, decode_rule, load_rules
from scorers.alerting.calls import ScoredCall, scored_call
from scorers.alerting.engine import AlertEngine
from scorers.alerting.ordering import EventTimeOrder, count_due, key_of
from scorers.alerting.rulebook import RuleBook
from scorers.inactivity import DEFAULT_ALLOWED_LATENESS_MS
from scorers.registry import qa_metric_names
from scorers.watermarks import DEFAULT_MAX_LEAP_MS
from streams.alerts.durable_acks import DurableAcks
from streams.alerts.webhook import WebhookPoster, WebhookRelay
from streams.journal.table import journal_table
from streams.kafka.clients import ensure_topics, retrying
from streams.kafka.topic_reader import follow_topic
from streams.tuning import table_store_options

logger = logging.getLogger("callqa.alerts")
_json = msgspec.json.Encoder()

ENGINE_TABLE = "alert-engine"
EPISODES_KEY = b"episodes"
ENGINE_STATE_KEY = b"engine"
CALL_KEY_PREFIX = b"call:"
# A record of the input topic that carries no result: "the rules changed, evaluate them" (not JSON,
# so it can never be a result).
RULES_CHANGED = b"\x00rules changed"
# Another: "the input has been quiet: count what is held for event-time order" (scorers/alerting/ordering.py).
RELEASE_HELD = b"\x00release held"
HELD_PREFIX = b"held:"
HELD_LATEST_KEY = b"held-latest"
HELD_AHEAD_KEY = b"held-ahead"  # each source's leap held back: {source: [time, call_id]}
WINDOWS_TIME_KEY = b"windows-time"  # the windows' event time and leap held back (`time_document`)
# The fields a relayed result carries its results-topic partition and offset in.
SOURCE_FIELD = "source_partition"
SOURCE_OFFSET_FIELD = "source_offset"
# By results partition, the highest offset the evaluation has read: a result relayed again after a
# crash (the relay's own offsets were not committed) is known as such, `repeated`, even once it has
# left every window, where it would otherwise read as `stale`, the signal of a lost result.
READ_OFFSETS_KEY = b"read-offsets"


class _Source(msgspec.Struct):
    source_partition: int = 0
    source_offset: int | None = None  # (none in a result relayed before the field was)


_source = msgspec.json.Decoder(_Source)
# How long the evaluation waits, at its start, for the rules topic to be read to its end: restoring
# with only some of the rules would resolve the episodes and drop the kept calls of the others.
RULES_READ_WAIT_S = 30.0


@dataclass
class AlertsRuntime:
    """The evaluating side's state in one worker (tests and views reach it through `install_alerts`)."""

    rulebook: RuleBook
    engine: AlertEngine = field(init=False)
    restored: bool = False
    rules_revision: int = -1
    webhook: WebhookPoster | None = None  # (this worker's relay of `callqa.alerts` to the webhook)
    published: int = 0
    # Set once the rules topic has been read to its end (or given up on after RULES_READ_WAIT_S).
    rules_read: asyncio.Event = field(default_factory=asyncio.Event)
    # Set when the rules changed: the evaluating agent is then sent RULES_CHANGED, so that what the
    # change causes (an episode resolved with its rule gone) is published and kept at once, in the
    # agent's own context, rather than with the next result.
    rules_changed: asyncio.Event = field(default_factory=asyncio.Event)
    lateness_ms: int = DEFAULT_ALLOWED_LATENESS_MS
    sources: int = 1  # the partitions of the results topic
    max_leap_ms: int = DEFAULT_MAX_LEAP_MS  # of the windows' event time (scorers/watermarks.py)
    order: EventTimeOrder = field(init=False)
    # (monotonic) when the evaluating agent last took a result, or restored the evaluation: the quiet
    # input that releases the held results is measured from it.
    last_input: float = 0.0
    quiet_release_s: float = 2.0
    # (monotonic) when a release was last asked for and not read back yet: asked again only a whole
    # quiet spell later, should the request have been lost on its way.
    release_requested_at: float | None = None
    read_offsets: dict[int, int] = field(default_factory=dict)  # (see READ_OFFSETS_KEY)

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget the evaluation (the input partition went to another worker): restore it again if
        it comes back, from what that worker left in the table."""
        self.engine = AlertEngine(max_leap_ms=self.max_leap_ms)
        self.order = EventTimeOrder(self.lateness_ms, self.sources, self.max_leap_ms)
        self.restored = False
        self.rules_revision = -1
        self.release_requested_at = None
        self.read_offsets = {}

    def ensure_ready(self, table: Any) -> list[dict[str, Any]]:
        """Restore from the table once, and hand the engine the current rules when they changed.
        Returns the alerts this causes (episodes whose rule is gone)."""
        alerts: list[dict[str, Any]] = []
        if not self.restored:
            calls, episodes, state, held, latest, ahead, windows_time = [], [], None, [], None, {}, None
            for key, value in table.items():
                if key == EPISODES_KEY:
                    episodes = msgspec.json.decode(value)
                elif key == ENGINE_STATE_KEY:
                    state = msgspec.json.decode(value)
                elif key.startswith(CALL_KEY_PREFIX):
                    calls.append(msgspec.json.decode(value))
                elif key.startswith(HELD_PREFIX):
                    held.append(scored_call(value))
                elif key == HELD_LATEST_KEY:
                    latest = {int(source): ts for source, ts in msgspec.json.decode(value).items()}
                elif key == WINDOWS_TIME_KEY:
                    windows_time = msgspec.json.decode(value)
                elif key == HELD_AHEAD_KEY:
                    ahead = {
                        int(source): (int(ts), call_id) for source, (ts, call_id) in msgspec.json.decode(value).items()
                    }
                elif key == READ_OFFSETS_KEY:
                    self.read_offsets = {int(source): offset for source, offset in msgspec.json.decode(value).items()}
            self.order.restore([call for call in held if call is not None], latest or {}, ahead)
            # Restored under the rules it last evaluated with; the current ones are handed over
            # below, so a change made meanwhile is evaluated as an uninterrupted engine would.
            self.engine = AlertEngine(
                AlertEngine.rules_of_state(state) if state is not None else self.rulebook.rules(), self.max_leap_ms
            )
            self.rules_revision = -1 if state is not None else self.rulebook.revision
            alerts.extend(self.engine.restore(calls, episodes, state, windows_time))
            self.restored = True
            # A worker taking the evaluation over has taken no input yet: the quiet spell starts now,
            # not at its last result long ago (or never), which released the restored held results at
            # once, before the partitions handed over with it had delivered anything.
            self.last_input = time.monotonic()  # (no request can be on its way: `reset` cleared it)
            if calls or episodes:
                logger.info("alerts: restored %s calls and %s open episodes", len(calls), len(episodes))
        if self.rules_revision != self.rulebook.revision:
            self.rules_revision = self.rulebook.revision
            alerts.extend(self.engine.set_rules(self.rulebook.rules()))
        return alerts

    def quiet_long_enough(self, now: float) -> bool:
        """Whether the held results are to be counted without waiting for later ones: the evaluation
        is restored, holds something, and its input has been quiet for `quiet_release_s`."""
        return self.restored and len(self.order) > 0 and now - self.last_input >= self.quiet_release_s

    def should_ask_for_release(self, now: float) -> bool:
        """Whether to ask the evaluating agent to count what is held: the input is quiet, and no
        request is on its way (or the last one went unanswered for a whole quiet spell)."""
        asked = self.release_requested_at
        return self.quiet_long_enough(now) and (asked is None or now - asked >= self.quiet_release_s)

    def release_if_quiet(self, table: Any, now: float) -> list[dict[str, Any]]:
        """A release request read back: count what is held if the input is still quiet as this worker
        sees it. A request another worker sent before it died, or one sent before a result that came
        since, is read after a take-over or that result and counts nothing (the timer asks again)."""
        self.release_requested_at = None
        return self.release_held(table) if self.quiet_long_enough(now) else []

    def count_in_order(self, table: Any, value: bytes) -> list[dict[str, Any]]:
        """Hold one result for event-time order (kept in the table until counted) and count what that
        makes due; returns the alerts."""
        call = self.engine.read(value)
        if call is None:
            return []
        relayed = _source.decode(value)
        source, offset = relayed.source_partition, relayed.source_offset
        if offset is not None:
            if offset <= self.read_offsets.get(source, -1):
                call = replace(call, redelivered=True)
            else:
                self.read_offsets[source] = offset
                table[READ_OFFSETS_KEY] = _json.encode({str(s): o for s, o in sorted(self.read_offsets.items())})
        table[HELD_PREFIX + key_of(call).encode()] = _json.encode(call.to_document())
        alerts = self._count(table, self.order.add(call, source))
        table[HELD_LATEST_KEY] = _json.encode({str(s): ts for s, ts in sorted(self.order.latest_by_source.items())})
        self._keep_leaps(table)
        return alerts

    def release_held(self, table: Any) -> list[dict[str, Any]]:
        alerts = self._count(table, self.order.release_all())
        self._keep_leaps(table)
        return alerts

    def _keep_leaps(self, table: Any) -> None:
        leaps = {str(s): list(ahead) for s, ahead in sorted(self.order.ahead_by_source.items())}
        if leaps:
            table[HELD_AHEAD_KEY] = _json.encode(leaps)
        else:
            table.pop(HELD_AHEAD_KEY, None)

    def _count(self, table: Any, due: list[ScoredCall]) -> list[dict[str, Any]]:
        """Count the released results, and stop keeping each in the table."""
        return count_due(self.engine, due, lambda call: table.pop(HELD_PREFIX + key_of(call).encode(), None))

    def persist(self, table: Any) -> None:
        changes = self.engine.take_changes()
        if changes.episodes:
            table[EPISODES_KEY] = _json.encode(self.engine.episodes_document())
        if changes.rules:
            table[ENGINE_STATE_KEY] = _json.encode(self.engine.state_document())
        if changes.time:
            table[WINDOWS_TIME_KEY] = _json.encode(self.engine.time_document())
        for call_id, call in changes.calls.items():
            table[CALL_KEY_PREFIX + call_id.encode()] = _json.encode(call.to_document())
        for call_id in changes.dropped:
            table.pop(CALL_KEY_PREFIX + call_id.encode(), None)


def install_alerts(callqa: Any) -> AlertsRuntime:
    """Add the alert agents, tasks and view to a `CallqaApp` (streams/worker/app.py)."""
    app: faust.App = callqa.app
    settings = callqa.settings
    names = callqa.topics
    known_metrics = qa_metric_names()
    file_rules = load_rules(settings.alert_rules_file, known_metrics) if settings.alert_rules_file else []
    runtime = AlertsRuntime(
        RuleBook.from_file_rules(file_rules),
        lateness_ms=settings.allowed_lateness_ms,
        sources=settings.partitions,
        max_leap_ms=settings.max_watermark_leap_ms,
        quiet_release_s=settings.alert_quiet_release_s,
    )
    if settings.alert_webhook_url:
        runtime.webhook = WebhookPoster(settings.alert_webhook_url)

    # internal: Faust creates it (with its one partition) before subscribing, so no broker default
    # partition count can creep in through auto-creation.
    input_topic = app.topic(names.alerts_input, key_type=bytes, value_type=bytes, partitions=1, internal=True)
    alerts_topic = app.topic(names.alerts, key_type=bytes, value_type=bytes, partitions=1)
    # (A JournalTable: its changelog writes can be waited for before a message is acknowledged.)
    table = journal_table(
        app, ENGINE_TABLE, key_type=bytes, value_type=bytes, partitions=1, options=table_store_options()
    )
    _install_evaluation(callqa, runtime, input_topic, alerts_topic, table)
    _install_rule_reading(callqa, runtime, input_topic, known_metrics)
    if runtime.webhook is not None:
        _install_webhook(callqa, runtime.webhook)
    _install_alerts_page(app, runtime, table)
    return runtime


def _install_evaluation(callqa: Any, runtime: AlertsRuntime, input_topic: Any, alerts_topic: Any, table: Any) -> None:
    """Results relayed onto the one-partition input; the one agent that evaluates them, publishes the
    alerts and keeps its state in `table`; the timer that releases held results once quiet."""
    app: faust.App = callqa.app
    settings = callqa.settings
    names = callqa.topics

    @app.agent(callqa.results_topic, name="alerts-relay")
    async def relay_results(stream: faust.StreamT[Any]) -> None:
        async for event in stream.events():
            try:
                call = scored_call(event.value)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                logger.warning("alerts: skipped a result that is not a call result: %s", exc)
                continue
            if call is not None:  # (with the partition it came from: a source of the event-time order)
                document = {
                    **call.to_document(),
                    SOURCE_FIELD: event.message.partition,
                    SOURCE_OFFSET_FIELD: event.message.offset,
                }
                await input_topic.send(key=call.call_id.encode(), value=_json.encode(document))

    async def publish(alerts: list[dict[str, Any]]) -> list[Any]:
        sent = []
        for alert in alerts:
            sent.append(await alerts_topic.send(key=alert["dedupe_key"].encode(), value=_json.encode(alert)))
            runtime.published += 1
        return sent

    @app.agent(input_topic, name="evaluate-alerts", concurrency=1)
    async def evaluate_alerts(stream: faust.StreamT[Any]) -> None:
        await retrying(
            f"creating {names.alerts}",
            lambda: ensure_topics(settings, names.only(settings.partitions, names.alerts)),
            logger,
        )
        try:
            await asyncio.wait_for(runtime.rules_read.wait(), RULES_READ_WAIT_S)
        except TimeoutError:
            logger.warning(
                "alerts: %s not read within %s s; evaluating with the rules known so far",
                names.alert_rules,
                RULES_READ_WAIT_S,
            )
            runtime.rules_read.set()
        # Each message is acknowledged once its changes to the table and its alerts are delivered
        # (streams/alerts/durable_acks.py), not when the loop takes the next one.
        acks = DurableAcks(lambda event: event.ack())
        async for event in stream.noack().events():  # type: ignore[attr-defined]  # (Stream has it; StreamT does not)
            value = event.value
            alerts = runtime.ensure_ready(table)
            if value == RELEASE_HELD:
                alerts.extend(runtime.release_if_quiet(table, time.monotonic()))
            elif value != RULES_CHANGED:
                runtime.last_input = time.monotonic()
                alerts.extend(runtime.count_in_order(table, value))
            sent = await publish(alerts)
            runtime.persist(table)
            acks.add(event, [*sent, *table.take_changelog_sends()])

    @app.timer(min(1.0, settings.alert_quiet_release_s / 2))
    async def release_when_quiet() -> None:
        """Live, no end of input comes: once the input has been quiet long enough, what is held for
        event-time order is counted (only the evaluating worker holds anything)."""
        now = time.monotonic()
        if runtime.should_ask_for_release(now):
            runtime.release_requested_at = now
            await input_topic.send(key=b"release", value=RELEASE_HELD)

    @app.on_partitions_revoked.connect  # type: ignore[arg-type]  # (Faust passes `signal` in **kwargs)
    async def on_revoked(sender: Any, revoked: Any, **kwargs: Any) -> None:
        if any(tp.topic == input_topic.get_topic_name() for tp in revoked):
            runtime.reset()


def _install_rule_reading(callqa: Any, runtime: AlertsRuntime, input_topic: Any, known_metrics: list[str]) -> None:
    """The rules topic read into the rule book, and each change announced to the evaluating agent."""
    app: faust.App = callqa.app
    settings = callqa.settings
    names = callqa.topics

    @app.task
    async def announce_rule_changes() -> None:
        """Tell the evaluating worker, wherever it is, that the rules changed (and once at the start,
        so that it restores and evaluates the rules it finds without waiting for a result)."""
        await runtime.rules_read.wait()
        await retrying(
            f"creating {names.alerts_input}",
            lambda: ensure_topics(settings, names.only(settings.partitions, names.alerts_input)),
            logger,
        )
        while True:
            runtime.rules_changed.clear()
            await input_topic.send(key=b"rules", value=RULES_CHANGED)
            await runtime.rules_changed.wait()

    def apply_rule(key: bytes | None, value: bytes | None, offset: int) -> None:
        name = (key or b"").decode("utf-8", "replace")
        if not value:  # a tombstone
            runtime.rulebook.apply(name, None)
            runtime.rules_changed.set()
            return
        try:
            rule = decode_rule(value, known_metrics, where=f"{names.alert_rules} key {name!r}")
        except AlertRuleError as exc:
            logger.warning("alerts: ignored a rule document: %s", exc)
            return
        runtime.rulebook.apply(rule.name, rule)
        runtime.rules_changed.set()

    @app.task
    async def follow_rules() -> None:
        # (follow_topic creates the compacted topic when it is missing.) A lost connection must not end
        # the task: the topic is read again.
        await retrying(
            f"alerts: reading {names.alert_rules}",
            lambda: follow_topic(callqa, names.alert_rules, apply_rule, on_caught_up=runtime.rules_read.set),
            logger,
        )


def _install_webhook(callqa: Any, poster: WebhookPoster) -> None:
    """This worker's relay of `callqa.alerts` to the webhook (streams/alerts/webhook.py)."""
    app: faust.App = callqa.app
    settings = callqa.settings
    names = callqa.topics

    relay = WebhookRelay(settings, names.alerts, poster)

    @app.task
    async def deliver_webhooks() -> None:
        await retrying(
            f"creating {names.alerts}",
            lambda: ensure_topics(settings, names.only(settings.partitions, names.alerts)),
            logger,
        )
        await retrying("alerts: delivering to the webhook", relay.run, logger)


def _install_alerts_page(app: faust.App, runtime: AlertsRuntime, table: Any) -> None:
    """`GET /alerts` and `GET /alerts/rules`, answered by the worker that evaluates them: the rules in
    force are that worker's (each worker reads its own rules file), not whichever worker was asked."""

    async def by_the_evaluator(web: Any, request: Any, answer: Any) -> Any:
        try:  # the worker that owns the evaluation answers; another one passes the request on to it
            return await app.router.route_req(table.name, EPISODES_KEY, web, request)
        except SameNode:
            pass
        except (ServiceUnavailable, KeyError, TypeError):  # (what Faust raises while nothing is assigned)
            return web.error(503, "alert evaluation is not assigned to a worker yet")
        except Exception as exc:  # the owner named, but not reached (CALLQA_WEB_HOST)
            owner = app.router.key_store(table.name, EPISODES_KEY)
            return web.error(
                502,
                f"the worker evaluating alerts, {owner}, did not answer "
                f"({type(exc).__name__}: {exc}); it is reached by its CALLQA_WEB_HOST",
            )
        if not runtime.rules_read.is_set():
            return web.error(503, "the alert rules are still being read")
        if not runtime.restored:
            return web.error(503, "the alert evaluation is being restored")
        return answer()

    @app.page("/alerts")
    async def firing_alerts(web: Any, request: Any) -> Any:
        def answer() -> Any:
            # (Read only: what the rules in force cause is the evaluating agent's to publish and keep.)
            counters = {**asdict(runtime.engine.counters), "published": runtime.published, "held": len(runtime.order)}
            return web.json(
                {
                    "firing": runtime.engine.firing(),
                    "watermark_ms": runtime.engine.windows.watermark,
                    "rules": [rule.name for rule in runtime.engine.rules],
                    "counters": counters,
                }
            )

        return await by_the_evaluator(web, request, answer)

    @app.page("/alerts/rules")
    async def rules_in_force(web: Any, request: Any) -> Any:
        # A JSON rules file as `callqa replay --rules` reads it: what a faithful replay of the events
        # topic needs, the rules file and every rule published since merged (disabled ones evaluate
        # nothing and are left out).
        return await by_the_evaluator(
            web, request, lambda: web.json({"rules": [msgspec.to_builtins(rule) for rule in runtime.engine.rules]})
        )
