"""What a user sees when a command cannot do its job: one `callqa: …` line and exit code 2 — never a
traceback, never a destroyed input, never a partial output left as if complete."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import time

import pytest

from models.wire import encode_event
from streams.cli.main import main
from streams.config import load_settings
from streams.kafka.embedded_broker import free_port
from tests.helpers.eventkit import event
from tests.helpers.paths import REPO

SAMPLE_LOG = REPO / "samples" / "calls.jsonl"


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def test_an_output_naming_the_log_is_refused_before_anything_is_written(tmp_path, capsys):
    log = tmp_path / "in.jsonl"
    log.write_bytes(SAMPLE_LOG.read_bytes())
    for option in ("--out", "--deadletter", "--record"):
        outputs = {"--out": str(tmp_path / "o.jsonl"), option: str(log)}
        code, err = run(capsys, "replay", str(log), "--jobs", "1", *[part for pair in outputs.items() for part in pair])
        assert code == 2 and f"{option} {log} is the file read as LOG" in err
        assert log.read_bytes() == SAMPLE_LOG.read_bytes()
    code, err = run(
        capsys,
        "replay",
        str(log),
        "--out",
        str(tmp_path / "same.jsonl"),
        "--deadletter",
        str(tmp_path / "same.jsonl"),
        "--jobs",
        "1",
    )
    assert code == 2 and "is the same file as --out" in err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_replay_that_fails_midway_leaves_the_earlier_output_as_it_was_and_no_partial_file(tmp_path, capsys, jobs):
    log = tmp_path / "log.msgpack"
    log.write_bytes(
        b"".join(encode_event(event("call.started", {"agent_id": "a"}, call_id=f"c{i}")) for i in range(50))
    )
    out = tmp_path / "results.jsonl"
    out.write_bytes(b"an earlier complete output\n")
    # The disk fills up midway: no file may grow past 20 kB (the results come to some 140 kB).
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    ignored = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # (else the kernel kills the writer)
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, limit[1]))
    try:
        code, err = run(capsys, "replay", str(log), "--out", str(out), "--jobs", jobs)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        signal.signal(signal.SIGXFSZ, ignored)
    assert code == 2 and "File too large" in err
    assert out.read_bytes() == b"an earlier complete output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.msgpack", "results.jsonl"]


def test_an_output_in_a_missing_directory_fails_before_the_replay_naming_the_file(tmp_path, capsys):
    target = tmp_path / "missing" / "dl.jsonl"
    code, err = run(capsys, "replay", str(SAMPLE_LOG), "--out", str(tmp_path / "o.jsonl"), "--deadletter", str(target))
    assert code == 2 and f"cannot write {target}" in err and not (tmp_path / "o.jsonl").exists()
    code, err = run(capsys, "replay", str(SAMPLE_LOG), "--out", str(tmp_path / "o.jsonl"), "--record", str(target))
    assert code == 2 and f"cannot write {target}" in err


def test_missing_files_and_directories_are_one_line_errors(tmp_path, capsys):
    for argv in (
        ["replay", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o.jsonl")],
        ["replay", str(tmp_path), "--out", str(tmp_path / "o.jsonl")],
        ["summary", "r1", "--results", str(tmp_path / "nope.jsonl")],
    ):
        code, err = run(capsys, *argv)
        assert code == 2 and err.startswith("callqa: ") and "Traceback" not in err, argv
        assert sorted(p.name for p in tmp_path.iterdir()) == [], argv  # not even a partial output


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("[1, 2]", "is not a result document (a JSON object)"),
        ('{"run_id": "eval_20251006_0900"}', "is not a result document: Object missing required field `call_id`"),
        ('{"version": 1e400}', "is not a result document: Expected `int`, got `float` - at `$.version`"),
    ],
)
@pytest.mark.parametrize("command", ["summary", "export"])
def test_a_results_line_that_is_not_a_result_document_is_named(tmp_path, capsys, line, problem, command):
    results = tmp_path / "results.jsonl"
    assert main(["replay", str(SAMPLE_LOG), "--out", str(results), "--jobs", "1"]) == 0
    lines = results.read_text().splitlines()
    results.write_text("\n".join(lines[:3] + [line] + lines[3:]) + "\n")
    capsys.readouterr()
    target = [str(tmp_path / "export")] if command == "export" else []
    code, err = run(capsys, command, "eval_20251006_0900", *target, "--results", str(results))
    assert code == 2 and f"{results} line 4 {problem}" in err and "Traceback" not in err
    assert not (tmp_path / "export").exists()


def test_a_result_whose_evaluation_is_no_object_is_named(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    assert main(["replay", str(SAMPLE_LOG), "--out", str(results), "--jobs", "1"]) == 0
    document = json.loads(results.read_text().splitlines()[0])
    document["evaluation"] = "str"
    results.write_text(json.dumps(document) + "\n")
    capsys.readouterr()
    code, err = run(capsys, "summary", "eval_20251006_0900", "--results", str(results))
    assert code == 2
    assert f"{results} line 1 is not a result document: Expected `object`, got `str` - at `$.evaluation`" in err


def test_an_export_into_a_directory_holding_anything_is_refused_and_changes_nothing(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    assert main(["replay", str(SAMPLE_LOG), "--out", str(results), "--jobs", "1"]) == 0
    target = tmp_path / "export"
    assert main(["export", "eval_20251006_0900", str(target), "--results", str(results)]) == 0
    before = sorted(p.relative_to(target) for p in target.rglob("*"))
    capsys.readouterr()
    code, err = run(capsys, "export", "eval_20251006_0900", str(target), "--results", str(results))
    assert code == 2 and f"{target} is not empty: export a run into a new or empty directory" in err
    assert sorted(p.relative_to(target) for p in target.rglob("*")) == before
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["export", "eval_20251006_0900", str(empty), "--results", str(results)]) == 0


def test_a_negative_floor_of_agent_turns_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["summary", "r1", "--results", str(tmp_path / "r.jsonl"), "--min-agent-turns", "-5"])
    assert exited.value.code == 2 and "--min-agent-turns: must be 0 or more, got -5" in capsys.readouterr().err


def test_ctrl_c_is_one_line_and_exit_code_130_and_leaves_no_output(tmp_path, capsys, monkeypatch):
    import streams.replay.parallel

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(streams.replay.parallel, "replay_log", interrupted)
    code, err = run(capsys, "replay", str(SAMPLE_LOG), "--out", str(tmp_path / "o.jsonl"))
    assert (code, err.strip().splitlines()[-1]) == (130, "callqa: interrupted")
    assert list(tmp_path.iterdir()) == []


def test_a_closed_terminal_s_sighup_stops_a_command_as_sigterm_does_leaving_no_output(tmp_path, capsys, monkeypatch):
    """Python's default for SIGHUP ends the process at once, its temporary files and children left behind."""
    import streams.replay.parallel

    def hung_up(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(5)

    previous = signal.getsignal(signal.SIGHUP)
    monkeypatch.setattr(streams.replay.parallel, "replay_log", hung_up)
    try:
        code, err = run(capsys, "replay", str(SAMPLE_LOG), "--out", str(tmp_path / "o.jsonl"))
    finally:
        signal.signal(signal.SIGHUP, previous)
    assert (code, err.strip().splitlines()[-1]) == (143, "callqa: terminated")
    assert list(tmp_path.iterdir()) == []


def test_a_bench_report_that_cannot_be_written_fails_before_the_run_not_after_it(tmp_path, capsys, monkeypatch):
    import tempfile

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))  # (where a run would make its working directory)
    code, err = run(capsys, "bench", "--quick", "--out", str(tmp_path / "missing" / "report.json"))
    assert code == 2 and "cannot write" in err and "report.json" in err
    assert list(work.iterdir()) == []  # no run was started


def test_a_worker_whose_web_port_is_taken_says_so_in_one_line_before_starting(capsys, monkeypatch):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv("CALLQA_WEB_PORT", str(port))
        code, err = run(capsys, "worker", "--broker", "tansu://127.0.0.1:1")
    assert code == 2 and err.strip() == (
        f"callqa: the HTTP API's port 127.0.0.1:{port} is in use: another worker "
        "may run there; give it a free port (--web-port, or CALLQA_WEB_PORT)"
    )
    monkeypatch.delenv("CALLQA_WEB_PORT")
    with socket.socket() as taken:  # the option names the port as the setting does, and goes before it
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv("CALLQA_WEB_PORT", "1")
        for command in (["worker", "--broker", "tansu://127.0.0.1:1"], ["up", "--port", str(free_port())]):
            code, err = run(capsys, *command, "--web-port", str(port))
            assert code == 2 and f"the HTTP API's port 127.0.0.1:{port} is in use" in err
    broker_port = free_port()
    code, err = run(capsys, "up", "--port", str(broker_port), "--web-port", str(broker_port))
    assert code == 2 and f"the broker and the HTTP API cannot share port {broker_port}" in err


def test_up_refuses_a_taken_api_port_before_it_starts_a_broker(capsys, monkeypatch):
    import socket

    import streams.kafka.embedded_broker

    def no_broker(*args, **kwargs):
        raise AssertionError("a broker was started")

    monkeypatch.setattr(streams.kafka.embedded_broker.EmbeddedBroker, "start", no_broker)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = run(capsys, "up", "--port", str(free_port()), "--web-port", str(port))
    assert code == 2 and f"the HTTP API's port 127.0.0.1:{port} is in use" in err
    # Taken on IPv4 only, the port is free for a worker listening on IPv6 alone (as the web server binds it).
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setenv("CALLQA_WEB_PORT", str(taken.getsockname()[1]))
        monkeypatch.setenv("CALLQA_WEB_BIND", "::1")
        code, err = run(capsys, "worker", "--broker", "tansu://127.0.0.1:1")
    assert "HTTP API" not in err  # (it went on, to the broker it could not reach)
    monkeypatch.setenv("CALLQA_WEB_BIND", "192.0.2.1")  # (TEST-NET: no address of this machine)
    code, err = run(capsys, "worker", "--broker", "tansu://127.0.0.1:1")
    assert code == 2 and "the HTTP API cannot listen on 192.0.2.1:" in err and "set CALLQA_WEB_BIND" in err


def test_a_send_stopped_says_how_far_it_came_and_how_to_finish(capsys, monkeypatch):
    import streams.send.sender

    async def interrupted_send(records, settings, on_record=None, **options):
        for _ in range(3):
            on_record(100)
        raise KeyboardInterrupt

    monkeypatch.setattr(streams.send.sender, "send_log", interrupted_send)
    code, err = run(capsys, "send", str(SAMPLE_LOG), "--broker", "kafka://127.0.0.1:1")
    lines = err.strip().splitlines()
    assert code == 130 and lines[-1] == "callqa: interrupted"
    with open(SAMPLE_LOG) as sample:
        records = sum(1 for line in sample if line.strip())
    assert lines[-2].startswith(
        f"callqa: stopped after reading 3 of {records:,} records of the log, with no word "
        "that all it sent arrived; to finish, send the log again"
    )


def test_a_batch_size_below_one_is_refused_before_anything_is_sent(capsys):
    code, err = run(capsys, "send", str(SAMPLE_LOG), "--batch-size", "0", "--broker", "kafka://127.0.0.1:1")
    assert code == 2 and "--batch-size must be at least 1, got 0" in err


def test_partitions_must_be_at_least_one(tmp_path, capsys):
    code, err = run(capsys, "replay", str(SAMPLE_LOG), "--out", str(tmp_path / "o.jsonl"), "--partitions", "0")
    assert code == 2 and "partitions must be at least 1, got 0" in err
    code, err = run(capsys, "demo", "--partitions", "0")  # refused before any broker starts
    assert code == 2 and "partitions must be at least 1, got 0" in err


@pytest.mark.parametrize(
    "environ, message",
    [
        ({"CALLQA_PARTITIONS": "abc"}, "CALLQA_PARTITIONS: expected a whole number, got 'abc'"),
        ({"CALLQA_PARTITIONS": "-3"}, "partitions must be at least 1, got -3"),
        ({"CALLQA_RETENTION_AFTER_END_S": "inf"}, "CALLQA_RETENTION_AFTER_END_S: expected a finite number, got 'inf'"),
        ({"CALLQA_ALLOWED_LATENESS_MS": "-1"}, "allowed_lateness_ms must be at least 0, got -1"),
        ({"CALLQA_CONFIG": "/no/such/callqa.toml"}, "CALLQA_CONFIG /no/such/callqa.toml: No such file or directory"),
        ({"CALLQA_WEB_PORT": "70000"}, "web_port must be a port number (0 to 65535), got 70000"),
        ({"CALLQA_WEB_PORT": "-1"}, "web_port must be a port number (0 to 65535), got -1"),
        ({"CALLQA_LOG_LEVEL": "loud"}, "log_level must be one of debug, info, warning, error, critical, got 'loud'"),
        (
            {"CALLQA_JUDGE_RESPONSE_FORMAT": "JSON_OBJECT"},
            "judge_response_format must be one of json_schema, json_object, got 'JSON_OBJECT'",
        ),
        (
            {"CALLQA_BROKER": "foo://x:1"},
            "broker 'foo://x:1': unknown scheme 'foo://' (use one of kafka://, tansu://, aiokafka://, or host:port)",
        ),
        ({"CALLQA_BROKER": "kafka://a:9092;b"}, "broker 'kafka://a:9092;b': expected host:port, got 'b'"),
        ({"CALLQA_BROKER": "kafka://a:port"}, "expected host:port, got 'kafka://a:port'"),
        ({"CALLQA_BROKR": "kafka://a:9092"}, "unknown environment variable CALLQA_BROKR (did you mean CALLQA_BROKER?)"),
        ({"CALLQA_SASL_PASSWORD": "x"}, "CALLQA_SASL_PASSWORD (did you mean CALLQA_KAFKA_SASL_PASSWORD?)"),
        (
            {"CALLQA_KAFKA_SASL_USERNAME": "u", "CALLQA_KAFKA_SASL_PASSWORD": "p"},
            "kafka_sasl_username, kafka_sasl_password set, but kafka_security_protocol is PLAINTEXT, "
            "which does not use them",
        ),
        (
            {"CALLQA_KAFKA_SASL_MECHANISM": "PLAIN"},
            "kafka_sasl_mechanism set, but kafka_security_protocol is PLAINTEXT, which does not use it",
        ),
        ({"CALLQA_KAFKA_SECURITY_PROTOCOL": "SASL_SSL"}, "SASL_SSL needs kafka_sasl_username and kafka_sasl_password"),
        (
            {"CALLQA_KAFKA_SECURITY_PROTOCOL": "TLS"},
            "kafka_security_protocol must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
        ),
        (
            {
                "CALLQA_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
                "CALLQA_KAFKA_SASL_USERNAME": "u",
                "CALLQA_KAFKA_SASL_PASSWORD": "p",
                "CALLQA_KAFKA_SASL_MECHANISM": "GSSAPI",
            },
            "kafka_sasl_mechanism must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512",
        ),
        (
            {"CALLQA_KAFKA_SECURITY_PROTOCOL": "SSL", "CALLQA_KAFKA_SSL_CAFILE": "/no/such/ca.pem"},
            "kafka_ssl_cafile '/no/such/ca.pem': no such file",
        ),
        ({"CALLQA_STORE": "rockdb://"}, "store must be one of memory://, rocksdb://, aerospike://, got 'rockdb://'"),
        ({"CALLQA_TOPIC_PREFIX": "my team"}, "topic_prefix must be 1 to 200 letters, digits"),
        ({"CALLQA_APP_ID": "a/b"}, "app_id must be 1 to 200 letters, digits"),
        (
            {"CALLQA_ALERT_WEBHOOK_URL": "hooks.example.com/services/T0KEN"},
            "alert_webhook_url must be an http:// or https:// URL with a host, got 'hooks.example.com/…'",
        ),
        ({"CALLQA_REPLICATION_FACTOR": "0"}, "replication_factor must be at least 1, got 0"),
        (
            {"CALLQA_KAFKA_COMPRESSION": "brotli"},
            "kafka_compression must be one of none, gzip, snappy, lz4, zstd, got 'brotli'",
        ),
        ({"OPENAI_BASE_URL": "judge:8000/v1"}, "openai_base_url must be an http:// or https:// URL with a host"),
    ],
)
def test_settings_from_the_environment_are_checked_and_the_variable_named(environ, message):
    with pytest.raises(ValueError) as info:
        load_settings(environ)
    assert message in str(info.value)
    assert "T0KEN" not in str(info.value)  # (a webhook URL's path is shown cut)


def test_the_app_id_is_the_topic_prefix_unless_set_so_a_prefix_alone_keeps_deployments_apart():
    assert load_settings({}).app_name == "callqa"
    teama = load_settings({"CALLQA_TOPIC_PREFIX": "teama"})
    assert teama.app_name == "teama"
    assert teama.with_overrides(topic_prefix="teamb").app_name == "teamb"  # (`--topic-prefix`)
    assert load_settings({"CALLQA_TOPIC_PREFIX": "teama", "CALLQA_APP_ID": "callqa"}).app_name == "callqa"
    # The consumer groups and the changelog topics (Faust names them after its app id) follow it.
    from streams.alerts.webhook import WebhookPoster, WebhookRelay
    from streams.worker.app import faust_app

    replicated = teama.with_overrides(replication_factor=3)
    assert (faust_app(replicated).conf.id, faust_app(replicated).conf.topic_replication_factor) == ("teama", 3)
    assert WebhookRelay(teama, "teama.alerts", WebhookPoster("http://h/")).group_id == "teama-alert-webhook"


def test_the_compression_setting_reaches_every_producer_as_the_clients_spell_it():
    from streams.kafka.clients import producer
    from streams.worker.app import faust_app

    assert load_settings({}).compression_type is None
    zstd = load_settings({"CALLQA_KAFKA_COMPRESSION": "ZSTD"})
    assert zstd.compression_type == "zstd"
    assert faust_app(zstd).conf.producer_compression_type == "zstd"  # results, journal, dead letters

    async def plain_producer_codec() -> str:  # (aiokafka makes its producers inside a running loop)
        return producer(zstd)._compression_type

    assert asyncio.run(plain_producer_codec()) == "zstd"  # `send`, cohort and rule publishing


def test_an_optional_setting_set_but_empty_says_nothing(tmp_path):
    # (As a compose file's `${CALLQA_ALERT_WEBHOOK_URL:-}` leaves it where it is not set.)
    settings = load_settings({"CALLQA_ALERT_WEBHOOK_URL": "", "CALLQA_KAFKA_SSL_CAFILE": "", "CALLQA_WEB_BIND": ""})
    assert (settings.alert_webhook_url, settings.kafka_ssl_cafile, settings.web_bind) == (None, None, None)


def test_secured_settings_that_fit_together_are_taken(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("")
    settings = load_settings(
        {
            "CALLQA_KAFKA_SECURITY_PROTOCOL": "sasl_ssl",
            "CALLQA_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
            "CALLQA_KAFKA_SASL_USERNAME": "u",
            "CALLQA_KAFKA_SASL_PASSWORD": "p",
            "CALLQA_KAFKA_SSL_CAFILE": str(ca),
            "CALLQA_GC_THRESHOLDS": "700,10,10",
            "CALLQA_ALERT_WEBHOOK_URL": "https://hooks.example.com/services/T0KEN",
            "OPENAI_BASE_URL": "HTTP://[::1]:8000/v1",
        }
    )
    assert settings.kafka_sasl_username == "u" and settings.openai_base_url == "HTTP://[::1]:8000/v1"
    # Every Kafka client is given the mechanism as the clients spell it, whatever its case here.
    from streams.kafka.clients import connection_options
    from streams.worker.app import faust_broker_credentials

    lower = load_settings(
        {
            "CALLQA_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "CALLQA_KAFKA_SASL_MECHANISM": "scram-sha-512",
            "CALLQA_KAFKA_SASL_USERNAME": "u",
            "CALLQA_KAFKA_SASL_PASSWORD": "p",
        }
    )
    assert connection_options(lower)["sasl_mechanism"] == "SCRAM-SHA-512"
    assert faust_broker_credentials(lower).mechanism.name == "SCRAM_SHA_512"


@pytest.mark.parametrize(
    "url, shown, with_path",
    [
        ("http://user:PASSWORD@judge:8000/v1", "http://judge:8000/…", "http://judge:8000/v1"),
        (
            "https://hooks.example.com/services/T0KEN?key=K3Y",
            "https://hooks.example.com/…?…",
            "https://hooks.example.com/services/T0KEN?…",
        ),
        ("http://judge:8000", "http://judge:8000", "http://judge:8000"),
        ("http://user:p@ss@judge/v1", "http://judge/…", "http://judge/v1"),  # (the password ends at the last @)
        ("http://[::1]:8000/v1", "http://[::1]:8000/…", "http://[::1]:8000/v1"),
    ],
)
def test_a_url_is_shown_without_what_may_be_a_secret(url, shown, with_path):
    from streams.redaction import redacted_url

    assert (redacted_url(url), redacted_url(url, keep_path=True)) == (shown, with_path)


def test_the_worker_refuses_a_data_directory_it_cannot_write_before_creating_anything(tmp_path, capsys, monkeypatch):
    not_a_directory = tmp_path / "a-file"
    not_a_directory.write_text("")
    monkeypatch.setenv("CALLQA_DATA_DIR", str(not_a_directory / "data"))
    monkeypatch.setenv("CALLQA_BROKER", "tansu://127.0.0.1:1")  # (never asked: the check comes first)
    assert main(["worker"]) == 2
    assert "cannot be written: Not a directory" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv", [["broker", "--port", "-1"], ["up", "--port", "70000"], ["up", "--broker", "kafka://a:1"]]
)
def test_a_port_out_of_range_or_a_broker_for_up_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2


def test_every_numeric_setting_below_its_bound_is_refused_by_name():
    from streams.config import _AT_LEAST

    for name, low in _AT_LEAST.items():
        with pytest.raises(ValueError) as info:
            load_settings({f"CALLQA_{name.upper()}": str(int(low) - 1)})
        assert f"{name} must be at least {low:g}, got {int(low) - 1}" in str(info.value), name


def test_every_numeric_setting_above_its_bound_is_refused_by_name():
    from streams.config import _AT_MOST

    for name, high in _AT_MOST.items():
        with pytest.raises(ValueError) as info:
            load_settings({f"CALLQA_{name.upper()}": str(int(high) + 1)})
        assert f"{name} must be at most {high:.0f}, got {int(high) + 1}" in str(info.value), name


def test_a_secret_of_the_wrong_type_in_the_config_file_is_named_but_not_shown(tmp_path):
    config = tmp_path / "callqa.toml"
    config.write_text('kafka_sasl_password = 123456789\nopenai_api_key = ["sk-live-SECRET"]\n')
    with pytest.raises(ValueError) as info:
        load_settings({"CALLQA_CONFIG": str(config)})
    assert "not shown: a secret" in str(info.value)
    assert "123456789" not in str(info.value) and "SECRET" not in str(info.value)


def test_the_environment_wins_over_the_config_file_for_the_standard_openai_variables(tmp_path):
    config = tmp_path / "callqa.toml"
    config.write_text('openai_api_key = "sk-from-file"\nopenai_base_url = "http://file/v1"\n')
    environ = {"CALLQA_CONFIG": str(config), "OPENAI_API_KEY": "sk-from-env"}
    settings = load_settings(environ)
    assert (settings.openai_api_key, settings.openai_base_url) == ("sk-from-env", "http://file/v1")
    assert load_settings({**environ, "CALLQA_OPENAI_API_KEY": "sk-callqa"}).openai_api_key == "sk-callqa"
    # Set but empty (as `${OPENAI_API_KEY:-}` in a compose file is where it is not set): the file stands.
    empty = load_settings({"CALLQA_CONFIG": str(config), "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""})
    assert (empty.openai_api_key, empty.openai_base_url) == ("sk-from-file", "http://file/v1")


def test_the_edges_of_the_port_range_and_a_log_level_in_capitals_are_accepted():
    assert load_settings({"CALLQA_WEB_PORT": "65535", "CALLQA_LOG_LEVEL": "DEBUG"}).web_port == 65_535


@pytest.mark.parametrize(
    "line, message",
    [
        ("partitions = 2.9", "partitions: expected a whole number, got 2.9"),
        ("partitions = true", "partitions: expected a number, got True"),
        ('broker = { host = "a" }', "broker: expected text, got {'host': 'a'}"),
        ("judge_timeout_s = [1]", "judge_timeout_s: expected a number, got [1]"),
        ("partitions = ", "not valid TOML"),
    ],
)
def test_a_config_file_value_of_the_wrong_type_is_named_with_the_file(tmp_path, line, message):
    config = tmp_path / "callqa.toml"
    config.write_text(line + "\n")
    with pytest.raises(ValueError) as info:
        load_settings({"CALLQA_CONFIG": str(config)})
    assert message in str(info.value) and str(config) in str(info.value)


def test_a_truncated_msgpack_log_counts_its_cut_record_as_dead_lettered(tmp_path, capsys):
    records = [encode_event(event("call.started", {"agent_id": "a"}, call_id=f"c{i}")) for i in range(3)]
    log = tmp_path / "log.msgpack"
    log.write_bytes(b"".join(records)[:-4])
    dead = tmp_path / "dead.jsonl"
    code, err = run(
        capsys, "replay", str(log), "--out", str(tmp_path / "o.jsonl"), "--deadletter", str(dead), "--jobs", "1"
    )
    assert code == 0 and "replayed 3 records" in err and "1 dead-lettered" in err
    assert len(dead.read_text().splitlines()) == 1


def test_recording_a_truncated_msgpack_log_keeps_the_cut_record_last_so_it_swallows_nothing(tmp_path, capsys):
    records = [encode_event(event("call.started", {"agent_id": "a"}, call_id=f"c{i}")) for i in range(3)]
    log = tmp_path / "log.msgpack"
    log.write_bytes(b"".join(records)[:-4])
    recorded = tmp_path / "recorded.msgpack"
    code, _ = run(capsys, "replay", str(log), "--out", str(tmp_path / "o.jsonl"), "--record", str(recorded))
    assert code == 0
    dead = tmp_path / "dead.jsonl"
    code, err = run(capsys, "replay", str(recorded), "--out", str(tmp_path / "again.jsonl"), "--deadletter", str(dead))
    # The two calls that decode, their two sweep ends, then the cut record: one dead letter, as before.
    assert code == 0 and "replayed 5 records" in err and "1 dead-lettered" in err
    assert len(dead.read_text().splitlines()) == 1
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "o.jsonl").read_bytes()


def test_an_output_gets_the_mode_open_would_give_it_and_a_symbolic_link_is_written_through(tmp_path, capsys):
    import os
    import stat

    fresh = tmp_path / "fresh.jsonl"
    assert main(["replay", str(SAMPLE_LOG), "--out", str(fresh), "--jobs", "1"]) == 0
    probe = tmp_path / "probe"
    probe.write_bytes(b"")
    assert stat.S_IMODE(fresh.stat().st_mode) == stat.S_IMODE(probe.stat().st_mode)
    kept = tmp_path / "kept.jsonl"
    kept.write_bytes(b"old\n")
    kept.chmod(0o640)
    real = tmp_path / "real"
    real.mkdir()
    (real / "out.jsonl").write_bytes(b"old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real / "out.jsonl")
    for out in (kept, link):
        assert main(["replay", str(SAMPLE_LOG), "--out", str(out), "--jobs", "1"]) == 0
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_bytes() != b"old\n"
    assert os.path.islink(link) and (real / "out.jsonl").read_bytes() == fresh.read_bytes()


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("cohorts.json", '{"cohorts": ' + "[" * 5000, "not valid JSON"),
        ("cohorts.toml", "cohorts = " + "[" * 5000, "not valid TOML"),
        ("rules.json", '{"rules": ' + "[" * 5000, "not valid JSON"),
    ],
)
def test_a_configuration_file_nested_too_deeply_is_one_line_error(tmp_path, capsys, name, text, message):
    document = tmp_path / name
    document.write_text(text)
    flags = (
        ["--rules", str(document), "--alerts-out", str(tmp_path / "alerts.jsonl")]
        if name.startswith("rules")
        else ["--cohorts", str(document)]
    )
    code, err = run(capsys, "replay", str(SAMPLE_LOG), "--out", str(tmp_path / "o.jsonl"), *flags)
    assert code == 2 and err.startswith("callqa: ") and message in err and "Traceback" not in err


def test_a_results_line_nested_too_deeply_is_named(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    assert main(["replay", str(SAMPLE_LOG), "--out", str(results), "--jobs", "1"]) == 0
    results.write_text(results.read_text().splitlines()[0] + "\n" + "[" * 5000 + "\n")
    capsys.readouterr()
    code, err = run(capsys, "summary", "eval_20251006_0900", "--results", str(results))
    assert code == 2 and f"{results} line 2 is not JSON" in err


COHORT = '{"cohort_id": "billing", "name": "Billing", "metrics": [{"metric": "%s"}]}'


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("cohorts.json", '{"cohort": [%s]}' % (COHORT % "wer"), "expected a list under `cohorts`, found `cohort`"),
        ("cohorts.toml", '[[rules]]\nname = "r"\n', "expected [[cohorts]] tables, found `rules`"),
        ("cohorts.json", '{"cohorts": [%s], "extra": 1}' % (COHORT % "wer"), "unknown keys beside `cohorts`: `extra`"),
        ("cohorts.json", f"[{COHORT % 'wer'}, {COHORT % 'latency'}]", "cohort #2: cohort_id 'billing' is used twice"),
        ("cohorts.json", "[%s]" % (COHORT % "empathy"), "cohort #1: invalid cohort 'billing'"),
    ],
)
@pytest.mark.parametrize("command", ["replay", "publish"])
def test_a_cohorts_file_that_defines_nothing_or_one_cohort_twice_is_refused(
    tmp_path, capsys, name, text, message, command
):
    cohorts = tmp_path / name
    cohorts.write_text(text)
    out = tmp_path / "o.jsonl"
    if command == "replay":
        code, err = run(capsys, "replay", str(SAMPLE_LOG), "--out", str(out), "--cohorts", str(cohorts))
    else:  # refused before any connection: no broker listens on port 1
        code, err = run(capsys, "publish", "cohorts", str(cohorts), "--broker", "127.0.0.1:1")
    assert code == 2 and err.startswith(f"callqa: {cohorts}: {message}") and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize(
    "broker",
    [
        "kafka://a:9092",
        "tansu://127.0.0.1:9092",
        "aiokafka://a:1",
        "a:9092,b:9093",
        "kafka://a:9092;kafka://b:9092",
        "[::1]:9092",
    ],
)
def test_broker_urls_of_every_supported_form_are_taken(broker):
    assert load_settings({"CALLQA_BROKER": broker}).broker == broker


def test_output_to_a_reader_that_went_away_ends_quietly(tmp_path):
    import subprocess
    import sys

    results = tmp_path / "results.jsonl"
    assert main(["replay", str(SAMPLE_LOG), "--out", str(results), "--jobs", "1"]) == 0
    read, write = os.pipe()
    os.close(read)  # as `| head` does once it has read enough
    try:
        done = subprocess.run(
            [sys.executable, "-m", "streams.cli", "summary", "eval_20251006_0900", "--results", str(results), "--json"],
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    finally:
        os.close(write)
    assert done.returncode == 1 and done.stderr == b""


def test_the_stall_warning_states_each_scenarios_own_floor(tmp_path, capsys):
    # One of the sample's stalled scenarios has a floor of 3: the warning said "fewer than 2" of all three.
    # Without --min-agent-turns each keeps its own floor, one warning (in the harness's words) per floor.
    results = tmp_path / "results.jsonl"
    assert main(["replay", str(SAMPLE_LOG), "--out", str(results), "--jobs", "1"]) == 0
    capsys.readouterr()
    assert main(["summary", "eval_20251006_0900", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert (
        "WARNING: 2 scenario(s) had fewer than 2 agent turn(s) (likely stalled LLM / server hang) and were "
        "counted as failures.\nStalled scenarios: airline__baggage_008, retail__return_012\n"
        "WARNING: 1 scenario(s) had fewer than 3 agent turn(s) (likely stalled LLM / server hang) and were "
        "counted as failures.\nStalled scenarios: retail__exchange_011\n"
    ) in out
    # A run-wide floor is one floor for all, as the harness's flag.
    assert main(["summary", "eval_20251006_0900", "--results", str(results), "--min-agent-turns", "2"]) == 0
    assert (
        "WARNING: 3 scenario(s) had fewer than 2 agent turn(s) (likely stalled LLM / server hang) and were "
        "counted as failures.\nStalled scenarios: airline__baggage_008, retail__exchange_011, retail__return_012\n"
    ) in capsys.readouterr().out


def test_a_configuration_file_saved_with_a_byte_order_mark_is_read(tmp_path):
    config = tmp_path / "callqa.toml"
    config.write_bytes(b"\xef\xbb\xbfpartitions = 6\n")
    assert load_settings({"CALLQA_CONFIG": str(config)}).partitions == 6


@pytest.mark.parametrize(
    ("kind", "name", "text"),
    [
        ("cohorts", "cohorts.json", "[]"),
        ("cohorts", "cohorts.json", '{"cohorts": []}'),
        ("rules", "rules.toml", "rules = []\n"),
    ],
)
def test_a_file_that_defines_nothing_is_refused_before_any_broker_is_asked_or_any_call_scored(
    tmp_path, capsys, kind, name, text
):
    path = tmp_path / name
    path.write_text(text)
    code, err = run(capsys, "publish", kind, str(path), "--broker", "kafka://127.0.0.1:1")
    assert code == 2 and f"{path}: defines no {kind} (an empty list)" in err
    alerts = ["--alerts-out", str(tmp_path / "alerts.jsonl")] if kind == "rules" else []
    code, err = run(
        capsys, "replay", str(SAMPLE_LOG), "--out", str(tmp_path / "o.jsonl"), f"--{kind}", str(path), *alerts
    )
    assert code == 2 and f"{path}: defines no {kind} (an empty list)" in err
    assert not (tmp_path / "o.jsonl").exists()


def test_record_to_standard_output_is_refused_before_anything_is_written(tmp_path, capsys):
    code, err = run(capsys, "replay", str(SAMPLE_LOG), "--out", str(tmp_path / "o.jsonl"), "--record", "-")
    assert code == 2 and "--record needs a file" in err and list(tmp_path.iterdir()) == []


def test_a_gzip_compressed_log_is_named_as_such_instead_of_dead_lettering_every_byte(tmp_path, capsys):
    import gzip

    log = tmp_path / "calls.jsonl.gz"
    log.write_bytes(gzip.compress(SAMPLE_LOG.read_bytes()))
    for command in (
        ["replay", str(log), "--out", str(tmp_path / "o.jsonl")],
        ["send", str(log), "--broker", "kafka://127.0.0.1:1"],
    ):
        code, err = run(capsys, *command)
        assert code == 2 and f"{log} is gzip-compressed: decompress it first" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calls.jsonl.gz"]


def test_a_utf16_log_is_named_as_such_instead_of_dead_lettering_every_record(tmp_path, capsys, monkeypatch):
    log = tmp_path / "calls.jsonl"  # as PowerShell writes text: UTF-16 with a byte-order mark
    log.write_bytes(SAMPLE_LOG.read_text().encode("utf-16"))
    for command in (
        ["replay", str(log), "--out", str(tmp_path / "o.jsonl")],
        ["send", str(log), "--broker", "kafka://127.0.0.1:1"],
    ):
        code, err = run(capsys, *command)
        assert code == 2 and f"{log} is UTF-16 text: convert it to UTF-8 first (`iconv -f UTF-16 -t UTF-8" in err
    with open(log, "rb") as raw, open(raw.fileno(), closefd=False) as stdin:
        monkeypatch.setattr("sys.stdin", stdin)
        code, err = run(capsys, "replay", "-", "--out", str(tmp_path / "o.jsonl"))
    assert code == 2 and "standard input is UTF-16 text: convert it to UTF-8 on its way in" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calls.jsonl"]


def test_a_gzip_compressed_log_on_standard_input_is_named_as_standard_input(tmp_path, capsys, monkeypatch):
    import gzip

    compressed = tmp_path / "calls.jsonl.gz"
    compressed.write_bytes(gzip.compress(SAMPLE_LOG.read_bytes()))
    with open(compressed) as stdin:  # (text, as sys.stdin is: the log is read from its buffer)
        monkeypatch.setattr("sys.stdin", stdin)
        code, err = run(capsys, "replay", "-", "--out", str(tmp_path / "o.jsonl"))
    # (not the name of the temporary copy a stream is read into, which is gone by the time it is read)
    assert code == 2 and err == (
        "callqa: standard input is gzip-compressed: decompress it on its way in (`zcat LOG.gz | callqa … -`)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calls.jsonl.gz"]


def test_a_count_option_that_is_no_number_says_what_it_needs(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["summary", "run-1", "--results", str(tmp_path / "r.jsonl"), "--min-agent-turns", "abc"])
    err = capsys.readouterr().err
    assert "--min-agent-turns: must be a whole number, 0 or more, got 'abc'" in err and "_non_negative_int" not in err


def test_an_output_whose_last_bytes_cannot_be_written_leaves_no_temporary_file(tmp_path):
    from streams.files.output_files import AtomicOutput

    class DiskFullAtClose:  # what a full disk does to the last buffered bytes of a file being closed
        def __init__(self, file):
            self.file = file

        def close(self):
            self.file.close()
            raise OSError(28, "No space left on device")

    target = tmp_path / "log2.jsonl"
    output = AtomicOutput(str(target))
    output.file.write(b"{}\n")
    output.file = DiskFullAtClose(output.file)
    with pytest.raises(OSError, match="No space left"):
        output.commit()
    assert list(tmp_path.iterdir()) == []


def test_summary_reads_results_from_standard_input(tmp_path, capsys, monkeypatch):
    results = tmp_path / "r.jsonl"
    assert main(["replay", str(SAMPLE_LOG), "--out", str(results), "--jobs", "1"]) == 0
    run_id = next(json.loads(line)["run_id"] for line in results.read_text().splitlines() if json.loads(line)["run_id"])
    capsys.readouterr()
    assert main(["summary", run_id, "--results", str(results)]) == 0
    from_file = capsys.readouterr().out
    with open(results, "rb") as stdin:
        monkeypatch.setattr("sys.stdin", stdin)
        assert main(["summary", run_id, "--results", "-"]) == 0
    assert capsys.readouterr().out == from_file and from_file


def test_sigterm_ends_a_replay_like_ctrl_c_leaving_no_partial_output_nor_spool(tmp_path):
    import subprocess
    import sys
    import time

    log = tmp_path / "long.jsonl"
    log.write_bytes(SAMPLE_LOG.read_bytes() * 30)  # (copies: duplicates, but every record is read)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    replay = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "replay",
            str(log),
            "--out",
            str(out / "r.jsonl"),
            "--deadletter",
            str(out / "d.jsonl"),
            "--jobs",
            "2",
        ],
        env={**os.environ, "TMPDIR": str(scratch)},
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not any(scratch.iterdir()) and time.monotonic() < deadline:  # the jobs' spools: replaying now
        time.sleep(0.02)
    replay.terminate()
    _, err = replay.communicate(timeout=60)
    assert replay.returncode == 143 and err.strip().splitlines()[-1] == "callqa: terminated"
    assert list(out.iterdir()) == [] and list(scratch.iterdir()) == []


def test_a_broker_that_cannot_be_reached_at_all_is_exit_3_with_what_to_do(capsys):
    from streams.kafka.embedded_broker import free_port

    code = main(["send", str(SAMPLE_LOG), "--broker", f"tansu://127.0.0.1:{free_port()}"])
    err = capsys.readouterr().err
    assert code == 3 and "Unable to bootstrap" in err
    assert "is the broker running there? `callqa broker` (or `callqa up`) starts the embedded one" in err


def test_a_log_in_which_no_record_holds_an_event_is_replayed_with_a_warning(tmp_path, capsys):
    # A pretty-printed JSON document given as the log: every line dead-lettered, and the summary alone
    # read like any replay's.
    log = tmp_path / "calls.json"
    log.write_text(json.dumps([{"v": 1, "type": "call.started", "call_id": "c1"}], indent=2))
    assert main(["replay", str(log), "--out", str(tmp_path / "out.jsonl"), "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    assert "0 events" in err
    assert "warning: none of the log's 7 records held an event, and each was dead-lettered" in err
    assert main(["replay", str(SAMPLE_LOG), "--out", str(tmp_path / "out.jsonl"), "--jobs", "1"]) == 0
    assert "warning" not in capsys.readouterr().err
