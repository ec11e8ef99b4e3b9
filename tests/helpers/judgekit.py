"""A judged call for the judge's tests: its events, the fake server's answers, and settings."""

from __future__ import annotations

from typing import Any

from streams.config import Settings
from tests.helpers.eventkit import T0, event

API_KEY = "sk-test-not-a-real-key"
ASSERTIONS = ["The agent greeted the caller.", "The agent stated the price.", "The agent placed the order."]

# The QA judge's answer the fake server gives: 2 major + 1 minor issue → 100 − 60 − 10 = 30.
QA_ANSWER = {
    "hallucination": {
        "issues": [
            {"type": "fabrication", "severity": "major", "text": "Delivery is free today."},
            {"type": "contradiction", "severity": "major", "text": "We do not deliver."},
            {"type": "confusion", "severity": "minor", "text": "Sorry, what?"},
        ]
    },
    "kb_recall": {"score": 64.5, "reason": "Used the price passage."},
    "naturalness": {"score": 55, "reason": "Stiff."},
    "tool_call_accuracy": {"score": 90, "reason": "Right tool, right time."},
    "transition_accuracy": {"score": 75, "reason": "One odd jump."},
    "criteria": [{"index": 1, "passed": True, "reason": "The order was placed."}],
}
EVALUATION_ANSWER = {
    "score": 0.8,
    "reason": 'The agent placed the order: "one large pizza".',
    "nl_assertion_verdicts": [
        {"index": 1, "passed": True, "reason": '"Hello Ann"'},
        {"index": 2, "passed": True, "reason": '"a large is $12"'},
        {"index": 3, "passed": False, "reason": "No order tool result."},
    ],
}


def settings(base_url: str, **overrides: Any) -> Settings:
    options = {
        "openai_api_key": API_KEY,
        "openai_base_url": base_url,
        "judge_model": "judge-test",
        "judge_timeout_s": 2.0,
        "judge_retries": 0,
        "judge_backoff_s": 0.01,
        **overrides,
    }
    return Settings(**options)


def judged_call(
    call_id: str = "c1",
    *,
    scenario: dict[str, Any] | None = None,
    agent_text: str = "Hello Ann, a large is $12.",
    user_text: str = "Hi, how much is a large pizza?",
    start: int = T0,
) -> list:
    """A call with every kind of material the judge is shown. Heuristics: the agent's two turns have
    6 and 6 words (naturalness value 6.0); one good tool call; one transition; one retrieval."""
    scenario = (
        {"name": f"pizza__{call_id}", "nl_assertions": ASSERTIONS, "judge_threshold": 0.7}
        if scenario is None
        else scenario
    )
    return [
        event(
            "call.started",
            {
                "agent_id": "pizza-bot",
                "agent_config": {"prompt": "You sell pizza. A large is $12."},
                "variables": {"caller": "Ann"},
                "scenario": scenario,
            },
            call_id=call_id,
            ts_ms=start,
        ),
        event("turn", {"role": "user", "text": user_text}, call_id=call_id, ts_ms=start + 1_000),
        event(
            "kb.retrieval",
            {"query": "price", "passages": ["A large pizza costs $12."]},
            call_id=call_id,
            ts_ms=start + 1_500,
        ),
        event("node.transition", {"from": "greet", "to": "order"}, call_id=call_id, ts_ms=start + 1_600),
        event("turn", {"role": "agent", "text": agent_text}, call_id=call_id, ts_ms=start + 2_000),
        event(
            "tool.call",
            {"name": "place_order", "arguments": '{"size": "large"}', "tool_call_id": "t1", "result": {"order_id": 7}},
            call_id=call_id,
            ts_ms=start + 3_000,
        ),
        event(
            "turn", {"role": "agent", "text": "Your order is placed, thank you."}, call_id=call_id, ts_ms=start + 4_000
        ),
        event("call.ended", {"stop_reason": "[EXIT]"}, call_id=call_id, ts_ms=start + 5_000),
    ]
