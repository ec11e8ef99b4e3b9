"""/openapi.json names every route the worker serves, with every method and query parameter it takes."""

from __future__ import annotations

import tempfile

import pytest

from streams.config import Settings
from streams.web.openapi import openapi_document
from streams.web.routes import BY_PATH
from streams.worker.app import create_app

DOCUMENTED_METHODS = {"GET", "POST", "PUT", "DELETE"}  # (HEAD and OPTIONS come with them)


@pytest.fixture(scope="module")
def served() -> set[tuple[str, str]]:
    """(path, method) of every route of a worker's web server, as the server has them."""
    callqa = create_app(Settings(data_dir=tempfile.mkdtemp(prefix="callqa-openapi-")))
    callqa.app.web.init_server()
    routes = set()
    for route in callqa.app.web.web_app.router.routes():
        path = route.resource.canonical
        if route.method in DOCUMENTED_METHODS:
            routes.add(("/static/{path}" if path.startswith("/static") else path, route.method))
    return routes


def test_every_route_served_is_in_the_openapi_document(served):
    paths = openapi_document()["paths"]
    missing = sorted((path, method) for path, method in served if method.lower() not in paths.get(path, {}))
    assert served and missing == []


def test_the_document_names_no_route_the_server_does_not_serve(served):
    documented = {
        (path, method.upper()) for path, operations in openapi_document()["paths"].items() for method in operations
    }
    assert documented == served


def test_every_query_parameter_a_route_takes_is_documented():
    paths = openapi_document()["paths"]
    for path, route in BY_PATH.items():
        if "GET" in route.methods:
            documented = {p["name"] for p in paths[path]["get"]["parameters"] if p["in"] == "query"}
            assert documented == {param.name for param in route.params}, path


def test_routes_showing_call_content_ask_for_the_token_and_health_does_not():
    paths = openapi_document()["paths"]
    assert "security" in paths["/calls/{call_id}"]["get"] and "security" in paths["/timeseries"]["get"]
    assert "security" not in paths["/health"]["get"] and "security" not in paths["/metrics"]["get"]


def test_a_calls_document_is_described_by_the_result_model():
    import jsonschema
    import msgspec

    from tests.unit.streams.web.test_call_index import result

    document = openapi_document()
    schema = {
        **document["paths"]["/calls/{call_id}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"],
        "components": document["components"],
    }
    jsonschema.validate(msgspec.to_builtins(result("c1", sentiment=None)), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"call_id": "c1"}, schema)
