"""Knowledge base recall: how well the agent used the passages its knowledge base returned.

Heuristic (used when no LLM judge answered):
- A retrieval is one `kb.retrieval` event; its passages, joined in order, are the retrieval's passage
  text. Only the call's first `MAX_RETRIEVALS` retrievals (in arrival order) are considered.
- The passage's words are its distinct significant words (see `scorers.text`); its word count is
  their number capped at `MAX_PASSAGE_WORDS`: the cap keeps a long passage from needing dozens of
  its words repeated, while a word from anywhere in the passage counts.
- Its fact-like figures (prices, times, percents, durations, numbers of 3+ digits) are evidence
  too: each one the agent says, matched by value as hallucination matches figures ("$45.00" by "45
  dollars", "4:30" by "4:30 PM"), counts as a word said. They add nothing to the word count, so an
  agent that speaks its numbers as words ("forty-five") is not marked down for them, except that a
  passage of figures alone counts as one word: a lookup that returned only a price is a retrieval.
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

Incremental: the agent's significant words are one set, and the keys of its figures another; each
retrieval's words and figures not yet said wait in inverted indexes (word → retrievals, figure key →
the retrievals' figures), so that the first time the agent says a word or a figure, exactly the
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
    figures_said: set[int] | None = None  # which of its figures the agent said (a figure has several keys)

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
    agent_figures: set[str] = field(default_factory=set)  # the keys of every figure the agent said
    # A figure key not yet said → (retrieval, the figure's place in it) of the figures it would match.
    waiting_figures: dict[str, list[tuple[int, int]]] = field(default_factory=dict)


def _figure_said(retrieval: Retrieval, figure: int) -> None:
    """The agent said the retrieval's `figure` (by one of its keys): a match, once."""
    said = retrieval.figures_said
    if said is None:
        said = retrieval.figures_said = set()
    if figure not in said:
        said.add(figure)
        retrieval.matched += 1


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
        for word in reading(text).significant:
            if word in acc.agent_words:
                continue
            acc.agent_words.add(word)
            for index in acc.waiting.pop(word, ()):
                acc.retrievals[index].matched += 1
        for key in figures(text).keys:
            if key in acc.agent_figures:
                continue
            acc.agent_figures.add(key)
            for index, figure in acc.waiting_figures.pop(key, ()):
                _figure_said(acc.retrievals[index], figure)

    @staticmethod
    def _retrieved(acc: KbRecallAcc, event: KbRetrieval) -> None:
        passages = "\n".join(event.data.passages)
        facts = figures(passages).facts
        # (A figure written as one word, "5pm", is counted as the figure alone, not as a word too.)
        passage_words = set(significant_words(passages)).difference(fact.said.lower() for fact in facts)
        if not passage_words and not facts:
            acc.empty_retrievals += 1
            return
        if len(acc.retrievals) >= MAX_RETRIEVALS:
            acc.ignored_retrievals += 1
            return
        index = len(acc.retrievals)
        retrieval = Retrieval(event.data.query, min(len(passage_words), MAX_PASSAGE_WORDS) or 1)
        for word in passage_words:
            if word in acc.agent_words:
                retrieval.matched += 1
            else:
                acc.waiting.setdefault(word, []).append(index)
        for figure, fact in enumerate(facts):
            if any(key in acc.agent_figures for key in fact.keys):
                _figure_said(retrieval, figure)
            else:
                for key in fact.keys:
                    acc.waiting_figures.setdefault(key, []).append((index, figure))
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
                {
                    "query": r.query,
                    "matched_words": min(r.matched, r.word_count),
                    "passage_words": r.word_count,
                    "recalled": r.recalled,
                }
                for r in acc.retrievals
            ],
        )
