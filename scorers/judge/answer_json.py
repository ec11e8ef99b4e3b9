"""The JSON object in a judge's answer, found as the harness's LLM judge finds it.

OpenAI-compatible servers (vLLM, Ollama) often wrap the requested JSON in a Markdown code fence or
write a sentence around it. In order: the whole answer as JSON; else the first ```json fenced object;
else the first flat object holding a numeric `"score"`. Anything else is no answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

FENCED_OBJECT = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
FLAT_SCORED_OBJECT = re.compile(r'\{[^{}]*"score"\s*:\s*[\d.]+[^{}]*\}')


def extract_json(content: str, loads: Callable[[str], Any] = json.loads) -> Any:
    """The answer's JSON value (see the module's order); raises ValueError when none is found."""
    try:
        return loads(content)
    except json.JSONDecodeError:  # (only that: a NaN refused by `loads` is not searched past)
        pass
    for pattern, group in ((FENCED_OBJECT, 1), (FLAT_SCORED_OBJECT, 0)):
        match = pattern.search(content)
        if match:
            # (a fenced block that is not JSON is an error, as in the harness: no further search)
            return loads(match.group(group))
    raise ValueError("no JSON object found in the answer")
