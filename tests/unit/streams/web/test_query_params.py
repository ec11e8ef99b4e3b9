"""Query parameters are parsed by their declaration: an unknown, repeated or malformed one is refused
with its name, never ignored."""

from __future__ import annotations

import pytest

from streams.web.query_params import Param, QueryError, parse_query, parse_time
from streams.web.routes import BY_PATH

CALLS = BY_PATH["/calls"].params


def _refusal(query: list[tuple[str, str]], params=CALLS) -> str:
    with pytest.raises(QueryError) as info:
        parse_query(query, params)
    return str(info.value)


def test_an_unknown_parameter_is_refused_by_name():
    assert "unknown query parameter 'window_s'" in _refusal([("window_s", "3600")])


def test_a_parameter_given_twice_is_refused():
    assert "'agent_id' is given more than once" in _refusal([("agent_id", "a"), ("agent_id", "b")])


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("limit", "ten"),
        ("limit", "0"),
        ("limit", "501"),
        ("verdict", "passed"),
        ("from", "yesterday"),
        ("to", "-5"),
        ("agent_id", ""),
    ],
)
def test_a_malformed_value_is_refused_naming_its_parameter(name, raw):
    assert f"'{name}'" in _refusal([(name, raw)])


def test_times_are_unix_milliseconds_or_iso_8601():
    assert parse_time("from", "1759741200000") == 1_759_741_200_000
    assert parse_time("from", "2025-10-06T09:00:00Z") == 1_759_741_200_000
    assert parse_time("from", "2025-10-06T11:00:00+02:00") == 1_759_741_200_000
    assert parse_time("from", "2025-10-06T09:00:00") == 1_759_741_200_000  # (no zone: UTC)


def test_values_come_typed():
    assert parse_query([("limit", "20"), ("from", "1000"), ("verdict", "fail"), ("metric", "latency")], CALLS) == {
        "limit": 20,
        "from": 1000,
        "verdict": "fail",
        "metric": "latency",
    }


def test_seconds_must_be_positive_and_finite():
    window = (Param("window_s", "seconds"),)
    assert parse_query([("window_s", "1.5")], window) == {"window_s": 1.5}
    for raw in ("0", "-1", "inf", "nan", "x"):
        assert "'window_s'" in _refusal([("window_s", raw)], window)


def test_a_route_without_parameters_refuses_any():
    assert "known: none" in _refusal([("x", "1")], BY_PATH["/runs"].params)
