"""Handoff latency samples: one source per call (latency events, else RTVI speaking events, else turn
timings), one sample per handoff."""

from tests.helpers.eventkit import T0, event, run_call
from tests.helpers.qa_kit import call_events

T = T0 + 1_000_000


def samples(*middle):
    engine, _ = run_call(call_events(*middle))
    return [
        (s.latency_ms, s.user_transcript, s.agent_transcript)
        for s in engine.calls["c1"].accumulators["handoff_latency"].samples()
    ]


def latency(ms, user="", agent=""):
    return event("latency", {"latency_ms": ms, "user_transcript": user, "agent_transcript": agent})


def speaking(kind, side, at):
    return event("rtvi", {"side": side, "message": {"label": "rtvi-ai", "type": kind}}, ts_ms=at)


def user_turn(text, start=None, end=None):
    return event("turn", {"role": "user", "text": text, "start_ms": start, "end_ms": end})


def agent_turn(text, start=None, end=None):
    return event("turn", {"role": "agent", "text": text, "start_ms": start, "end_ms": end})


def simulated_user_stopped(at):
    return speaking("bot-stopped-speaking", "user", at)


def agent_heard_user_stop(at):
    return speaking("user-stopped-speaking", "agent", at)


def agent_started(at):
    return speaking("bot-started-speaking", "agent", at)


def test_latency_events_are_the_samples_when_present():
    # The speaking events (900 ms) and turn timings (500 ms) of the same handoff are not counted again.
    assert samples(
        user_turn("hi", 0, 1000),
        simulated_user_stopped(T),
        agent_started(T + 900),
        agent_turn("hello", 1500, 2000),
        latency(850, "hi", "hello"),
    ) == [(850.0, "hi", "hello")]


def test_simulated_users_bot_stopped_to_agents_bot_started():
    assert samples(
        user_turn("book a table"),
        simulated_user_stopped(T),
        agent_started(T + 1200),
        agent_turn("For how many?"),
    ) == [(1200.0, "book a table", "For how many?")]


def test_agent_pipelines_user_stopped_to_bot_started():
    assert samples(agent_heard_user_stop(T), agent_started(T + 700)) == [(700.0, "", "")]


def test_simulated_user_is_preferred_over_the_agent_pipeline():
    # Both describe the same handoff: 1000 ms from the simulated user's own stop, 800 from the agent's VAD.
    assert samples(
        simulated_user_stopped(T),
        agent_heard_user_stop(T + 200),
        agent_started(T + 1000),
    ) == [(1000.0, "", "")]


def test_turn_timings_when_there_are_no_latency_or_speaking_events():
    # user ends 2000 → agent starts 2600; user ends 5000 → agent starts 6500.
    assert samples(
        user_turn("hi", 0, 2000),
        agent_turn("hello", 2600, 3000),
        user_turn("bye", 4000, 5000),
        agent_turn("goodbye", 6500, 7000),
    ) == [(600.0, "hi", "hello"), (1500.0, "bye", "goodbye")]


def test_speaking_events_are_not_mixed_with_turn_timings():
    assert samples(
        user_turn("hi", 0, 2000),
        simulated_user_stopped(T),
        agent_started(T + 400),
        agent_turn("hello", 2600, 3000),
    ) == [(400.0, "hi", "hello")]


def test_one_sample_per_handoff_from_speaking_events():
    # The agent starts speaking twice after one user stop (e.g. after an interruption): one handoff.
    assert samples(
        simulated_user_stopped(T),
        agent_started(T + 500),
        agent_started(T + 3000),
    ) == [(500.0, "", "")]


def test_one_sample_per_handoff_from_turn_timings():
    assert samples(
        user_turn("hi", 0, 1000),
        agent_turn("hello", 1400, 2000),
        agent_turn("how can I help?", 2100, 3000),
    ) == [(400.0, "hi", "hello")]


def test_the_users_last_stop_before_the_reply_counts():
    # The user pauses and goes on: from the second stop (T + 2000) to the reply (T + 2600).
    assert samples(
        simulated_user_stopped(T),
        simulated_user_stopped(T + 2000),
        agent_started(T + 2600),
    ) == [(600.0, "", "")]


def test_the_users_last_turn_end_before_the_reply_counts():
    assert samples(
        user_turn("hi", 0, 1000),
        user_turn("are you there", 1500, 2500),
        agent_turn("yes", 3000, 3500),
    ) == [(500.0, "are you there", "yes")]


def test_agent_speaking_first_is_not_a_handoff():
    assert samples(agent_started(T), agent_turn("Welcome!", 0, 800)) == []


def test_the_simulated_users_own_speech_start_is_not_a_reply():
    # user-side bot-started-speaking is the simulated user talking, not the agent.
    assert samples(simulated_user_stopped(T), speaking("bot-started-speaking", "user", T + 300)) == []


def test_several_handoffs_give_one_sample_each():
    assert samples(
        simulated_user_stopped(T),
        agent_started(T + 900),
        simulated_user_stopped(T + 5000),
        agent_started(T + 6100),
    ) == [(900.0, "", ""), (1100.0, "", "")]


def test_agent_turn_starting_before_the_user_turn_ended_gives_no_sample():
    # Agent starts at 1800 while the user speaks until 2000: an overlap, not a −200 ms handoff.
    # The next handoff (user ends 5000 → agent 5600) still counts.
    assert samples(
        user_turn("hi", 0, 2000),
        agent_turn("hello", 1800, 3000),
        user_turn("bye", 4000, 5000),
        agent_turn("goodbye", 5600, 6000),
    ) == [(600.0, "bye", "goodbye")]


def test_an_agent_start_stamped_before_the_users_stop_is_no_sample():
    # Skewed clocks (or the agent talking over the user): -200 ms would score as better than instant.
    assert samples(
        agent_heard_user_stop(T),
        agent_started(T - 200),
        agent_heard_user_stop(T + 4000),
        agent_started(T + 4900),
    ) == [(900.0, "", "")]


def test_the_user_speaking_again_makes_the_stop_before_a_pause():
    # The user pauses at T, speaks again at T+300 and is still talking when the agent starts: no handoff.
    assert samples(
        speaking("user-started-speaking", "agent", T - 1000),
        agent_heard_user_stop(T),
        speaking("user-started-speaking", "agent", T + 300),
        agent_started(T + 6000),
        agent_heard_user_stop(T + 6300),
        agent_started(T + 7000),
    ) == [(700.0, "", "")]
    # The simulated user's own speech is its pipeline's "bot" speaking.
    assert samples(
        simulated_user_stopped(T),
        speaking("bot-started-speaking", "user", T + 300),
        simulated_user_stopped(T + 2000),
        agent_started(T + 2500),
    ) == [(500.0, "", "")]


def test_a_blank_agent_turn_is_no_reply():
    assert samples(
        user_turn("hi", 0, 1000),
        agent_turn("   ", 1100, 1200),
        agent_turn("Hello, how can I help?", 4800, 6000),
    ) == [(3800.0, "hi", "Hello, how can I help?")]
    assert samples(
        simulated_user_stopped(T),
        agent_started(T + 900),
        agent_turn(""),
        agent_turn("For how many?"),
    ) == [(900.0, "", "For how many?")]


def test_turns_without_start_and_end_are_timed_by_their_words():
    def worded(role, text, *words):
        return event("turn", {"role": role, "text": text, "words": [list(w) for w in words]})

    assert samples(
        worded("user", "book a table", ("book", 0, 300), ("a", 320, 400), ("table", 420, 900)),
        worded("agent", "For how many?", ("for", 1600, 1800), ("how", 1800, 2000), ("many", 2000, 2400)),
    ) == [(700.0, "book a table", "For how many?")]


def test_a_reply_left_without_text_by_a_blank_turn_does_not_take_the_answer_to_the_next_question():
    assert samples(
        user_turn("Is the pool open?"),
        agent_heard_user_stop(T),
        agent_started(T + 900),
        agent_turn("   "),
        user_turn("And the gym?"),
        agent_heard_user_stop(T + 5000),
        agent_started(T + 5600),
        agent_turn("The gym opens at 6 am."),
    ) == [(900.0, "Is the pool open?", ""), (600.0, "And the gym?", "The gym opens at 6 am.")]
