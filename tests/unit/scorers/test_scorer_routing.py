"""The fold's routing: an event reaches exactly the scorers that read it.

A scorer that declares `rtvi_messages` is skipped for every other RTVI message type, so the
declaration must cover everything its update() reads: fed any other message, with any payload, its
accumulator must stay exactly as it was.
"""

from __future__ import annotations

import copy
import dataclasses

import pytest

from models.call_state import CallState
from models.events import Rtvi
from scorers.fold import apply_event, new_call
from scorers.registry import default_registry
from tests.helpers.eventkit import event

REGISTRY = default_registry()

# Every RTVI message type the scorers know of, and one they do not.
MESSAGE_TYPES = [
    "metrics",
    "user-started-speaking",
    "user-stopped-speaking",
    "bot-started-speaking",
    "bot-stopped-speaking",
    "llm-function-call-in-progress",
    "llm-function-call-stopped",
    "server-message",
    "bot-llm-text",
]
# Payloads that would move one scorer or another if it read them.
PAYLOADS = [
    None,
    {"tokens": [{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}], "ttfb": [{"value": 0.4}]},
    {
        "tool_call_id": "t1",
        "function_name": "EndConversationTool",
        "arguments": "{}",
        "cancelled": True,
        "result": {"error": "failed at 12:30, $40"},
    },
    {"tool_call_id": "t2", "function_name": "transfer_call", "result": "price 99.5"},
    {"text": "<exit>bye</exit>"},
    {"text": '<final_response>{"a": 1}</final_response>'},
    "<exit>done</exit>",
]

ROUTED = [s for s in REGISTRY.scorers if "rtvi" in s.handles and s.rtvi_messages is not None]


def _rtvi(kind: str, side: str, data: object) -> Rtvi:
    return event("rtvi", {"side": side, "message": {"label": "rtvi-ai", "type": kind, "data": data}})


@pytest.mark.parametrize("scorer", ROUTED, ids=[s.name for s in ROUTED])
def test_a_scorer_ignores_the_rtvi_messages_it_does_not_declare(scorer):
    call = CallState(call_id="c1")
    acc = scorer.start()
    for kind in MESSAGE_TYPES:
        if kind in scorer.rtvi_messages:
            continue
        for side in ("agent", "user"):
            for data in PAYLOADS:
                before = copy.deepcopy(acc)
                scorer.update(acc, _rtvi(kind, side, data), call)
                assert acc == before, (kind, side, data)


def test_an_rtvi_message_reaches_only_the_scorers_that_read_its_type():
    names = [name for name, _ in REGISTRY.updates_for(_rtvi("metrics", "agent", None))]
    assert "token_usage" in names
    assert "handoff_latency" not in names and "hallucination" not in names
    names = [name for name, _ in REGISTRY.updates_for(_rtvi("bot-started-speaking", "agent", None))]
    assert "handoff_latency" in names and "token_usage" not in names


def test_an_unknown_rtvi_message_reaches_only_scorers_that_read_every_type():
    undeclared = {s.name for s in REGISTRY.scorers if "rtvi" in s.handles and s.rtvi_messages is None}
    assert {name for name, _ in REGISTRY.updates_for(_rtvi("bot-llm-text", "agent", None))} == undeclared


def test_other_events_reach_the_scorers_that_handle_their_type_in_registry_order():
    turn = event("turn", {"role": "user", "text": "hi"})
    expected = [s.name for s in REGISTRY.scorers if "turn" in s.handles]
    assert [name for name, _ in REGISTRY.updates_for(turn)] == expected


def test_the_fold_calls_exactly_the_updates_the_registry_routes_each_event_to():
    """The fold (scorers/fold.py) reads the routing tables inline, for speed: it must reach the very
    scorers `updates_for` names, in its order, for every kind of event."""
    called: list[str] = []

    def recording(updates):
        return tuple((name, lambda acc, ev, call, name=name: called.append(name)) for name, _ in updates)

    registry = dataclasses.replace(
        REGISTRY,
        routes={cls: recording(updates) for cls, updates in REGISTRY.routes.items()},
        rtvi_routes={kind: recording(updates) for kind, updates in REGISTRY.rtvi_routes.items()},
        rtvi_unlisted=recording(REGISTRY.rtvi_unlisted),
    )
    events = [
        event("call.started", {"agent_id": "a"}),
        event("turn", {"role": "agent", "text": "hi"}),
        event("kb.retrieval", {"query": "q", "passages": ["p"]}),
        event("tool.call", {"name": "f", "arguments": "{}", "result": {"ok": True}}),
        *(_rtvi(kind, "agent", None) for kind in MESSAGE_TYPES),
    ]
    reached = 0
    for ev in events:
        called.clear()
        apply_event(new_call("c1", registry), ev, registry)
        assert called == [name for name, _ in registry.updates_for(ev)], ev
        reached += len(called)
    assert reached > len(events)  # (the recorders were called: the check compared something)
