"""The evaluation harness's scenario model: who talks, what each side must do, how the call is scored.

A `Scenario` describes one simulated call: the personas, tasks, actions and resources of the agent
under test and of the simulated user (rendered into their system prompts), and the scoring inputs —
reference answer and match options, expected DB, DB-state and natural-language assertions, the
`success_signals` whitelist. `Scenario.to_call_started()` turns it into the `call.started` data a
harness publishes, so that callqa scores the call against it.

Declare scenarios by constructing `Scenario(...)`, or by subclassing for a domain's shared parts: a
subclass sets them as class attributes (`agent_persona = Persona(...)`, `domain = "restaurant"`), as
the harness's scenario classes do, or as new field defaults under `@dataclass(kw_only=True)`. Each
instance gets its own copy of a class attribute's value. A scenario that the wire would refuse (an
unknown end policy, a negative turn floor, a judge threshold outside 0 to 1) is refused when it is
made, and again when it is turned into `call.started`, with a ValueError naming the field.

`SuccessSignal` and `composite_is_successful` are the one definition of the composite verdict: the
evaluation document (scorers/evaluation/success.py) uses them too.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Final, Literal, TypeVar

import msgspec

from models.db_hash import db_state_hash
from models.events import DEFAULT_MIN_AGENT_TURNS, ScenarioSpec

NOT_APPLICABLE: Final = "N/A"
SIDES = ("user", "agent")
SCENARIO_FILE = "scenario.json"  # what `Scenario.save` writes, beside the reference answer


class SuccessSignal(StrEnum):
    """Per-scenario scoring signals that may gate `is_successful`; the values are the JSON keys of
    `success_breakdown` (members are string-equal to them)."""

    ACTION_MATCH = "is_action_match"
    DB_STATE_MATCH = "db_state_match"
    DB_STATE_ASSERTION = "db_state_assertion"
    NL_ASSERTION = "nl_assertion"
    JUDGE_PASSED = "judge_passed"
    CLEAN_EXIT = "clean_exit"


def as_success_signal(name: SuccessSignal | str) -> SuccessSignal:
    """The member named by `name`; ValueError when there is none."""
    try:
        return SuccessSignal(name)
    except ValueError:
        known = ", ".join(s.value for s in SuccessSignal)
        raise ValueError(f"unknown success signal {name!r}; expected one of: {known}") from None


def parse_success_signals(names: Iterable[SuccessSignal | str] | None) -> tuple[SuccessSignal, ...]:
    """A whitelist as members, in the given order without repeats; None means every signal.
    Raises ValueError on a name that is no SuccessSignal."""
    if names is None:
        return tuple(SuccessSignal)
    if isinstance(names, str):  # (a lone name is a sequence too: of its letters, each "unknown")
        raise ValueError(f"success_signals must be a list of signal names, not one string: [{names!r}]")
    return tuple(dict.fromkeys(as_success_signal(name) for name in names))


def composite_is_successful(
    whitelist: Iterable[SuccessSignal], signals: Mapping[SuccessSignal, bool | None]
) -> bool | Literal["N/A"]:
    """Strict AND over the whitelisted signals that have a verdict; "N/A" when none has."""
    applicable = [signals[s] for s in whitelist if signals.get(s) is not None]
    if not applicable:
        return NOT_APPLICABLE
    return all(applicable)


# ---------------------------------------------------------------------------------- prompt parts

SPOKEN_STYLE = (
    "Stay in your role and work towards your task using the information below. Your words are spoken "
    "aloud: keep replies short and conversational, in plain sentences with ordinary punctuation, "
    "numbers written as words, and no special characters or emojis."
)


@dataclass
class Persona:
    """Who a side is. `behavior_config` and `voice_config` are carried for pipeline and TTS layers
    and for slicing metrics; they are not rendered into the prompt."""

    role: str
    name: str | None = None
    background: str | None = None
    personality: str | None = None
    language: str | None = None
    accent: str | None = None
    behavior_config: dict[str, Any] | None = None
    voice_config: dict[str, Any] | None = None

    def to_prompt_section(self) -> str:
        # The name and role make one sentence, as the harness's scenario classes render them.
        lines = [f"You are a {self.role} named {self.name}." if self.name else f"You are a {self.role}."]
        if self.background:
            lines.append(self.background)
        if self.personality:
            lines.append(self.personality)
        # One sentence for both, as the harness says it ("You speak English with a Canadian accent.").
        if self.language and self.accent:
            lines.append(f"You speak {self.language} with a {self.accent} accent.")
        elif self.language:
            lines.append(f"You speak {self.language}.")
        elif self.accent:
            lines.append(f"You speak with a {self.accent} accent.")
        lines.append(SPOKEN_STYLE)
        return "\n".join(lines)


@dataclass
class Task:
    goal: str
    background: str = ""

    def to_prompt_section(self) -> str:
        # Each part followed by a blank line, as the harness renders it.
        prompt = "# Task\n\n"
        if self.background:
            prompt += self.background + "\n\n"
        if self.goal:
            prompt += f"Your goal is to: {self.goal}\n\n"
        return prompt


@dataclass
class Actions:
    """Step-by-step instructions and standing guidelines for one side."""

    instructions: list[str] = field(default_factory=list)
    guidelines: list[str] = field(default_factory=list)

    def to_prompt_section(self) -> str:
        sections = ["# Actions"]  # (the heading stands even with nothing under it, as in the harness)
        if self.instructions:
            steps = "\n".join(f"Step {i}: {step}" for i, step in enumerate(self.instructions, start=1))
            sections.append(
                "## Instructions\nFollow these steps in order, one step per turn, to complete the task:\n" + steps
            )
        if self.guidelines:
            rules = "\n".join(f"- {rule}" for rule in self.guidelines)
            sections.append("## Guidelines\nAlways comply with these guidelines during the task:\n" + rules)
        return "\n\n".join(sections)


@dataclass
class Resources:
    """Tools (name → constructor arguments), documents (name → file path readable through a tool),
    loose information lines, and optional named information blocks (`info_sections`, rendered as
    `### <name>` blocks under Additional Information)."""

    tools: dict[str, dict[str, str]] = field(default_factory=dict)
    documents: dict[str, str] = field(default_factory=dict)
    information: list[str] = field(default_factory=list)
    info_sections: dict[str, str] | None = None

    def to_prompt_section(self) -> str:
        sections = []
        if self.documents:
            listing = "\n".join(f"- {name}: {path}" for name, path in self.documents.items())
            sections.append("## Available Documents\nYou can read these documents with your tools:\n" + listing)
        if self.information or self.info_sections:
            parts = ["## Additional Information"]
            if self.information:
                parts.append(
                    "Use this information for reference:\n" + "\n".join(f"- {line}" for line in self.information)
                )
            for title, body in (self.info_sections or {}).items():
                parts.append(f"### {title}\n{body}")
            sections.append("\n".join(parts))
        return "\n\n".join(["# Resources", *sections])  # (the heading alone too, as in the harness)

    def to_tools_json_string(self) -> str:
        return json.dumps(self.tools) if self.tools else "{}"


# -------------------------------------------------------------------------------------- scenario


_Made = TypeVar("_Made")


# The harness's Scenario.__init__ arguments: for these, a subclass's class attribute wins over the
# argument (its __init__ sets each only `if not hasattr(self, name)`).
HARNESS_INIT_FIELDS = frozenset(
    {
        "name",
        "description",
        "max_duration",
        "reference_answer",
        "ignore_capitalization",
        "ignore_punctuation",
        "clean_text",
        "disallow_extra_items",
        "expected_scenario_db",
        "nl_assertions",
        "db_state_assertions",
        "initialization_actions",
        "expected_user_db",
    }
)


def _is_descriptor(value: Any) -> bool:
    """A computed class attribute (`cached_property`, say): read on the instance, never copied."""
    return (hasattr(type(value), "__get__") and not callable(value)) or isinstance(value, cached_property)


class _ScenarioClass(type):
    """Scenario's metaclass. A subclass that sets one of Scenario's fields as a plain class attribute
    (`agent_persona = Persona(...)`, as the harness's scenario classes do) gets it as that field's
    value in each instance it makes; each instance has its own copy. As in the harness, such a class
    attribute wins over the argument for the harness's own constructor arguments
    (`HARNESS_INIT_FIELDS`: `expected_scenario_db`, `name`, …); for callqa's other fields what is
    passed wins. A `cached_property` (a whitelist derived from `nl_assertions`, say) is computed on
    the instance. The values are passed to `__init__` itself, so a subclass's `__post_init__` sees
    them, and the fields' own defaults stay what they are.

    A concrete subclass (one that declares `name`) must resolve a non-empty `success_signals`, as
    the harness's `__init_subclass__` requires: TypeError when the class is made."""

    def __init__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(name, bases, namespace, **kwargs)
        if bases and "name" in namespace and not _is_descriptor(namespace["name"]):
            signals = inspect.getattr_static(cls, "success_signals", None)
            if not _is_descriptor(signals) and not signals:
                raise TypeError(
                    f"{name}: success_signals must be a non-empty sequence of SuccessSignal members; "
                    "set it on the domain base class or on the scenario"
                )

    def __call__(cls: type[_Made], *args: Any, **kwargs: Any) -> _Made:
        computed = []
        for name, value in _class_attribute_fields(cls).items():
            if _is_descriptor(value):
                computed.append(name)
                kwargs.pop(name, None)
            elif name not in kwargs or name in HARNESS_INIT_FIELDS:
                kwargs[name] = copy.deepcopy(value)
        made: _Made = super().__call__(*args, **kwargs)  # type: ignore[misc]  # cls is typed as the class it makes
        if computed:
            for name in computed:  # (the dataclass's __init__ put the field's default over it)
                vars(made).pop(name, None)
            made.to_scenario_spec()  # type: ignore[attr-defined]  # checked again, with the computed values
        return made


def _class_attribute_fields(cls: type) -> dict[str, Any]:
    """The fields of `cls` whose nearest definition along its MRO is a plain class attribute, not a
    field (an annotated default, which the dataclass's `__init__` applies itself), with their values."""
    found: dict[str, Any] = {}
    for part in fields(cls):
        for klass in cls.__mro__:
            if part.name in vars(klass):
                if part.name not in inspect.get_annotations(klass):
                    found[part.name] = vars(klass)[part.name]
                break
    return found


@dataclass(kw_only=True)
class Scenario(metaclass=_ScenarioClass):
    """One evaluation scenario. The conversation-end policy, the agent-turn floor and the judge
    options travel with the scenario to callqa.

    `success_signals`: the whitelist gating `is_successful`. An empty one is refused (every call would
    be "N/A"), and a concrete subclass (one declaring `name`) must set one, as in the harness. A
    scenario made directly without one sends none, which callqa's workers read as every signal;
    its own `compute_is_successful` then raises, as the harness's does."""

    reference_file: ClassVar[str] = "reference_answer.json"

    name: str | None = None
    domain: str = "default"
    description: str | None = None
    noise_config: dict[str, Any] | None = None
    max_duration: int | None = None

    # A string is the message the agent must give: {"message": text}, as the harness saves it.
    reference_answer: list[dict[str, Any]] | dict[str, Any] | str | None = None
    ignore_capitalization: bool = False
    ignore_punctuation: bool = False
    clean_text: bool = False
    disallow_extra_items: bool = False
    # callqa's, off by default (the harness's answer): pair actions so a valid pairing is never missed.
    optimal_action_pairing: bool = False
    expected_scenario_db: dict[str, Any] | None = None
    # callqa's: also send the expected DB, so a failed db_state_match says why (db_state_diff). Off by
    # default: a large DB may not fit in one message, and the hash alone scores.
    send_expected_db: bool = False
    nl_assertions: list[str] | None = None
    db_state_assertions: list[dict[str, Any]] | None = None
    initialization_actions: list[dict[str, Any]] | None = None
    expected_user_db: dict[str, Any] | None = None
    success_signals: Sequence[SuccessSignal | str] | None = None

    conversation_end_policy: Literal["tool-only", "valid-terminal-state"] = "tool-only"
    min_agent_turns: int = DEFAULT_MIN_AGENT_TURNS
    judge: bool = False
    judge_threshold: float | None = None
    judge_include_conversation: bool = False

    agent_persona: Persona | None = None
    agent_task: Task | None = None
    agent_actions: Actions | None = None
    agent_resources: Resources | None = None
    user_persona: Persona | None = None
    user_task: Task | None = None
    user_actions: Actions | None = None
    user_resources: Resources | None = None

    def __post_init__(self) -> None:
        self.to_scenario_spec()  # (refused now, not when its first call is refused)

    def reference_document(self) -> list[dict[str, Any]] | dict[str, Any] | None:
        """The reference answer as the harness writes its reference file (a string as a message)."""
        if isinstance(self.reference_answer, str):
            return {"message": self.reference_answer}
        return self.reference_answer

    # -- prompts and tools ------------------------------------------------------------------------

    @staticmethod
    def _prompt(*parts: Persona | Task | Actions | Resources | None) -> str:
        return "\n\n".join(section for part in parts if part is not None and (section := part.to_prompt_section()))

    def get_agent_prompt(self) -> str:
        return self._prompt(self.agent_persona, self.agent_task, self.agent_actions, self.agent_resources)

    def get_user_prompt(self) -> str:
        return self._prompt(self.user_persona, self.user_task, self.user_actions, self.user_resources)

    def get_agent_tools(self) -> str:
        """`{"tool_name": {"arg": "value", …}, …}` as a JSON string."""
        return self.agent_resources.to_tools_json_string() if self.agent_resources is not None else "{}"

    def get_user_tools(self) -> str:
        return self.user_resources.to_tools_json_string() if self.user_resources is not None else "{}"

    # -- scoring -----------------------------------------------------------------------------------

    def compute_is_successful(self, signals: Mapping[SuccessSignal | str, object]) -> bool | Literal["N/A"]:
        """Strict AND over the whitelisted signals with a verdict (None, or metrics.json's "N/A" = not
        applicable); "N/A" when none applies. Raises ValueError when the whitelist or `signals` names
        an unknown signal, or a verdict is no bool (the string "false" is true to Python: it passed)."""
        if not self.success_signals:
            raise ValueError(
                f"{type(self).__name__}: success_signals is empty; set the whitelist on the domain "
                "base class or on the scenario"
            )
        verdicts: dict[SuccessSignal, bool | None] = {}
        for key, value in signals.items():
            signal = as_success_signal(key)
            if value == NOT_APPLICABLE:
                value = None
            elif value is not None and not isinstance(value, bool):
                raise ValueError(
                    f"the verdict of {signal.value!r} must be True, False or None (not applicable), got {value!r}"
                )
            verdicts[signal] = value
        return composite_is_successful(parse_success_signals(self.success_signals), verdicts)

    def expected_db_hash(self) -> str | None:
        return db_state_hash(self.expected_scenario_db) if self.expected_scenario_db is not None else None

    def to_scenario_spec(self) -> dict[str, Any]:
        """The `scenario` block of `call.started` (models.events.ScenarioSpec). Raises ValueError,
        naming the field, when the block is one a worker would refuse (and score the call without it)."""
        if self.success_signals is not None and not isinstance(self.success_signals, str) and not self.success_signals:
            raise ValueError(f"scenario {self.name!r}: success_signals is empty: every call would be 'N/A'")
        whitelist = (
            None if self.success_signals is None else [s.value for s in parse_success_signals(self.success_signals)]
        )
        spec = {
            "name": self.name,
            "domain": self.domain,
            "description": self.description,
            "success_signals": whitelist,
            "reference_answer": self.reference_document(),
            "ignore_capitalization": self.ignore_capitalization,
            "ignore_punctuation": self.ignore_punctuation,
            "clean_text": self.clean_text,
            "disallow_extra_items": self.disallow_extra_items,
            "optimal_action_pairing": self.optimal_action_pairing,
            "expected_db_hash": self.expected_db_hash(),
            "db_state_assertions": self.db_state_assertions,
            "nl_assertions": self.nl_assertions,
            "conversation_end_policy": self.conversation_end_policy,
            "min_agent_turns": self.min_agent_turns,
            "judge": self.judge,
            "judge_threshold": self.judge_threshold,
            "judge_include_conversation": self.judge_include_conversation,
        }
        if self.send_expected_db and self.expected_scenario_db is not None:
            spec["expected_db"] = self.expected_scenario_db
        try:
            msgspec.convert(spec, ScenarioSpec)
        except msgspec.ValidationError as exc:
            raise ValueError(f"scenario {self.name!r}: {exc}") from None
        return spec

    # -- the runner's hooks ---------------------------------------------------------------------------

    def setup_shared_state(self, state: dict[str, Any], side: str) -> None:
        """Populate a side's shared state ("user" or "agent") before its tools are made. The default
        does nothing; a domain's subclass seeds its fixtures here (a `db_path`, say)."""
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {side!r}")

    def sync_state(self, agent_db: dict[str, Any], user_db: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Reconcile the two sides' DBs after a write on either: the per-side deltas to push back. The
        default has none (single-side domains); a subclass may also change both DBs in place."""
        return {"agent": {}, "user": {}}

    def metadata(self) -> dict[str, Any]:
        """metadata.json as the harness writes it: the scoring options, then the structured fields
        and the expected DB's hash when the scenario has them."""
        document: dict[str, Any] = {
            "name": self.name,
            "domain": self.domain,
            "description": self.description,
            "max_duration": self.max_duration,
            "noise_config": self.noise_config,
            "ignore_capitalization": self.ignore_capitalization,
            "ignore_punctuation": self.ignore_punctuation,
            "clean_text": self.clean_text,
            "disallow_extra_items": self.disallow_extra_items,
            "success_signals": [str(s) for s in (self.success_signals or ())],
        }
        for key in ("db_state_assertions", "nl_assertions", "initialization_actions"):
            if getattr(self, key):
                document[key] = getattr(self, key)
        if self.expected_scenario_db is not None:
            document["expected_db_hash"] = db_state_hash(self.expected_scenario_db)
        if self.expected_user_db is not None:
            document["expected_user_db_hash"] = db_state_hash(self.expected_user_db)
        return document

    def save(self, output_dir: str) -> None:
        """Save the scenario to `output_dir` (made if missing) as the harness does: user_prompt.txt,
        user_tools.json, agent_prompt.txt, agent_tools.json (the tools' JSON string, as JSON),
        metadata.json, and the reference answer as `reference_file` when there is one (a string as
        `{"message": …}`); and callqa's `scenario.json`, every field with its parts as plain JSON."""
        directory = Path(output_dir)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "user_prompt.txt").write_text(self.get_user_prompt(), encoding="utf-8")
        (directory / "user_tools.json").write_text(json.dumps(self.get_user_tools(), indent=4), encoding="utf-8")
        (directory / "agent_prompt.txt").write_text(self.get_agent_prompt(), encoding="utf-8")
        (directory / "agent_tools.json").write_text(json.dumps(self.get_agent_tools(), indent=4), encoding="utf-8")
        # (A value JSON cannot hold, a set say, is a TypeError here, not its repr written as text.)
        (directory / "metadata.json").write_text(json.dumps(self.metadata(), indent=4), encoding="utf-8")
        (directory / SCENARIO_FILE).write_text(
            json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        if self.reference_answer:
            (directory / self.reference_file).write_text(
                json.dumps(self.reference_document(), indent=4), encoding="utf-8"
            )

    def to_call_started(self, agent_id: str, **extra: Any) -> dict[str, Any]:
        """The data of a `call.started` event for a call running this scenario. `extra` carries the
        other call.started fields (cohort_ids, run_id, variables, inactivity_timeout_s, agent_config);
        without an `agent_config`, the agent's rendered prompt becomes its prompt (for grounding)."""
        if "scenario" in extra:
            raise TypeError("to_call_started() builds the 'scenario' block itself")
        data: dict[str, Any] = {"agent_id": agent_id, **extra, "scenario": self.to_scenario_spec()}
        if "agent_config" not in data and (prompt := self.get_agent_prompt()):
            data["agent_config"] = {"prompt": prompt}
        return data
