"""Whether a call had a conversation at all: the agent said something.

A call whose agent never spoke (a bot that crashed before its first answer, a pipeline whose TTS never
produced audio, a call swept with no turns) has nothing for most metrics to measure. Scored as usual,
the metrics that count problems (hallucination's issues, overlapping speech's overlaps) found none and
passed it, so a dead bot looked healthy. Instead such a call carries `no_conversation: true` in its
result, which overviews, run summaries and alert rules count, and those two metrics are not applicable
with naturalness's reason (the seed's for "nothing the agent said"), so they pass nothing.

"Spoke": an agent turn with at least one word, as naturalness counts words (a turn of punctuation or
blanks alone is no speech). A discarded attempt's turns are gone with it (`attempt.discarded`).
"""

from __future__ import annotations

from models.call_state import CallState
from scorers.qa.naturalness import NOT_APPLICABLE as AGENT_DID_NOT_SPEAK
from scorers.qa.naturalness import word_count

__all__ = ["AGENT_DID_NOT_SPEAK", "agent_spoke"]


def agent_spoke(call: CallState) -> bool:
    return any(turn.role == "agent" and word_count(turn.text) > 0 for turn in call.turns)
