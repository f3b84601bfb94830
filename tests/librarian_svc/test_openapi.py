"""The OpenAPI document tells the truth about every agent operation (issue 11 item 5)."""

from __future__ import annotations

import re
from typing import Any, get_args

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from contracts.ace import DATASET_NAME_PATTERN
from contracts.common import ErrorResponse
from graphs.agent_spec import AgentSpec
from librarian_svc.request_runner import SPEC_KEY

ERROR_REF = "#/components/schemas/ErrorResponse"


@pytest.fixture(name="document", scope="module")
def fixture_document(app: Litestar) -> dict[str, Any]:
    with TestClient(app=app) as client:
        body: dict[str, Any] = client.get("/schema/openapi.json").json()
    return body


def _agent_routes(app: Litestar, body: str = "json") -> list[tuple[str, str, AgentSpec[Any, Any]]]:
    """(document path, method, spec) of the operations whose request arrives as `body`."""
    return [
        (re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path), method.lower(), handler.opt[SPEC_KEY])
        for route in app.routes
        for handler in getattr(route, "route_handlers", [])
        if SPEC_KEY in handler.opt and handler.opt[SPEC_KEY].body == body
        for method in handler.http_methods
    ]


def _resolve(document: dict[str, Any], ref: str) -> dict[str, Any]:
    schema: dict[str, Any] = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return schema


def _struct_tags(union: object) -> set[str | int | None]:
    """The msgspec tags of a union's variants (what the discriminator mapping must list)."""
    tags: set[str | int | None] = set()
    for variant in get_args(union):
        info = msgspec.inspect.type_info(variant)
        assert isinstance(info, msgspec.inspect.StructType), variant
        tags.add(info.tag)
    return tags


def test_every_agent_operation_documents_its_request_body(app: Litestar, document: dict[str, Any]) -> None:
    routes = _agent_routes(app)
    assert len(routes) == 11
    assert len(_agent_routes(app, "text")) == 1
    assert len(_agent_routes(app, "none")) == 2
    for path, method, spec in routes:
        body = document["paths"][path][method]["requestBody"]
        assert body["required"] is True
        ref = body["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith("/" + spec.request_type.__name__)
        assert _resolve(document, ref)["additionalProperties"] is False  # unknown fields are refused


def test_the_200_body_is_a_named_union_discriminated_by_action(app: Litestar, document: dict[str, Any]) -> None:
    routes = _agent_routes(app) + [
        r for r in _agent_routes(app, "text") + _agent_routes(app, "none") if r[2].response_type is not str
    ]
    for path, method, spec in routes:
        if path.endswith("/stream"):
            continue
        ref = document["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        union = _resolve(document, ref)
        assert union["title"] == ref.rsplit("/", 1)[1]
        mapping = union["discriminator"]["mapping"]
        assert union["discriminator"]["propertyName"] == "action"
        assert mapping["ERROR"] == ERROR_REF
        assert set(mapping) == _struct_tags(spec.response_type)
        assert sorted(v["$ref"] for v in union["oneOf"]) == sorted(mapping.values())


@pytest.mark.parametrize("status", ["400", "404", "405", "413", "415", "422", "503"])
def test_every_error_status_is_documented_with_the_error_body(
    app: Litestar, document: dict[str, Any], status: str
) -> None:
    routes = _agent_routes(app) + _agent_routes(app, "text")
    routes += [] if status in ("413", "415", "503") else _agent_routes(app, "none")  # no body: none can happen
    for path, method, _ in routes:
        response = document["paths"][path][method]["responses"][status]
        assert response["description"]
        assert response["content"]["application/json"]["schema"]["$ref"] == ERROR_REF
        if status == "503":  # refused at the door for memory: when to send it again
            assert response["headers"]["Retry-After"]["schema"]["type"] == "integer"
    error = _resolve(document, ERROR_REF)
    assert set(error["required"]) >= {"action", "request_id", "error_type", "message"}
    assert "status_code" not in error["properties"]  # not Litestar's own error shape


def test_the_text_operations_document_text_bodies_and_their_parameters(document: dict[str, Any]) -> None:
    put = document["paths"]["/playbooks/{dataset}"]["put"]
    assert put["requestBody"]["content"]["text/plain"]["schema"]["type"] == "string"
    parameters = {p["name"]: p for p in put["parameters"]}
    assert (parameters["dataset"]["in"], parameters["dataset"]["required"]) == ("path", True)
    assert parameters["dataset"]["schema"]["pattern"] == DATASET_NAME_PATTERN
    assert (parameters["allow_empty"]["in"], parameters["allow_empty"]["schema"]["type"]) == ("query", "boolean")
    export = document["paths"]["/playbooks/{dataset}"]["get"]
    assert "requestBody" not in export
    assert export["responses"]["200"]["content"] == {  # the text, or the ERROR body of a request out of time
        "text/plain": {"schema": {"type": "string"}},
        "application/json": {"schema": {"$ref": ERROR_REF}},
    }
    assert {"404", "500"} <= set(export["responses"])
    assert not {"413", "415", "503"} & set(export["responses"])
    assert document["paths"]["/playbooks"]["get"]["parameters"] == []


def test_the_stream_documents_each_event_and_its_json_payload(document: dict[str, Any]) -> None:
    content = document["paths"]["/agent/grace/step/stream"]["post"]["responses"]["200"]["content"]
    events = content["text/event-stream"]["schema"]["oneOf"]
    by_name = {e["properties"]["event"]["const"]: e["properties"]["data"] for e in events}
    assert by_name["progress"]["contentSchema"]["$ref"].endswith("/GraceEvent")
    assert by_name["action"]["contentSchema"]["$ref"].endswith("/GraceStepResponse")


def test_no_component_is_left_unreferenced_and_errors_are_ours(document: dict[str, Any]) -> None:
    text = msgspec.json.encode(document).decode()
    for name in document["components"]["schemas"]:
        assert f'"#/components/schemas/{name}"' in text, name
    assert ErrorResponse.__name__ in document["components"]["schemas"]


def test_a_405_names_the_allowed_methods(client: TestClient[Litestar]) -> None:
    response = client.get("/agent/librarian/think")
    assert response.status_code == 405
    assert "POST" in response.headers["allow"].split(", ")
    assert response.json()["error_type"] == "INVALID_INPUT"


@pytest.mark.parametrize(
    ("path", "status"), [("/health", "400"), ("/health", "405"), ("/ready", "400"), ("/ready", "405")]
)
def test_the_probes_document_what_every_route_can_answer(
    client: TestClient[Litestar], document: dict[str, Any], path: str, status: str
) -> None:
    """`/health` answers 400 to a bad `X-Request-ID` and 405 to a POST: its document says so, as it does for agents."""
    response = document["paths"][path]["get"]["responses"][status]
    assert response["content"]["application/json"]["schema"]["$ref"] == ERROR_REF
    answer = client.post(path) if status == "405" else client.get(path, headers={"X-Request-ID": "two words"})
    assert answer.status_code == int(status)
