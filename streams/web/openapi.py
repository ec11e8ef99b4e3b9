"""`GET /openapi.json`: the API's OpenAPI 3.1 document, written from the route declarations
(streams/web/routes.py), so that it cannot leave out a route or a query parameter the server takes."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import msgspec

from models.results import CallResult
from streams.web.routes import ROUTES, Route

ERROR = {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}
TOKEN = "apiToken"


# The documents some routes answer as they are, described by the models that define them.
DOCUMENTS = {"/calls/{call_id}": "CallResult"}


def openapi_document(routes: Iterable[Route] = ROUTES, version: str = "0.1.0") -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for route in routes:
        operations = paths.setdefault(route.path, {})
        for method in route.methods:
            operations[method.lower()] = _operation(route, method)
    for path, name in DOCUMENTS.items():
        paths[path]["get"]["responses"]["200"]["content"] = {
            "application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}
        }
    (_, models) = msgspec.json.schema_components([CallResult], ref_template="#/components/schemas/{name}")
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "callqa worker API",
            "version": version,
            "description": "Every worker answers for the whole deployment (docs/reference/http-api.md).",
        },
        "paths": paths,
        "components": {
            "securitySchemes": {
                TOKEN: {"type": "http", "scheme": "bearer", "description": "CALLQA_API_TOKEN, when the worker sets one"}
            },
            "schemas": {"Error": ERROR, **models},
        },
    }


def _operation(route: Route, method: str) -> dict[str, Any]:
    path_params = re.findall(r"{(\w+)}", route.path)
    parameters = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}} for name in path_params]
    if method == "GET":
        parameters += [
            {
                "name": p.name,
                "in": "query",
                "required": False,
                "schema": p.schema(),
                **({"description": p.description} if p.description else {}),
            }
            for p in route.params
        ]
    operation: dict[str, Any] = {
        "summary": route.summary,
        "operationId": _operation_id(method, route.path),
        "parameters": parameters,
        "responses": {
            "200": {"description": "OK"},
            "400": {
                "description": "an unknown or malformed query parameter, named",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            },
        },
    }
    if method != "GET" or route.content:
        operation["security"] = [{TOKEN: []}]
        operation["responses"]["401"] = {"description": "the API token is set and was not given"}
    if route.body and method in ("POST", "PUT"):
        operation["requestBody"] = {
            "required": True,
            "description": route.body,
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    return operation


def _operation_id(method: str, path: str) -> str:
    words = re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_") or "index"
    return f"{method.lower()}_{words}"
