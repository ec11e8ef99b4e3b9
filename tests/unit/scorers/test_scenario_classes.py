"""The scenario model: prompt sections, tools, the composite verdict and call.started."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from functools import cached_property

import msgspec
import pytest

from models.events import CallStartedData
from models.scenario import Actions, Persona, Resources, Scenario, SuccessSignal, Task
from scorers.evaluation.db_state import db_state_hash
from tests.helpers.eventkit import event, run_call

# --------------------------------------------------------------------------------- SuccessSignal


def test_success_signals_are_the_six_json_keys_and_equal_their_strings():
    assert [s.value for s in SuccessSignal] == [
        "is_action_match",
        "db_state_match",
        "db_state_assertion",
        "nl_assertion",
        "judge_passed",
        "clean_exit",
    ]
    assert SuccessSignal.CLEAN_EXIT == "clean_exit"
    assert json.dumps([SuccessSignal.JUDGE_PASSED]) == '["judge_passed"]'


# -------------------------------------------------------------------------------- prompt sections


def test_persona_renders_role_name_background_personality_and_speech():
    section = Persona(
        role="human user",
        name="Bob",
        background="A student.",
        personality="Impatient.",
        language="English",
        accent="British",
        voice_config={"voice": "x"},
    ).to_prompt_section()
    lines = section.split("\n")
    assert lines[:4] == [
        "You are a human user named Bob.",
        "A student.",
        "Impatient.",
        "You speak English with a British accent.",
    ]
    assert "voice" not in section  # voice and behaviour configs are not prompt material


@pytest.mark.parametrize(
    ("language", "accent", "sentence"),
    [
        ("Spanish", None, "You speak Spanish."),
        (None, "Australian", "You speak with a Australian accent."),  # (the harness's sentence, article and all)
    ],
)
def test_persona_renders_language_or_accent_alone(language, accent, sentence):
    assert sentence in Persona(role="user", language=language, accent=accent).to_prompt_section().split("\n")


def test_persona_leaves_out_what_it_does_not_have():
    lines = Persona(role="helpful AI agent").to_prompt_section().split("\n")
    assert lines[0] == "You are a helpful AI agent."
    assert len(lines) == 2  # the role, then the spoken-style guidance


def test_task_renders_background_then_goal():
    assert Task(goal="Order a pizza", background="You are hungry.").to_prompt_section() == (
        "# Task\n\nYou are hungry.\n\nYour goal is to: Order a pizza\n\n"
    )
    assert Task(goal="Order a pizza").to_prompt_section() == "# Task\n\nYour goal is to: Order a pizza\n\n"


def test_actions_number_instructions_and_bullet_guidelines():
    section = Actions(instructions=["Greet", "Take the order"], guidelines=["Never invent items"]).to_prompt_section()
    assert section.startswith("# Actions\n\n## Instructions\n")
    assert "Step 1: Greet\nStep 2: Take the order" in section
    assert section.endswith("## Guidelines\nAlways comply with these guidelines during the task:\n- Never invent items")


def test_empty_actions_and_resources_render_their_heading_as_the_harness_does():
    assert Actions().to_prompt_section() == "# Actions"
    assert Resources().to_prompt_section() == "# Resources"


def test_resources_render_documents_information_and_info_sections():
    section = Resources(
        documents={"menu": "docs/menu.txt"},
        information=["Open until 10pm"],
        info_sections={"Things you know": "Your order id is 42."},
    ).to_prompt_section()
    assert section.startswith("# Resources\n\n## Available Documents\n")
    assert "- menu: docs/menu.txt" in section
    assert (
        "## Additional Information\nUse this information for reference:\n- Open until 10pm\n### Things you "
        "know\nYour order id is 42."
    ) in section


def test_info_sections_alone_still_get_an_additional_information_heading():
    section = Resources(info_sections={"Things you don't know": "Your order id."}).to_prompt_section()
    assert section == "# Resources\n\n## Additional Information\n### Things you don't know\nYour order id."


def test_tools_are_a_json_string_and_empty_tools_are_an_empty_object():
    tools = {"PlaceOrderTool": {"menu": "pizza"}}
    assert json.loads(Resources(tools=tools).to_tools_json_string()) == tools
    assert Resources().to_tools_json_string() == "{}"


# -------------------------------------------------------------------------------------- scenario


def pizza_scenario(**fields) -> Scenario:
    return Scenario(
        name="restaurant__pizza",
        domain="restaurant",
        agent_persona=Persona(role="helpful AI agent"),
        agent_task=Task(goal="Help the user order"),
        agent_actions=Actions(guidelines=["Confirm before placing"]),
        agent_resources=Resources(tools={"PlaceOrderTool": {}}),
        user_persona=Persona(role="human user", name="Lisa"),
        user_task=Task(goal="Order a pepperoni pizza"),
        **fields,
    )


def test_the_agent_prompt_joins_its_sections_in_order():
    scenario = pizza_scenario()
    prompt = scenario.get_agent_prompt()
    parts = [
        Persona(role="helpful AI agent").to_prompt_section(),
        Task(goal="Help the user order").to_prompt_section(),
        Actions(guidelines=["Confirm before placing"]).to_prompt_section(),
        "# Resources",
    ]
    assert prompt == "\n\n".join(parts)  # the tools-only resources render their heading alone


def test_the_user_prompt_skips_what_the_scenario_does_not_give():
    prompt = pizza_scenario().get_user_prompt()
    assert prompt.startswith("You are a human user named Lisa.\n")
    assert prompt.endswith("# Task\n\nYour goal is to: Order a pepperoni pizza\n\n")


def test_tools_per_side():
    scenario = pizza_scenario()
    assert json.loads(scenario.get_agent_tools()) == {"PlaceOrderTool": {}}
    assert scenario.get_user_tools() == "{}"


def test_compute_is_successful_is_a_strict_and_over_applicable_whitelisted_signals():
    scenario = Scenario(success_signals=[SuccessSignal.ACTION_MATCH, SuccessSignal.CLEAN_EXIT])
    assert scenario.compute_is_successful({SuccessSignal.ACTION_MATCH: True, SuccessSignal.CLEAN_EXIT: True}) is True
    assert scenario.compute_is_successful({SuccessSignal.ACTION_MATCH: True, SuccessSignal.CLEAN_EXIT: False}) is False
    # Not whitelisted: ignored. Not applicable (None): dropped from the conjunction.
    assert (
        scenario.compute_is_successful(
            {SuccessSignal.ACTION_MATCH: None, SuccessSignal.CLEAN_EXIT: True, SuccessSignal.DB_STATE_MATCH: False}
        )
        is True
    )


def test_compute_is_successful_is_na_when_no_whitelisted_signal_applies():
    scenario = Scenario(success_signals=["judge_passed"])
    assert scenario.compute_is_successful({SuccessSignal.JUDGE_PASSED: None, SuccessSignal.CLEAN_EXIT: True}) == "N/A"


def test_compute_is_successful_without_a_whitelist_raises_as_the_harness_does():
    # Mirrors the harness's Scenario.compute_is_successful ("success_signals is empty").
    with pytest.raises(ValueError, match="success_signals is empty"):
        Scenario().compute_is_successful(dict.fromkeys(SuccessSignal, True))


def test_an_empty_whitelist_is_refused_when_the_scenario_is_made():
    with pytest.raises(ValueError, match="success_signals is empty"):
        Scenario(name="qa__1", success_signals=())


def test_a_concrete_subclass_without_a_whitelist_is_refused_when_the_class_is_made():
    # Mirrors the harness's Scenario.__init_subclass__ (tests/unit/test_scenario_field_defaults.py): a
    # class declaring `name` must resolve a non-empty success_signals; an abstract base need not.
    class DomainBase(Scenario):
        domain = "retail"

    with pytest.raises(TypeError, match="success_signals must be a non-empty"):

        class Concrete(DomainBase):
            name = "retail__1"

    with pytest.raises(TypeError, match="success_signals must be a non-empty"):

        class EmptyWhitelist(DomainBase):
            name = "retail__2"
            success_signals = ()

    class Fine(DomainBase):
        name = "retail__3"
        success_signals = (SuccessSignal.CLEAN_EXIT,)

    assert Fine().to_scenario_spec()["success_signals"] == ["clean_exit"]


def test_a_class_attribute_wins_over_the_constructor_argument_as_in_the_harness():
    # The harness's __init__ sets expected_scenario_db (and its other arguments) only when the class
    # has none: a subclass's class attribute wins.
    class Airline(Scenario):
        name = "airline__1"
        success_signals = (SuccessSignal.DB_STATE_MATCH,)
        expected_scenario_db = {"flights": {"f1": {"seats": 3}}}

    made = Airline(expected_scenario_db={"flights": {}})
    assert made.expected_scenario_db == {"flights": {"f1": {"seats": 3}}}
    assert made.to_scenario_spec()["expected_db_hash"] == Airline().expected_db_hash()


def test_a_cached_property_whitelist_derived_from_nl_assertions_is_computed_per_scenario():
    class Retail(Scenario):
        domain = "retail"

        @cached_property
        def success_signals(self):
            signals = [SuccessSignal.ACTION_MATCH]
            return signals + [SuccessSignal.NL_ASSERTION] if self.nl_assertions else signals

    with_claims, without = Retail(name="retail__1", nl_assertions=["The agent apologised."]), Retail(name="retail__2")
    assert with_claims.to_scenario_spec()["success_signals"] == ["is_action_match", "nl_assertion"]
    assert without.to_scenario_spec()["success_signals"] == ["is_action_match"]
    assert with_claims.compute_is_successful({"is_action_match": True, "nl_assertion": False}) is False


def test_compute_is_successful_accepts_strings():
    scenario = Scenario(success_signals=["is_action_match", "clean_exit"])
    assert scenario.compute_is_successful({"is_action_match": True, "clean_exit": False}) is False


def test_a_verdict_that_is_no_bool_is_a_value_error_and_na_is_not_applicable():
    # Truthy to Python, "false" and 0.5 passed, and the composite with them.
    for verdict in ("false", 0.5, 1):
        with pytest.raises(ValueError, match="the verdict of 'clean_exit' must be True, False or None"):
            Scenario(success_signals=["clean_exit"]).compute_is_successful({"clean_exit": verdict})
    both = Scenario(success_signals=["is_action_match", "clean_exit"])
    assert both.compute_is_successful({"is_action_match": "N/A", "clean_exit": False}) is False
    assert both.compute_is_successful({"is_action_match": "N/A"}) == "N/A"


def test_an_unknown_whitelisted_signal_is_a_value_error():
    with pytest.raises(ValueError, match="unknown success signal 'clean_exitt'"):
        Scenario(success_signals=["clean_exitt"]).compute_is_successful({SuccessSignal.CLEAN_EXIT: True})


def test_an_unknown_signal_in_the_verdicts_is_a_value_error():
    with pytest.raises(ValueError):
        Scenario().compute_is_successful({"task_done": True})


def test_a_domain_subclass_sets_its_defaults_as_dataclass_fields():
    @dataclass(kw_only=True)
    class RestaurantScenario(Scenario):
        domain: str = "restaurant"
        success_signals: tuple = (SuccessSignal.ACTION_MATCH, SuccessSignal.CLEAN_EXIT)

    scenario = RestaurantScenario(name="restaurant__1")
    assert (scenario.domain, scenario.to_scenario_spec()["success_signals"]) == (
        "restaurant",
        ["is_action_match", "clean_exit"],
    )


def test_a_subclass_sets_its_parts_as_class_attributes_as_the_harness_classes_do():
    class PizzaScenario(Scenario):
        name = "restaurant__pizza"
        domain = "restaurant"
        agent_persona = Persona(role="helpful AI agent", name="Bob")
        success_signals = [SuccessSignal.CLEAN_EXIT]
        conversation_end_policy = "valid-terminal-state"

    class LargePizzaScenario(PizzaScenario):
        user_task = Task(goal="Order a large pizza")

    scenario = PizzaScenario()
    assert (scenario.name, scenario.domain, scenario.conversation_end_policy) == (
        "restaurant__pizza",
        "restaurant",
        "valid-terminal-state",
    )
    assert scenario.get_agent_prompt().startswith("You are a helpful AI agent named Bob.")
    assert scenario.compute_is_successful({"clean_exit": True, "is_action_match": False}) is True
    assert scenario.to_scenario_spec()["success_signals"] == ["clean_exit"]
    # Each instance has its own copy of a class attribute's value; what is passed still wins.
    scenario.agent_persona.name = "Ann"
    assert PizzaScenario().agent_persona.name == "Bob"
    assert PizzaScenario(domain="default").domain == "default"
    larger = LargePizzaScenario(name="restaurant__large")
    # (name is one of the harness's constructor arguments: the class attribute wins, as in the harness)
    assert (larger.name, larger.domain, larger.user_task.goal) == (
        "restaurant__pizza",
        "restaurant",
        "Order a large pizza",
    )
    assert (Scenario().domain, Scenario().agent_persona) == ("default", None)


def test_a_subclass_may_fill_in_its_parts_in_post_init_and_the_defaults_stay_real():
    # A marker standing for "not given" until Scenario's own __post_init__ ran broke both.
    @dataclass(kw_only=True)
    class FileScenario(Scenario):
        domain: str = "retail"
        agent_persona = Persona(role="clerk")  # (a class attribute beside the fields)

        def __post_init__(self):
            if self.reference_answer is None:
                self.reference_answer = [{"order": "A1"}]
            if self.user_task is None:
                self.user_task = Task(goal=f"return an item ({self.domain})")

    scenario = FileScenario(name="retail__1")
    assert (scenario.reference_answer, scenario.user_task.goal, scenario.agent_persona.role) == (
        [{"order": "A1"}],
        "return an item (retail)",
        "clerk",
    )
    assert scenario.to_call_started("a1")["scenario"]["min_agent_turns"] == 2
    assert (Scenario.domain, FileScenario.domain, Scenario.min_agent_turns) == ("default", "retail", 2)
    assert {f.name: f.default for f in dataclasses.fields(Scenario)}["conversation_end_policy"] == "tool-only"
    assert dataclasses.replace(scenario, name="retail__2").agent_persona == scenario.agent_persona


@pytest.mark.parametrize(
    "fields, named",
    [
        ({"conversation_end_policy": "valid_terminal_state"}, "conversation_end_policy"),
        ({"min_agent_turns": -3}, "min_agent_turns"),
        ({"judge_threshold": 5}, "judge_threshold"),
        ({"success_signals": "clean_exit"}, "not one string: ['clean_exit']"),
    ],
)
def test_a_scenario_the_wire_would_refuse_is_refused_when_it_is_made(fields, named):
    # Sent, its call.started was dead-lettered and the call scored as a production call, out of its run.
    with pytest.raises(ValueError, match=re.escape(named)):
        Scenario(name="d__bad", **fields)
    scenario = Scenario(name="d__bad")
    for field_name, value in fields.items():
        setattr(scenario, field_name, value)
    with pytest.raises(ValueError, match=re.escape(named)):
        scenario.to_call_started("a1", run_id="r9")


# ---------------------------------------------------------------------------------- call.started


def test_call_started_carries_the_scenario_block():
    expected_db = {"orders": {"o1": {"total": 12.0}}}
    scenario = pizza_scenario(
        success_signals=["is_action_match", SuccessSignal.CLEAN_EXIT],
        reference_answer=[{"item": "pepperoni"}],
        ignore_capitalization=True,
        disallow_extra_items=True,
        expected_scenario_db=expected_db,
        db_state_assertions=[{"func_name": "exists", "arguments": {"path": "orders.o1"}, "assert_value": True}],
        nl_assertions=["The agent confirmed the order."],
        conversation_end_policy="valid-terminal-state",
        min_agent_turns=3,
        judge_threshold=0.9,
    )
    data = scenario.to_call_started("agent-7", run_id="run-1", cohort_ids=["pizza"])
    block = data["scenario"]
    assert (data["agent_id"], data["run_id"], data["cohort_ids"]) == ("agent-7", "run-1", ["pizza"])
    assert block["success_signals"] == ["is_action_match", "clean_exit"]
    assert block["expected_db_hash"] == db_state_hash(expected_db)
    assert (block["conversation_end_policy"], block["min_agent_turns"], block["judge_threshold"]) == (
        "valid-terminal-state",
        3,
        0.9,
    )
    assert (block["ignore_capitalization"], block["disallow_extra_items"]) == (True, True)
    assert data["agent_config"] == {"prompt": scenario.get_agent_prompt()}
    decoded = msgspec.convert(data, CallStartedData)  # it is valid call.started data
    assert decoded.scenario.name == "restaurant__pizza"
    assert decoded.scenario.reference_answer == [{"item": "pepperoni"}]


def test_call_started_without_an_expected_db_has_no_hash_and_keeps_a_given_agent_config():
    data = Scenario(name="qa__1").to_call_started("a1", agent_config={"prompt": "custom"})
    assert data["scenario"]["expected_db_hash"] is None
    assert data["scenario"]["success_signals"] is None
    assert data["agent_config"] == {"prompt": "custom"}


def test_call_started_refuses_a_second_scenario_block():
    with pytest.raises(TypeError):
        Scenario(name="qa__1").to_call_started("a1", scenario={})


def test_call_started_rejects_an_unknown_whitelisted_signal():
    with pytest.raises(ValueError):
        Scenario(name="qa__1", success_signals=["nope"]).to_call_started("a1")


def test_a_call_started_from_a_scenario_is_scored_against_it():
    expected_db = {"orders": {"o1": {"status": "placed"}}}
    scenario = Scenario(
        name="airline__3",
        success_signals=[SuccessSignal.DB_STATE_MATCH, SuccessSignal.CLEAN_EXIT],
        expected_scenario_db=expected_db,
        min_agent_turns=0,
    )
    _, results = run_call(
        [
            event("call.started", scenario.to_call_started("a1")),
            event("db.state", {"side": "agent", "db": {"orders": {"o1": {"status": "placed"}}}}),
            event("call.ended", {"stop_reason": "[EXIT]"}),
        ]
    )
    doc = results[-1].evaluation
    assert (doc["scenario_name"], doc["db_state_match"], doc["is_successful"]) == ("airline__3", True, True)


# ---------------------------------------------------------------------------------- runner hooks


def test_save_writes_the_scenario_and_its_reference_answer(tmp_path):
    scenario = pizza_scenario(success_signals=[SuccessSignal.CLEAN_EXIT], reference_answer=[{"item": "pepperoni"}])
    scenario.save(str(tmp_path / "restaurant__pizza"))
    saved = json.loads((tmp_path / "restaurant__pizza" / "scenario.json").read_text())
    assert (saved["name"], saved["success_signals"], saved["agent_persona"]["role"]) == (
        "restaurant__pizza",
        ["clean_exit"],
        "helpful AI agent",
    )
    assert json.loads((tmp_path / "restaurant__pizza" / Scenario.reference_file).read_text()) == [{"item": "pepperoni"}]
    Scenario(name="qa__1").save(str(tmp_path / "qa__1"))
    assert sorted(p.name for p in (tmp_path / "qa__1").iterdir()) == [
        "agent_prompt.txt",
        "agent_tools.json",
        "metadata.json",
        "scenario.json",
        "user_prompt.txt",
        "user_tools.json",
    ]


def test_save_writes_the_harness_files_and_a_string_reference_as_a_message(tmp_path):
    # As the harness's Scenario.save: prompts, tools (their JSON string, as JSON), metadata, and a
    # string reference answer saved as {"message": ...}.
    scenario = pizza_scenario(
        success_signals=[SuccessSignal.CLEAN_EXIT],
        reference_answer="Your order is placed.",
        nl_assertions=["The agent confirmed."],
        expected_scenario_db={"orders": {}},
    )
    scenario.save(str(tmp_path))
    assert json.loads((tmp_path / Scenario.reference_file).read_text()) == {"message": "Your order is placed."}
    assert json.loads((tmp_path / "agent_tools.json").read_text()) == '{"PlaceOrderTool": {}}'
    assert (tmp_path / "agent_prompt.txt").read_text() == scenario.get_agent_prompt()
    metadata = json.loads((tmp_path / "metadata.json").read_text())
    assert list(metadata) == [
        "name",
        "domain",
        "description",
        "max_duration",
        "noise_config",
        "ignore_capitalization",
        "ignore_punctuation",
        "clean_text",
        "disallow_extra_items",
        "success_signals",
        "nl_assertions",
        "expected_db_hash",
    ]
    assert metadata["expected_db_hash"] == db_state_hash({"orders": {}})
    assert scenario.to_scenario_spec()["reference_answer"] == {"message": "Your order is placed."}


def test_the_shared_state_hooks_default_to_nothing():
    state: dict = {}
    Scenario().setup_shared_state(state, "agent")
    assert state == {}
    assert Scenario().sync_state({"a": 1}, {"u": 2}) == {"agent": {}, "user": {}}
    with pytest.raises(ValueError, match="side must be one of"):
        Scenario().setup_shared_state(state, "bot")
