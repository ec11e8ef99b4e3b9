"""Settings, from environment variables and (optionally) the same keys in a TOML file.

Every key is `CALLQA_<NAME>` in the environment (the judge also reads the standard `OPENAI_API_KEY`
and `OPENAI_BASE_URL`). `CALLQA_CONFIG=path.toml` names a file whose top-level keys are the lowercase
names (`broker = "kafka://…"`); the environment wins over the file. Secrets never appear in `repr`.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from models.wire import MAX_MESSAGE_BYTES
from scorers.judge.requests import ANSWER_FORMATS
from streams.redaction import redacted_url

SECRET_FIELDS = frozenset({"openai_api_key", "kafka_sasl_password", "api_token"})


# The largest produce request the worker sends, and what a request adds around one record (headers,
# the batch's framing): a result must fit in it whole.
PRODUCER_MAX_REQUEST_BYTES = 4_194_304
REQUEST_OVERHEAD_BYTES = 16_384


@dataclass(frozen=True)
class Settings:
    # Kafka. The `tansu://` scheme selects the embedded-broker transport (streams/kafka/transports.py);
    # use `kafka://host:9092` for Apache Kafka.
    broker: str = "tansu://127.0.0.1:9092"
    topic_prefix: str = "callqa"
    partitions: int = 4
    # The Faust app id: the consumer group, and the prefix of the changelog and internal topics. Empty:
    # the topic prefix, so that a prefix alone keeps two deployments on one cluster apart (`app_name`).
    app_id: str = ""
    # Replicas of every topic callqa creates (1 on the embedded broker; 3 on a production cluster).
    replication_factor: int = 1
    store: str = "memory://"  # rocksdb:// in production (pip install callqa[rocksdb])
    data_dir: str = "callqa-data"
    web_port: int = 6066
    # The name other workers reach this one's API by (they pass GET /alerts on to the worker that
    # evaluates alerts), and the address it listens on: the same unless web_bind is set. In a container
    # the API listens on 0.0.0.0, which names no worker: there web_host is the container's host name.
    web_host: str = "127.0.0.1"
    web_bind: str | None = None
    # Asked of every HTTP API request that changes something (cohort writes) as `Authorization: Bearer
    # <token>`; reads stay open, for dashboards. None: writes are open to whoever reaches the API.
    api_token: str | None = field(default=None, repr=False)
    # Event time: how far a partition's watermark must pass a call's inactivity deadline before the
    # call is swept, to absorb the reordering a batching producer introduces between calls.
    allowed_lateness_ms: int = 30_000
    # How far past its partition's watermark one call's event may move it on its own (0: any
    # distance): a longer leap (a producer's clock hours ahead) waits for another call, a watermark
    # or the worker's own clock to bear it out, instead of sweeping every open call at once.
    max_watermark_leap_ms: int = 600_000
    # An event stamped more than this past the worker's clock (replay: the log's own time) is refused
    # as from the future, whoever bears it out (0: no bound; scorers/future_time.py).
    future_bound_s: float = 86_400.0
    # A quiet partition with open calls gets a watermark tick after this many seconds (0: never).
    idle_tick_s: float = 5.0
    # How often the worker asks the brokers for their metadata, for /health (streams/kafka/health.py).
    broker_probe_s: float = 5.0
    # Ended calls stay in state this long in event time for late annotations and corrections (and
    # never less than the allowed lateness).
    retention_after_end_s: float = 86_400.0
    # The HTTP API's cohort overviews and run summaries count the calls whose newest result is at
    # most this much older, in event time, than the newest result read (0: every result, for ever).
    # Kafka keeps a topic's records a week unless told otherwise: a worker counts what a worker
    # started now would read back from the results topic.
    view_window_s: float = 604_800.0
    # GET /metrics: the agents with a label of their own; those read after the first this many are
    # counted under agent="other", so that the series stay bounded (docs/guides/prometheus.md).
    metrics_max_agents: int = 50
    max_message_bytes: int = MAX_MESSAGE_BYTES
    # LLM judge (any OpenAI-compatible server).
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    judge_model: str = "gpt-4o-mini"
    judge_timeout_s: float = 30.0
    judge_concurrency: int = 4
    judge_retries: int = 2
    judge_backoff_s: float = 0.5  # first retry's wait; doubles on each retry
    judge_response_format: str = "json_schema"  # or json_object, for servers without structured output
    judge_queue_size: int = 1000  # ended calls waiting for the judge in a worker; beyond it, not judged
    # Kafka security for real clusters.
    kafka_security_protocol: str = "PLAINTEXT"  # PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
    kafka_sasl_mechanism: str | None = None  # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    kafka_sasl_username: str | None = None
    kafka_sasl_password: str | None = field(default=None, repr=False)
    kafka_ssl_cafile: str | None = None
    # How callqa's own producers compress what they send (results, journal, dead letters, `send`'s
    # events): none, gzip, snappy, lz4 or zstd. What other producers compress is read whatever this says.
    kafka_compression: str = "none"
    alert_webhook_url: str | None = None
    # How long the alert input stays quiet before the results held for event-time order are counted
    # without waiting for the other results partitions (streams/alerts/live.py).
    alert_quiet_release_s: float = 2.0
    # Alert rules (TOML or JSON, see models/alert_rules.py); the `callqa.alert-rules` topic overrides them.
    alert_rules_file: str | None = None
    # Cohort definitions loaded at start (JSON or TOML); the `callqa.cohorts` topic updates them.
    cohorts_file: str | None = None
    log_level: str = "info"

    def __post_init__(self) -> None:
        _check_ranges(self)

    @property
    def app_name(self) -> str:
        """The app id in force: `app_id`, or the topic prefix when it is not set."""
        return self.app_id or self.topic_prefix

    @property
    def web_listen_host(self) -> str:
        """The address the HTTP API listens on: `web_bind`, else `web_host`."""
        return self.web_bind or self.web_host

    @property
    def api_token_in_force(self) -> str | None:
        """The API token without the whitespace around it (a secret mounted from a file ends in a
        newline, which no client sends); None when it is not set or blank."""
        return (self.api_token or "").strip() or None

    @property
    def sasl_mechanism(self) -> str:
        """The SASL mechanism as the Kafka clients spell it (PLAIN unless set; any case accepted)."""
        return (self.kafka_sasl_mechanism or "PLAIN").upper()

    @property
    def compression_type(self) -> str | None:
        """The producers' codec as the Kafka clients spell it (None: no compression)."""
        codec = self.kafka_compression.lower()
        return None if codec == "none" else codec

    @property
    def max_result_bytes(self) -> int:
        """The largest result published (live) or written (replay); a larger one is dead-lettered."""
        return min(self.max_message_bytes, PRODUCER_MAX_REQUEST_BYTES - REQUEST_OVERHEAD_BYTES)

    @property
    def judge_enabled(self) -> bool:
        return bool(self.openai_api_key)

    @property
    def bootstrap(self) -> str:
        """host:port list for plain Kafka clients (no scheme)."""
        return ",".join(part.split("://", 1)[-1] for part in self.broker.split(";"))

    def with_overrides(self, **changes: Any) -> Settings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


# Lower bounds of the numeric settings (a count of partitions, a duration, a size cannot be negative).
_AT_LEAST: dict[str, float] = {
    "partitions": 1,
    "replication_factor": 1,
    "allowed_lateness_ms": 0,
    "max_watermark_leap_ms": 0,
    "future_bound_s": 0,
    "idle_tick_s": 0,
    "broker_probe_s": 0.1,
    "retention_after_end_s": 0,
    "view_window_s": 0,
    "max_message_bytes": 1,
    "judge_timeout_s": 0.1,
    "judge_concurrency": 1,
    "judge_retries": 0,
    "judge_backoff_s": 0,
    "judge_queue_size": 0,
    "alert_quiet_release_s": 0.1,
    "metrics_max_agents": 0,
}

# Upper bounds. A message of at most 16 MiB holds fewer events than the positions the worker has for
# a message's events (streams/worker/live_scorer.py, `MAX_EVENTS_PER_MESSAGE`, 2**19): an event takes 50 bytes at least.
# The judge's: a request that waits longer than an hour, or is tried more than 10 times, is a setting
# mistyped (each try is paid for); a retry's wait is capped at 60 s anyway (streams/judge/client.py).
_AT_MOST: dict[str, float] = {
    "max_message_bytes": 16 * 1024 * 1024,
    "judge_timeout_s": 3600,
    "judge_retries": 10,
    "judge_backoff_s": 60,
    "judge_concurrency": 256,
    "metrics_max_agents": 10_000,
}

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
COMPRESSION_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")  # (Kafka's, all readable by every client here)
STORE_SCHEMES = ("memory", "rocksdb", "aerospike")  # (Faust's stores)
# What Kafka allows in a topic or group name; a topic name is at most 249 characters, and the prefix
# is followed by the longest suffix callqa adds (".alerts-input", "-alert-engine-changelog").
KAFKA_NAME = re.compile(r"[A-Za-z0-9._-]+")
MAX_PREFIX_CHARS = 200


def _check_ranges(settings: Settings) -> None:
    for name, low in _AT_LEAST.items():
        value = getattr(settings, name)
        if value < low:
            raise ValueError(f"{name} must be at least {low:g}, got {value!r}")
    for name, high in _AT_MOST.items():
        value = getattr(settings, name)
        if value > high:
            raise ValueError(f"{name} must be at most {high:.0f}, got {value!r}")
    if not 0 <= settings.web_port <= 65_535:
        raise ValueError(f"web_port must be a port number (0 to 65535), got {settings.web_port!r}")
    if settings.judge_response_format not in ANSWER_FORMATS:
        raise ValueError(
            f"judge_response_format must be one of {', '.join(ANSWER_FORMATS)}, got {settings.judge_response_format!r}"
        )
    if settings.kafka_compression.lower() not in COMPRESSION_CODECS:
        raise ValueError(
            f"kafka_compression must be one of {', '.join(COMPRESSION_CODECS)}, got {settings.kafka_compression!r}"
        )
    if settings.log_level.lower() not in LOG_LEVELS:
        raise ValueError(f"log_level must be one of {', '.join(LOG_LEVELS)}, got {settings.log_level!r}")
    _check_broker(settings.broker)
    _check_names(settings)
    _check_security(settings)
    scheme = settings.store.partition("://")[0]
    if "://" not in settings.store or scheme not in STORE_SCHEMES:
        raise ValueError(f"store must be one of {', '.join(s + '://' for s in STORE_SCHEMES)}, got {settings.store!r}")
    for name in ("alert_webhook_url", "openai_base_url"):
        url = getattr(settings, name)
        if url is not None and not re.match(r"https?://[^/?#\s]+", url, re.IGNORECASE):
            raise ValueError(f"{name} must be an http:// or https:// URL with a host, got {redacted_url(url)!r}")


def _check_names(settings: Settings) -> None:
    for name in ("topic_prefix", "app_id"):
        value = getattr(settings, name)
        if name == "app_id" and not value:
            continue  # (the topic prefix)
        if not KAFKA_NAME.fullmatch(value) or len(value) > MAX_PREFIX_CHARS:
            raise ValueError(
                f"{name} must be 1 to {MAX_PREFIX_CHARS} letters, digits, '.', '_' or '-' "
                f"(what Kafka allows in a topic or group name), got {value!r}"
            )


def _check_security(settings: Settings) -> None:
    """A SASL or SSL setting the protocol would ignore connects without it: refused, not dropped."""
    protocol = settings.kafka_security_protocol.upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise ValueError(
            f"kafka_security_protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, "
            f"got {settings.kafka_security_protocol!r}"
        )
    sasl = {
        name: getattr(settings, name) for name in ("kafka_sasl_mechanism", "kafka_sasl_username", "kafka_sasl_password")
    }
    if not protocol.startswith("SASL"):
        given = [name for name, value in sasl.items() if value]
        if given:
            raise ValueError(
                f"{', '.join(given)} set, but kafka_security_protocol is {protocol}, which does not "
                f"use {'it' if len(given) == 1 else 'them'}: set it to SASL_SSL or SASL_PLAINTEXT"
            )
    else:
        missing = [name for name in ("kafka_sasl_username", "kafka_sasl_password") if not sasl[name]]
        if missing:
            raise ValueError(f"kafka_security_protocol {protocol} needs {' and '.join(missing)}")
        if settings.sasl_mechanism not in SASL_MECHANISMS:
            raise ValueError(
                f"kafka_sasl_mechanism must be one of {', '.join(SASL_MECHANISMS)}, "
                f"got {settings.kafka_sasl_mechanism!r}"
            )
    cafile = settings.kafka_ssl_cafile
    if cafile is not None:
        if "SSL" not in protocol:
            raise ValueError(
                f"kafka_ssl_cafile set, but kafka_security_protocol is {protocol}, which does not use "
                f"it: set it to SSL or SASL_SSL"
            )
        if not os.path.isfile(cafile):
            raise ValueError(f"kafka_ssl_cafile {cafile!r}: no such file")


# kafka: Apache Kafka (the hot-path transport); tansu: the embedded broker; aiokafka: Faust's stock
# transport; callqa-kafka: what the worker turns kafka:// into (streams/kafka/transports.py).
BROKER_SCHEMES = ("kafka", "tansu", "aiokafka", "callqa-kafka")


def _check_broker(url: str) -> None:
    """Each address of `url` (`;` or `,` between them) is host:port, with one of BROKER_SCHEMES or none:
    an unknown scheme would otherwise be read as part of a host name and fail only on connecting."""
    for address in url.replace(",", ";").split(";"):
        address = address.strip()
        scheme, separator, rest = address.rpartition("://")
        if separator and scheme not in BROKER_SCHEMES:
            raise ValueError(
                f"broker {url!r}: unknown scheme {scheme + '://'!r} (use one of "
                f"{', '.join(s + '://' for s in BROKER_SCHEMES[:3])}, or host:port)"
            )
        host, colon, port = rest.rpartition(":")
        if not colon or not host or not port.isdigit() or "/" in rest:
            raise ValueError(f"broker {url!r}: expected host:port, got {address!r}")


def _coerce(name: str, raw: Any, source: str) -> Any:
    """`raw` (text from the environment, or a TOML value) as the setting's type; `source` names where
    it came from for the error message."""
    kind = str({f.name: f.type for f in fields(Settings)}[name])
    if raw is None:
        return None
    shown = "(a value, not shown: a secret)" if name in SECRET_FIELDS else repr(raw)
    if isinstance(raw, (bool, list, dict)):
        raise ValueError(f"{source}: expected {'text' if 'str' in kind else 'a number'}, got {shown}")
    if kind == "int":
        try:
            value = float(raw) if isinstance(raw, float) else int(str(raw).strip())
        except ValueError:
            raise ValueError(f"{source}: expected a whole number, got {raw!r}") from None
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(f"{source}: expected a whole number, got {raw!r}")
        return int(value)
    if kind == "float":
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"{source}: expected a number, got {raw!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"{source}: expected a finite number, got {raw!r}")
        return value
    if not isinstance(raw, str):
        raise ValueError(f"{source}: expected text, got {shown}")
    return raw


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    config_path = environ.get("CALLQA_CONFIG")
    if config_path:
        try:
            with open(config_path, "rb") as handle:
                document = tomllib.loads(handle.read().decode("utf-8-sig"))  # (past a byte-order mark)
        except OSError as exc:
            raise ValueError(f"CALLQA_CONFIG {config_path}: {exc.strerror}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise ValueError(f"CALLQA_CONFIG {config_path}: not valid TOML: {exc}") from None
        known = {f.name for f in fields(Settings)}
        unknown = set(document) - known
        if unknown:
            raise ValueError(f"{config_path}: unknown settings {sorted(unknown)}; known: {sorted(known)}")
        values.update(document)
        sources.update((name, f"{config_path}: {name}") for name in document)
    # The environment wins over the file, the standard OPENAI_* variables included (CALLQA_OPENAI_*
    # over those); set but empty, they say nothing (`${OPENAI_API_KEY:-}` in a compose file is empty
    # where it is not set), and the file's value stands.
    for standard, name in (("OPENAI_API_KEY", "openai_api_key"), ("OPENAI_BASE_URL", "openai_base_url")):
        if environ.get(standard):
            values[name] = environ[standard]
            sources[name] = standard
    for f in fields(Settings):
        key = f"CALLQA_{f.name.upper()}"
        if key in environ:
            if not environ[key] and "None" in str(f.type):
                continue  # (an optional setting set but empty says nothing, as `${VAR:-}` leaves it)
            values[f.name] = environ[key]
            sources[f.name] = key
    _refuse_unknown_variables(environ)
    coerced = {name: _coerce(name, raw, sources.get(name, name)) for name, raw in values.items()}
    try:
        return Settings(**coerced)
    except ValueError as exc:
        raise ValueError(f"invalid setting: {exc}") from None


# CALLQA_* variables that are not settings: the settings file, and the collector's thresholds, read by
# every process (replay's jobs included) before any settings are (streams/tuning.py).
OTHER_VARIABLES = frozenset({"CALLQA_CONFIG", "CALLQA_GC_THRESHOLDS"})


def _refuse_unknown_variables(environ: Mapping[str, str]) -> None:
    """A mistyped variable (CALLQA_BROKR) would leave its setting at the default without a word, as a
    mistyped key of the settings file does not."""
    known = {f"CALLQA_{f.name.upper()}" for f in fields(Settings)} | OTHER_VARIABLES
    unknown = sorted(key for key in environ if key.startswith("CALLQA_") and key not in known)
    if unknown:
        hints = [
            f"{key} (did you mean {close[0]}?)" if (close := difflib.get_close_matches(key, known, 1)) else key
            for key in unknown
        ]
        listed = "" if all("did you mean" in hint for hint in hints) else f"; known: {', '.join(sorted(known))}"
        raise ValueError(f"unknown environment variable{'s' if len(unknown) > 1 else ''} {', '.join(hints)}{listed}")
