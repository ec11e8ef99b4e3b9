"""`is_action_match`: the agent's predicted actions against the scenario's reference answer.

Predicted actions are the agent's `<final_response>…</final_response>` server messages, in order
(each one's JSON, or `{"message": text}` when it is not JSON) — the harness's prediction file.

Matching (the harness's deterministic comparator):
- a single `<final_response>` whose JSON is a list is the whole list of predicted actions (an agent
  may write its actions one response each, or all in one);
- a one-element list holding a dict is unwrapped to that dict, then a lone dict is wrapped in a list;
- with one reference item and several predictions, only the last prediction is compared;
- with `disallow_extra_items`, the two lists must have the same length;
- every reference item must match a distinct prediction item, in any order, paired first-fit as the
  harness pairs them (each reference takes the first unused prediction it matches, so a valid
  pairing can be missed); with the scenario's `optimal_action_pairing` (off by default) a pairing is
  found whenever one exists; extra predictions are allowed otherwise;
- a dict matches when every reference key is present and its value matches (extra predicted keys are
  fine); a nested list matches like the top level, extras allowed;
- leaves that both parse as floats compare as `numpy.isclose` compares them (`numbers_close`); other
  leaves compare as strings (`scorers/evaluation/action_text.py`): lowercased under
  `ignore_capitalization`, NeMo's punctuation removed under `ignore_punctuation`, NeMo's `clean_label`
  under `clean_text` (which keeps "-": "a-b" does not match "ab").

The verdict is `false` when nothing was predicted and "N/A" when the scenario has no reference answer
(or the call has no scenario).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from models.call_state import CallState
from models.events import Rtvi, ScenarioSpec
from models.scenario import NOT_APPLICABLE
from scorers.base import Scorer
from scorers.evaluation.action_text import comparable_text
from scorers.evaluation.server_messages import SERVER_MESSAGE, final_response_payload, server_message_text


@dataclass(slots=True)
class PredictedActionsAcc:
    predictions: list[Any] = field(default_factory=list)


def parse_final_response(payload: str) -> Any:
    try:
        return json.loads(payload)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return {"message": payload}


class PredictedActions(Scorer):
    name = "predicted_actions"
    handles = frozenset({"rtvi"})
    rtvi_messages = frozenset({SERVER_MESSAGE})

    def start(self) -> PredictedActionsAcc:
        return PredictedActionsAcc()

    def update(self, acc: PredictedActionsAcc, event: Rtvi, call: CallState) -> None:
        if event.data.side != "agent":
            return
        text = server_message_text(event)
        payload = final_response_payload(text) if text is not None else None
        if payload is not None:
            acc.predictions.append(parse_final_response(payload))


# ------------------------------------------------------------------------------------- matching


@dataclass(frozen=True, slots=True)
class MatchOptions:
    ignore_capitalization: bool = False
    ignore_punctuation: bool = False
    clean_text: bool = False
    disallow_extra_items: bool = False
    optimal_pairing: bool = False  # (callqa's: the harness pairs first-fit)


def _as_float(value: Any) -> float | None:
    """The leaf as a number, or None. NaN is not one: `float("Nan")` reads a name as NaN, which equals
    nothing, so the name "Nan" would not match itself; such leaves compare as text."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if math.isnan(number) else number


def _normal_text(value: Any, options: MatchOptions) -> str:
    return comparable_text(
        str(value),
        ignore_capitalization=options.ignore_capitalization,
        ignore_punctuation=options.ignore_punctuation,
        clean_text=options.clean_text,
    )


# numpy.isclose's default tolerances.
RELATIVE_TOLERANCE = 1e-05
ABSOLUTE_TOLERANCE = 1e-08


def numbers_close(a: float, b: float) -> bool:
    """`numpy.isclose(a, b)` for two floats, written out (the same float arithmetic, in the same order):
    importing numpy for it cost 0.15 s of every process's start."""
    return (abs(a - b) <= ABSOLUTE_TOLERANCE + RELATIVE_TOLERANCE * abs(b) and math.isfinite(b)) or a == b


def leaf_matches(reference: Any, prediction: Any, options: MatchOptions) -> bool:
    ref_number, pred_number = _as_float(reference), _as_float(prediction)
    if ref_number is not None and pred_number is not None:
        return numbers_close(ref_number, pred_number)
    return _normal_text(reference, options) == _normal_text(prediction, options)


def item_matches(reference: Any, prediction: Any, options: MatchOptions) -> bool:
    if isinstance(reference, dict):
        return isinstance(prediction, dict) and all(
            key in prediction and item_matches(value, prediction[key], options) for key, value in reference.items()
        )
    if isinstance(reference, list):
        return isinstance(prediction, list) and pair_items(
            reference, prediction, lambda r, p: item_matches(r, p, options), options.optimal_pairing
        )
    return leaf_matches(reference, prediction, options)


def pair_items(
    references: list[Any], predictions: list[Any], matches: Callable[[Any, Any], bool], optimal: bool
) -> bool:
    if optimal:
        return each_matches_a_distinct_item(references, predictions, matches)
    return first_fit_pairing(references, predictions, matches)


def first_fit_pairing(references: list[Any], predictions: list[Any], matches: Callable[[Any, Any], bool]) -> bool:
    """The harness's pairing: each reference, in order, takes the first unused prediction it matches."""
    used: set[int] = set()
    for reference in references:
        found = next(
            (j for j, prediction in enumerate(predictions) if j not in used and matches(reference, prediction)), None
        )
        if found is None:
            return False
        used.add(found)
    return True


def each_matches_a_distinct_item(
    references: list[Any], predictions: list[Any], matches: Callable[[Any, Any], bool]
) -> bool:
    """Whether every reference can be paired with its own matching prediction (bipartite matching by
    augmenting paths; the lists are a handful of actions, so the quadratic search is cheap)."""
    candidates = [
        [j for j, prediction in enumerate(predictions) if matches(reference, prediction)] for reference in references
    ]
    holder: dict[int, int] = {}  # prediction index -> the reference it is paired with

    def pair(i: int, visited: set[int]) -> bool:
        for j in candidates[i]:
            if j in visited:
                continue
            visited.add(j)
            if j not in holder or pair(holder[j], visited):
                holder[j] = i
                return True
        return False

    return all(pair(i, set()) for i in range(len(references)))


def _unwrap_single(payload: Any) -> Any:
    if isinstance(payload, list) and len(payload) == 1 and isinstance(payload[0], dict):
        return payload[0]
    return payload


def _as_list(payload: Any) -> list[Any]:
    return payload if isinstance(payload, list) else [payload]


def is_action_match(reference: Any, predictions: list[Any], options: MatchOptions = MatchOptions()) -> bool:
    """Whether the predicted actions satisfy the reference answer (see the module's rules)."""
    if len(predictions) == 1 and isinstance(predictions[0], list):
        # One <final_response> holding the whole action list: that list is the prediction file.
        predictions = predictions[0]
    if not predictions:
        return False
    references = _as_list(_unwrap_single(reference))
    predicted = _as_list(_unwrap_single(predictions))
    if len(references) == 1 and len(predicted) > 1:
        predicted = predicted[-1:]
    if options.disallow_extra_items and len(references) != len(predicted):
        return False
    return pair_items(references, predicted, lambda r, p: item_matches(r, p, options), options.optimal_pairing)


def match_options(scenario: ScenarioSpec) -> MatchOptions:
    return MatchOptions(
        ignore_capitalization=scenario.ignore_capitalization,
        ignore_punctuation=scenario.ignore_punctuation,
        clean_text=scenario.clean_text,
        disallow_extra_items=scenario.disallow_extra_items,
        optimal_pairing=scenario.optimal_action_pairing,
    )


def action_match_value(acc: PredictedActionsAcc, scenario: ScenarioSpec | None) -> bool | Literal["N/A"]:
    # An empty reference writes no reference file in the harness, so it is "N/A" like a missing one.
    if scenario is None or not scenario.reference_answer:
        return NOT_APPLICABLE
    return is_action_match(scenario.reference_answer, acc.predictions, match_options(scenario))
