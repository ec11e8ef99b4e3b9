"""Knowledge base recall: how well the agent used the passages its knowledge base returned.

Heuristic (used when no LLM judge answered):
- A retrieval is one `kb.retrieval` event; its passages, joined in order, are the retrieval's passage
  text. Only the call's first `MAX_RETRIEVALS` retrievals (in arrival order) are considered.
- The passage's words are its distinct significant words (see `scorers.text`) and its fact-like
  figures (prices, times, percents, durations, numbers of 3+ digits), matched by value: "$45.00" in
  the passage is recalled by an agent who says "45 dollars". Its word count is their number capped at
  `MAX_PASSAGE_WORDS`: the cap keeps a long passage from needing dozens of its words repeated, while
  a word from anywhere in the passage counts.
- A retrieval is recalled when (its words the agent also said) ÷ (its word count) ≥
  `MIN_RECALLED_SHARE`. Words the agent says at any time of the call count, before the retrieval or
  after it. The matched words shown are capped at the word count, as the share is.
- A retrieval that returned nothing to use (no passages, or no significant word nor figure) is counted apart
  (`empty_retrievals`), not as a retrieval: the agent cannot be faulted for a lookup that came back
  empty, and empty lookups do not use up the `MAX_RETRIEVALS` considered. The specification divides by
  "all retrievals"; a lookup with no words cannot be recalled, so counting it would measure the
  knowledge base, not the agent.
- Value: recalled ÷ counted retrievals (0 to 1); score: value × 100. Not applicable without counted
  retrievals.

Incremental: the agent's significant words are one set; each retrieval's words not yet said wait in an
inverted index (word → retrievals), so that the first time the agent says a word, exactly the
retrievals waiting for it gain a match.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models.call_state import CallState
from models.events import Event, KbRetrieval, Turn
from models.results import MetricResult
from scorers.qa.base import QaMetric
from scorers.text import figures, reading, significant_words

MAX_RETRIEVALS = 50
MAX_PASSAGE_WORDS = 20
MIN_RECALLED_SHARE = 0.2
NOT_APPLICABLE = "No knowledge base retrievals in this call"


@dataclass(slots=True)
class Retrieval:
    query: str | None
    word_count: int
    matched: int = 0

    @property
    def share(self) -> float:
        return self.matched / self.word_count

    @property
    def recalled(self) -> bool:
        return self.share >= MIN_RECALLED_SHARE


@dataclass(slots=True)
class KbRecallAcc:
    retrievals: list[Retrieval] = field(default_factory=list)
    ignored_retrievals: int = 0  # beyond MAX_RETRIEVALS
    empty_retrievals: int = 0  # with no significant words: not counted
    agent_words: set[str] = field(default_factory=set)
    waiting: dict[str, list[int]] = field(default_factory=dict)  # word not yet said → retrievals


def _figure_words(text: str) -> list[str]:
    """The text's fact-like figures as words of their own, by value (a figure's canonical form
    holds no letter, so no significant word is one)."""
    return [FIGURE_MARK + fact.canonical for fact in figures(text).facts]


FIGURE_MARK = "#"


class KbRecall(QaMetric):
    name = "kb_recall"
    label = "Knowledge base recall"
    value_meaning = "Share of retrievals used (0 to 1)"
    default_threshold = 60
    judge_kind = "llm"
    handles = frozenset({"kb.retrieval", "turn"})

    def start(self) -> KbRecallAcc:
        return KbRecallAcc()

    def update(self, acc: KbRecallAcc, event: Event, call: CallState) -> None:
        if isinstance(event, Turn):
            if event.data.role == "agent":
                self._agent_said(acc, event.data.text)
        elif isinstance(event, KbRetrieval):
            self._retrieved(acc, event)

    @staticmethod
    def _agent_said(acc: KbRecallAcc, text: str) -> None:
        for word in (*reading(text).significant, *_figure_words(text)):
            if word in acc.agent_words:
                continue
            acc.agent_words.add(word)
            for index in acc.waiting.pop(word, ()):
                acc.retrievals[index].matched += 1

    @staticmethod
    def _retrieved(acc: KbRecallAcc, event: KbRetrieval) -> None:
        passages = "\n".join(event.data.passages)
        passage_words = {*significant_words(passages), *_figure_words(passages)}
        if not passage_words:
            acc.empty_retrievals += 1
            return
        if len(acc.retrievals) >= MAX_RETRIEVALS:
            acc.ignored_retrievals += 1
            return
        index = len(acc.retrievals)
        retrieval = Retrieval(event.data.query, min(len(passage_words), MAX_PASSAGE_WORDS))
        for word in passage_words:
            if word in acc.agent_words:
                retrieval.matched += 1
            else:
                acc.waiting.setdefault(word, []).append(index)
        acc.retrievals.append(retrieval)

    def finalize(self, acc: KbRecallAcc, call: CallState) -> MetricResult:
        if not acc.retrievals:
            # (The specification's reason; lookups that all came back empty are counted beside it.)
            empty = {"empty_retrievals": acc.empty_retrievals} if acc.empty_retrievals else {}
            return self.not_applicable(NOT_APPLICABLE, **empty)
        recalled = sum(1 for r in acc.retrievals if r.recalled)
        value = recalled / len(acc.retrievals)
        return self.scored(
            value,
            value * 100,
            retrievals=len(acc.retrievals),
            recalled=recalled,
            empty_retrievals=acc.empty_retrievals,
            ignored_retrievals=acc.ignored_retrievals,
            per_retrieval=[
                {"query": r.query, "matched_words": min(r.matched, r.word_count), "passage_words": r.word_count,
                 "recalled": r.recalled}
                for r in acc.retrievals
            ],
        )
