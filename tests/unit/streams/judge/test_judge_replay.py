"""`callqa replay LOG --judge --record LOG2`: the judge is asked once, its answers are recorded, and
replaying LOG2 without judge or network gives the same results byte for byte."""

from __future__ import annotations

import itertools
import json
import signal
import time
from pathlib import Path

import msgspec
import pytest

from streams.cli.main import main
from tests.helpers.eventkit import T0, event
from tests.helpers.fake_llm_server import (
    EVALUATION_SCHEMA_NAME,
    QA_SCHEMA_NAME,
    FakeLlm,
)
from tests.helpers.judgekit import API_KEY, EVALUATION_ANSWER, QA_ANSWER, judged_call

# The replay's jobs are forked while this test process runs its fake judge server's thread, which
# CPython 3.12 and later warn of; a command run from a shell has no such thread when it forks.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:This process \(pid=\d+\) is multi-threaded, use of fork\(\) may lead to deadlocks:DeprecationWarning"
)

LLM_METRICS = ("hallucination", "kb_recall", "naturalness", "tool_call_accuracy", "transition_accuracy")


def write_log(path: Path) -> None:
    calls = [
        judged_call("c-eval", start=T0),  # the scenario asks for the evaluation judge too
        judged_call("c-prod", scenario={"name": "production"}, start=T0 + 100),
        judged_call("c-open", scenario={"name": "never ends"}, start=T0 + 200)[:-1],  # swept at the end of input
        judged_call("c-pre", scenario={"name": "pre-judged"}, user_text="PRE-RECORDED caller", start=T0 + 300),
    ]
    events = sorted((e for call in calls for e in call), key=lambda e: e.ts_ms)
    events.append(
        event(
            "judge.result",
            {"model": "earlier", "qa": {"kb_recall": {"score": 12, "reason": "old"}}},
            call_id="c-pre",
            ts_ms=T0 + 300 + 6_000,
            event_id="c-pre:judge",
        )
    )
    lines = [msgspec.json.encode(e).decode() for e in events]
    lines.insert(3, "this is not an event")
    path.write_text("\n".join(lines) + "\n")


def results(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def latest(rows: list[dict]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for row in rows:
        known = out.get(row["call_id"], {"version": 0})
        out[row["call_id"]] = row if row["version"] >= known["version"] else out[row["call_id"]]
    return out


def judge_of(row: dict, name: str) -> str:
    (entry,) = [m for m in row["metrics"] if m["metric"] == name]
    return entry["details"]["judge"]


@pytest.fixture
def judge_env(monkeypatch):
    def configure(base_url: str) -> None:
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        monkeypatch.setenv("CALLQA_JUDGE_TIMEOUT_S", "2")
        monkeypatch.setenv("CALLQA_JUDGE_RETRIES", "0")

    monkeypatch.delenv("CALLQA_CONFIG", raising=False)
    return configure


def test_replaying_the_recorded_log_without_the_server_reproduces_every_result(tmp_path, judge_env):
    log, log2 = tmp_path / "calls.jsonl", tmp_path / "judged.jsonl"
    judged, replayed = tmp_path / "judged-results.jsonl", tmp_path / "replayed-results.jsonl"
    write_log(log)
    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER) as fake:
        judge_env(fake.base_url)
        assert main(["replay", str(log), "--out", str(judged), "--judge", "--record", str(log2)]) == 0
    # The server is gone; the key is still set, and plain replay must not need it.
    assert main(["replay", str(log2), "--out", str(replayed)]) == 0
    assert replayed.read_bytes() == judged.read_bytes()

    final = latest(results(judged))
    assert {call: {judge_of(row, m) for m in LLM_METRICS} for call, row in final.items()} == {
        "c-eval": {"llm"},
        "c-prod": {"llm"},
        "c-open": {"llm"},
        "c-pre": {"heuristic", "llm"},  # its earlier answer rated kb_recall only
    }
    assert final["c-eval"]["evaluation"]["judge_score"] == 0.8
    assert "judge_score" not in final["c-prod"]["evaluation"]
    assert [r["version"] for r in results(judged) if r["call_id"] == "c-open"] == [1, 2]


def test_the_judge_is_asked_once_per_call_without_a_recorded_answer(tmp_path, judge_env):
    log = tmp_path / "calls.jsonl"
    write_log(log)
    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER) as fake:
        judge_env(fake.base_url)
        main(
            ["replay", str(log), "--out", str(tmp_path / "r.jsonl"), "--judge", "--record", str(tmp_path / "l2.jsonl")]
        )
    qa_contents = [r["messages"][1]["content"] for r in fake.received(QA_SCHEMA_NAME)]
    assert len(qa_contents) == 3 and not any("PRE-RECORDED" in c for c in qa_contents)
    assert len(fake.received(EVALUATION_SCHEMA_NAME)) == 1  # only c-eval's scenario asks for it


def test_each_judge_answer_follows_the_record_where_its_call_ended(tmp_path, judge_env):
    log, log2 = tmp_path / "calls.jsonl", tmp_path / "judged.jsonl"
    write_log(log)
    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER) as fake:
        judge_env(fake.base_url)
        main(["replay", str(log), "--out", str(tmp_path / "r.jsonl"), "--judge", "--record", str(log2)])
    original = log.read_text().splitlines()
    recorded = log2.read_text().splitlines()
    added = [(i, json.loads(line)) for i, line in enumerate(recorded) if line not in original]
    assert [(e["type"], e["call_id"]) for _, e in added] == [
        ("judge.result", "c-eval"),
        ("judge.result", "c-prod"),
        ("call.ended", "c-open"),
        ("judge.result", "c-open"),
    ]
    for i, e in added:
        if e["type"] == "judge.result":
            previous = json.loads(recorded[i - 1])
            assert (previous["type"], previous["call_id"]) == ("call.ended", e["call_id"])
            assert e["ts_ms"] == previous["ts_ms"] + 1 and e["event_id"] == f"{e['call_id']}:judge"
    assert [line for line in recorded if line in original] == original  # every original record, in order


def test_record_without_judge_adds_only_the_sweep_and_replays_to_the_same_results(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    log, log2 = tmp_path / "calls.jsonl", tmp_path / "swept.jsonl"
    write_log(log)
    assert main(["replay", str(log), "--out", str(tmp_path / "a.jsonl")]) == 0
    assert main(["replay", str(log), "--out", str(tmp_path / "b.jsonl"), "--record", str(log2)]) == 0
    assert main(["replay", str(log2), "--out", str(tmp_path / "c.jsonl")]) == 0
    a, b, c = ((tmp_path / name).read_bytes() for name in ("a.jsonl", "b.jsonl", "c.jsonl"))
    assert a == b == c
    assert len(log2.read_text().splitlines()) == len(log.read_text().splitlines()) + 1  # c-open's sweep


def test_recording_a_recorded_log_again_writes_the_same_log(tmp_path, monkeypatch):
    from streams.partitioning import partition_for

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    log, log2, log3 = tmp_path / "calls.jsonl", tmp_path / "log2.jsonl", tmp_path / "log3.jsonl"
    write_log(log)
    # A call far later on c-open's partition: c-open is swept mid-log, right after it.
    late = next(f"late-{i}" for i in range(100) if partition_for(f"late-{i}", 4) == partition_for("c-open", 4))
    with open(log, "a") as handle:
        late_start = event("call.started", {"agent_id": "a1"}, call_id=late, ts_ms=T0 + 600_000)
        handle.write(msgspec.json.encode(late_start).decode() + "\n")
    assert main(["replay", str(log), "--out", str(tmp_path / "a.jsonl"), "--record", str(log2)]) == 0
    sweep = [n for n, line in enumerate(log2.read_text().splitlines()) if "c-open:inactivity-timeout" in line]
    assert len(sweep) == 1 and sweep[0] < len(log2.read_text().splitlines()) - 1  # not the end of input's
    assert main(["replay", str(log2), "--out", str(tmp_path / "b.jsonl"), "--record", str(log3)]) == 0
    assert log3.read_bytes() == log2.read_bytes()
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def test_judge_without_a_key_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    log = tmp_path / "calls.jsonl"
    write_log(log)
    assert (
        main(
            ["replay", str(log), "--out", str(tmp_path / "r.jsonl"), "--judge", "--record", str(tmp_path / "l2.jsonl")]
        )
        == 2
    )
    assert "--judge needs OPENAI_API_KEY" in capsys.readouterr().err


def test_judge_without_record_is_refused(tmp_path, judge_env, capsys):
    judge_env("http://127.0.0.1:9")
    log = tmp_path / "calls.jsonl"
    write_log(log)
    assert main(["replay", str(log), "--out", str(tmp_path / "r.jsonl"), "--judge"]) == 2
    assert "--judge needs --record LOG2" in capsys.readouterr().err


def test_record_keeps_the_logs_format(tmp_path, capsys):
    log = tmp_path / "calls.jsonl"
    write_log(log)
    assert main(["replay", str(log), "--out", str(tmp_path / "r.jsonl"), "--record", str(tmp_path / "l2.msgpack")]) == 2
    assert "--record must have the format of the log" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["out", "rules"])
def test_an_output_that_cannot_be_written_or_bad_rules_fail_before_the_judge_is_paid(tmp_path, judge_env, capsys, bad):
    log, log2 = tmp_path / "calls.jsonl", tmp_path / "judged.jsonl"
    write_log(log)
    rules = tmp_path / "rules.toml"
    rules.write_text("not toml at all" if bad == "rules" else "")
    out = tmp_path / "missing-dir" / "r.jsonl" if bad == "out" else tmp_path / "r.jsonl"
    alerts = ["--rules", str(rules), "--alerts-out", str(tmp_path / "alerts.jsonl")] if bad == "rules" else []
    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER) as fake:
        judge_env(fake.base_url)
        code = main(["replay", str(log), "--out", str(out), "--judge", "--record", str(log2), *alerts])
    assert code == 2 and fake.requests == []
    assert ("cannot write" if bad == "out" else "not valid TOML") in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calls.jsonl", "rules.toml"]


def test_recording_tells_how_far_it_has_read_and_judged(tmp_path, judge_env):
    from streams.config import load_settings
    from streams.judge.offline import RecordProgress, record_log
    from streams.wiring import build_engine

    log = tmp_path / "calls.jsonl"
    write_log(log)
    told: list[tuple[str, int]] = []
    progress = RecordProgress(
        on_record=lambda size: told.append(("record", size)),
        on_judging=lambda calls: told.append(("judging", calls)),
        on_judged=lambda: told.append(("judged", 1)),
    )
    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER) as fake:
        judge_env(fake.base_url)
        settings = load_settings()
        record_log(
            str(log), str(tmp_path / "l2.jsonl"), settings, build_engine(settings), judge=True, progress=progress
        )
    records = len(log.read_text().splitlines())
    assert [kind for kind, _ in told] == ["record"] * records + ["judging"] + ["judged"] * 3
    assert told[records] == ("judging", 3)  # c-eval, c-prod and c-open: c-pre has its answer


def test_a_replay_failing_after_the_recording_says_the_recorded_log_is_complete(
    tmp_path, judge_env, capsys, monkeypatch
):
    log, log2 = tmp_path / "calls.jsonl", tmp_path / "judged.jsonl"
    write_log(log)

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("streams.replay.parallel.replay_log", disk_full)
    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER) as fake:
        judge_env(fake.base_url)
        code = main(["replay", str(log), "--out", str(tmp_path / "r.jsonl"), "--judge", "--record", str(log2)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{log2} is complete: `callqa replay {log2} --out …` scores it without recording it again" in err
    assert log2.is_file() and not (tmp_path / "r.jsonl").exists()


def test_outputs_failing_as_they_are_finished_after_the_recording_say_the_recorded_log_is_complete(tmp_path, capsys):
    # A full disk refuses the dead letters' last bytes when the outputs are put in place.
    log, log2 = tmp_path / "calls.jsonl", tmp_path / "log2.jsonl"
    write_log(log)
    code = main(
        ["replay", str(log), "--out", str(tmp_path / "r.jsonl"), "--deadletter", "/dev/full", "--record", str(log2)]
    )
    err = capsys.readouterr().err
    assert code == 2 and "No space left on device" in err and f"{log2} is complete" in err
    assert log2.is_file() and not (tmp_path / "r.jsonl").exists()


DAY_MS = 86_400_000
# (All on one partition: the second day's calls move the time of `x`'s partition, and `x` is forgotten.)
ONE_PARTITION = ("--partitions", "1")


def a_call_id_taken_up_again(path: Path) -> None:
    """Call `x` swept on day one; a day later (two calls say so), after `x` was forgotten, `x` is
    taken up again as a new call and is still open, beside `y`, when the log ends."""
    day2 = T0 + DAY_MS + 3_600_000
    events = [
        event("call.started", {"agent_id": "a1"}, call_id="x", ts_ms=T0, event_id="x:1"),
        event("turn", {"role": "agent", "text": "Hello, this is the first call."}, call_id="x", ts_ms=T0 + 1_000),
        event("call.started", {"agent_id": "a1"}, call_id="z", ts_ms=T0 + 200_000),
        event("call.ended", {"stop_reason": "[EXIT]"}, call_id="z", ts_ms=T0 + 200_001),
        event("call.started", {"agent_id": "a1"}, call_id="w", ts_ms=day2),
        event("call.ended", {"stop_reason": "[EXIT]"}, call_id="w", ts_ms=day2 + 1),
        event("call.started", {"agent_id": "a1"}, call_id="v", ts_ms=day2 + 2),
        event("call.ended", {"stop_reason": "[EXIT]"}, call_id="v", ts_ms=day2 + 3),
        event("call.started", {"agent_id": "a1"}, call_id="x", ts_ms=day2 + 100, event_id="x:b1"),
        event("turn", {"role": "agent", "text": "A second call, other words."}, call_id="x", ts_ms=day2 + 1_000),
        event("call.started", {"agent_id": "a1"}, call_id="y", ts_ms=day2 + 1_001),
    ]
    path.write_text("".join(msgspec.json.encode(e).decode() + "\n" for e in events))


def test_a_call_id_taken_up_again_is_swept_in_the_recorded_log_like_any_call(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    day_one, log, log2 = tmp_path / "day1.jsonl", tmp_path / "calls.jsonl", tmp_path / "log2.jsonl"
    a_call_id_taken_up_again(log)
    lines = log.read_text().splitlines(keepends=True)
    # Day one recorded first (its sweep of `x` in it), then the next day's traffic appended.
    day_one.write_text("".join(lines[:4]))
    assert (
        main(
            [
                "replay",
                str(day_one),
                *ONE_PARTITION,
                "--out",
                str(tmp_path / "d1.jsonl"),
                "--record",
                str(tmp_path / "d1r.jsonl"),
            ]
        )
        == 0
    )
    log.write_text((tmp_path / "d1r.jsonl").read_text() + "".join(lines[4:]))

    assert main(["replay", str(log), *ONE_PARTITION, "--out", str(tmp_path / "a.jsonl")]) == 0
    assert main(["replay", str(log), *ONE_PARTITION, "--out", str(tmp_path / "b.jsonl"), "--record", str(log2)]) == 0
    assert main(["replay", str(log2), *ONE_PARTITION, "--out", str(tmp_path / "c.jsonl")]) == 0
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "c.jsonl").read_bytes()
    sweeps = [json.loads(line) for line in log2.read_text().splitlines() if "x:inactivity-timeout" in line]
    assert len(sweeps) == 2 and sweeps[0]["ts_ms"] < T0 + DAY_MS < sweeps[1]["ts_ms"]  # each `x` its own


def test_each_call_under_a_call_id_taken_up_again_is_judged_on_its_own_transcript(tmp_path, judge_env):
    log, log2 = tmp_path / "calls.jsonl", tmp_path / "judged.jsonl"
    a_call_id_taken_up_again(log)
    with FakeLlm({**QA_ANSWER, "criteria": []}) as fake:
        judge_env(fake.base_url)
        assert (
            main(
                [
                    "replay",
                    str(log),
                    *ONE_PARTITION,
                    "--out",
                    str(tmp_path / "r.jsonl"),
                    "--judge",
                    "--record",
                    str(log2),
                ]
            )
            == 0
        )
    asked = [r["messages"][1]["content"] for r in fake.received(QA_SCHEMA_NAME)]
    assert len(asked) == 6  # x, z, w, v, x again and y
    assert sum("first call" in text for text in asked) == 1 and sum("second call" in text for text in asked) == 1
    recorded = [json.loads(line) for line in log2.read_text().splitlines()]
    answers = [(i, e) for i, e in enumerate(recorded) if e["type"] == "judge.result" and e["call_id"] == "x"]
    assert len(answers) == 2
    for i, answer in answers:  # each right after the end of its own call
        ended = recorded[i - 1]
        assert (ended["type"], ended["call_id"], ended["ts_ms"] + 1) == ("call.ended", "x", answer["ts_ms"])


def test_calls_already_judged_are_counted_one_by_one_under_a_call_id_taken_up_again(tmp_path, monkeypatch):
    from streams.config import load_settings
    from streams.judge.offline import record_log
    from streams.wiring import build_engine

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("CALLQA_PARTITIONS", "1")
    day2 = T0 + DAY_MS + 3_600_000
    answer = {"model": "earlier", "qa": {"kb_recall": {"score": 12, "reason": "old"}}}
    events = []
    for start in (T0, day2 + 100):  # `x`, then `x` again a day later, each ended and judged in the log
        events += [
            event("call.started", {"agent_id": "a1"}, call_id="x", ts_ms=start),
            event("call.ended", {"stop_reason": "[EXIT]"}, call_id="x", ts_ms=start + 10),
            event("judge.result", answer, call_id="x", ts_ms=start + 11, event_id="x:judge"),
        ]
        if start == T0:  # two calls a day later bear the day out, and `x` is forgotten
            events += [event("call.started", {"agent_id": "a1"}, call_id=c, ts_ms=day2 + n) for n, c in enumerate("wv")]
    log = tmp_path / "calls.jsonl"
    log.write_text("".join(msgspec.json.encode(e).decode() + "\n" for e in events))
    settings = load_settings()
    report = record_log(str(log), str(tmp_path / "l2.jsonl"), settings, build_engine(settings))
    assert report.already_judged == 2


def signalled_on_the_third_question(signum: int):
    """A QA answer that, for the last of the three calls asked, sends this process `signum` half a
    second in (as Ctrl-C or `kill` would while it is asked), then answers too late to count."""
    import _thread

    asked = itertools.count(1)

    def answer(body: dict) -> dict:
        if next(asked) == 3:
            time.sleep(0.5)
            _thread.interrupt_main(signum)
            time.sleep(2)
        return QA_ANSWER

    return answer


@pytest.fixture
def ctrl_c_taken():
    """SIGINT as an interactive shell leaves it. A job a non-interactive shell starts in the
    background (`.ci/run &`, say) inherits SIGINT ignored, and the judging rightly keeps a signal the
    process was started ignoring ignored: there this test would see no Ctrl-C at all."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_judging_interrupted_keeps_the_answers_that_came_and_a_second_recording_asks_only_for_the_rest(
    tmp_path, judge_env, capsys, ctrl_c_taken
):
    log, partial, complete = tmp_path / "calls.jsonl", tmp_path / "partial.jsonl", tmp_path / "complete.jsonl"
    write_log(log)

    with FakeLlm(signalled_on_the_third_question(signal.SIGINT), EVALUATION_ANSWER) as fake:
        judge_env(fake.base_url)
        assert (
            main(["replay", str(log), "--out", str(tmp_path / "r.jsonl"), "--judge", "--record", str(partial)]) == 130
        )
    err = capsys.readouterr().err
    assert "2 judge answers" in err and "asks only for the other 1 calls" in err
    answered = [
        json.loads(line)["call_id"]
        for line in partial.read_text().splitlines()
        if line.startswith("{") and json.loads(line).get("type") == "judge.result"
    ]
    assert len(answered) == 3 and "c-pre" in answered  # two of the three asked, and c-pre's, in the log already
    assert not (tmp_path / "r.jsonl").exists()

    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER) as fake:
        judge_env(fake.base_url)
        assert (
            main(
                ["replay", str(partial), "--out", str(tmp_path / "resumed.jsonl"), "--judge", "--record", str(complete)]
            )
            == 0
        )
        assert len(fake.received(QA_SCHEMA_NAME)) == 1
        assert (
            main(
                [
                    "replay",
                    str(log),
                    "--out",
                    str(tmp_path / "once.jsonl"),
                    "--judge",
                    "--record",
                    str(tmp_path / "once-log.jsonl"),
                ]
            )
            == 0
        )
    assert (tmp_path / "resumed.jsonl").read_bytes() == (tmp_path / "once.jsonl").read_bytes()


def test_recorded_errors_are_asked_again_on_request_and_their_answers_take_the_errors_place(
    tmp_path, judge_env, capsys
):
    log, failed, retried = tmp_path / "calls.jsonl", tmp_path / "failed.jsonl", tmp_path / "retried.jsonl"
    write_log(log)
    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER, mode="error") as fake:  # an outage: every request fails
        judge_env(fake.base_url)
        assert main(["replay", str(log), "--out", str(tmp_path / "r.jsonl"), "--judge", "--record", str(failed)]) == 0
    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER) as fake:
        judge_env(fake.base_url)
        # Without the flag a recorded error is an answer: nothing is asked.
        assert (
            main(
                [
                    "replay",
                    str(failed),
                    "--out",
                    str(tmp_path / "again.jsonl"),
                    "--judge",
                    "--record",
                    str(tmp_path / "same.jsonl"),
                ]
            )
            == 0
        )
        assert fake.received(QA_SCHEMA_NAME) == []
        assert (
            main(
                [
                    "replay",
                    str(failed),
                    "--out",
                    str(tmp_path / "retried-results.jsonl"),
                    "--judge",
                    "--retry-judge-errors",
                    "--record",
                    str(retried),
                ]
            )
            == 0
        )
        assert len(fake.received(QA_SCHEMA_NAME)) == 3  # c-pre's answer, recorded in the log, stands
        assert (
            main(
                [
                    "replay",
                    str(log),
                    "--out",
                    str(tmp_path / "once.jsonl"),
                    "--judge",
                    "--record",
                    str(tmp_path / "once-log.jsonl"),
                ]
            )
            == 0
        )
    assert "3 recorded errors asked again" in capsys.readouterr().err
    assert (tmp_path / "retried-results.jsonl").read_bytes() == (tmp_path / "once.jsonl").read_bytes()
    assert retried.read_bytes() == (tmp_path / "once-log.jsonl").read_bytes()


def test_retrying_judge_errors_without_the_judge_is_refused(tmp_path, capsys):
    log = tmp_path / "calls.jsonl"
    write_log(log)
    assert (
        main(
            [
                "replay",
                str(log),
                "--out",
                str(tmp_path / "r.jsonl"),
                "--retry-judge-errors",
                "--record",
                str(tmp_path / "l2.jsonl"),
            ]
        )
        == 2
    )
    assert "--retry-judge-errors needs --judge" in capsys.readouterr().err


def write_mid_log_sweeps(path: Path) -> None:
    """On one partition: two calls swept in the middle of the log by the calls after them."""
    calls = [
        judged_call("c-open", scenario={"name": "never ends"}, user_text="Hi, I am caller c-open.", start=T0)[:-1],
        judged_call("c-open2", scenario={"name": "never ends 2"}, user_text="Hi, I am caller c-open2.", start=T0 + 50)[
            :-1
        ],
        # Two calls as far on bear the leap out: the partition's time moves, and the two are swept.
        judged_call("c-late", scenario={"name": "late"}, start=T0 + 900_000),
        judged_call("c-later", scenario={"name": "later"}, start=T0 + 900_100),
    ]
    events = sorted((e for call in calls for e in call), key=lambda e: e.ts_ms)
    path.write_text("\n".join(msgspec.json.encode(e).decode() for e in events) + "\n")


def test_retrying_the_error_of_a_call_swept_mid_log_writes_its_answer_after_its_recorded_sweep(
    tmp_path, judge_env, monkeypatch, capsys
):
    # The recorded log holds the sweep's end as a record of its own: decided again on the way, the
    # answer went right after the record that caused it, before the sweep's end and before the
    # answer of a call swept with it, and neither LOG3 nor its results were those of one recording.
    monkeypatch.setenv("CALLQA_PARTITIONS", "1")
    log = tmp_path / "calls.jsonl"
    write_mid_log_sweeps(log)
    outage = [True]

    def answer(body: dict) -> object:
        return "not json" if outage[0] and "caller c-open2." in json.dumps(body) else QA_ANSWER

    with FakeLlm(answer, EVALUATION_ANSWER) as fake:
        judge_env(fake.base_url)
        run = lambda source, out, record, *flags: main(  # noqa: E731
            ["replay", str(source), "--out", str(tmp_path / out), "--judge", *flags, "--record", str(tmp_path / record)]
        )
        assert run(log, "failed.res", "failed.jsonl") == 0
        outage[0] = False
        assert run(tmp_path / "failed.jsonl", "retried.res", "retried.jsonl", "--retry-judge-errors") == 0
        assert run(log, "once.res", "once.jsonl") == 0
    assert (tmp_path / "retried.jsonl").read_bytes() == (tmp_path / "once.jsonl").read_bytes()
    assert (tmp_path / "retried.res").read_bytes() == (tmp_path / "once.res").read_bytes()


def test_a_recorded_error_of_a_call_not_asked_again_stays_and_is_not_counted(tmp_path, judge_env, capsys):
    log, retried = tmp_path / "calls.jsonl", tmp_path / "retried.jsonl"
    write_log(log)
    ghost = msgspec.json.encode(
        event(
            "judge.result",
            {"model": "m", "qa": {"error": "HTTP 500"}},
            call_id="ghost",
            ts_ms=T0 + 9_000,
            event_id="ghost:judge",
        )
    ).decode()
    log.write_text(log.read_text() + ghost + "\n")  # the error of a call that never started
    with FakeLlm(QA_ANSWER, EVALUATION_ANSWER) as fake:
        judge_env(fake.base_url)
        assert (
            main(
                [
                    "replay",
                    str(log),
                    "--out",
                    str(tmp_path / "r.jsonl"),
                    "--judge",
                    "--retry-judge-errors",
                    "--record",
                    str(retried),
                    "--deadletter",
                    str(tmp_path / "dead.jsonl"),
                ]
            )
            == 0
        )
    err = capsys.readouterr().err
    assert "recorded errors asked again" not in err
    assert ghost in retried.read_text().splitlines()
    assert any(json.loads(line)["call_id"] == "ghost" for line in (tmp_path / "dead.jsonl").read_text().splitlines())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])  # (SIGHUP: a closed terminal)
def test_judging_stopped_by_sigterm_is_said_to_be_terminated_and_ends_as_sigterm_does(
    tmp_path, judge_env, capsys, signum
):
    log, partial = tmp_path / "calls.jsonl", tmp_path / "partial.jsonl"
    write_log(log)
    with FakeLlm(signalled_on_the_third_question(signum), EVALUATION_ANSWER) as fake:
        judge_env(fake.base_url)
        assert (
            main(["replay", str(log), "--out", str(tmp_path / "r.jsonl"), "--judge", "--record", str(partial)]) == 143
        )
    err = capsys.readouterr().err
    assert "terminated while judging" in err and err.rstrip().endswith("callqa: terminated")
    assert partial.exists()


def test_while_the_answers_of_an_interrupted_judging_are_written_no_stop_signal_can_throw_them_away():
    # A closed terminal often sends SIGHUP twice: the second, arriving while LOG2 was written, lost it.
    from streams.judge.offline import _HeldSignals

    def handler(signum, frame):
        raise AssertionError("not while held")

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        held = _HeldSignals()
        held.hold()
        assert {signal.getsignal(signum) for signum in previous} == {signal.SIG_IGN}
        held.release()
        assert {signal.getsignal(signum) for signum in previous} == {handler}
    finally:
        for signum, found in previous.items():
            signal.signal(signum, found)
