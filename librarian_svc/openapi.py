"""The OpenAPI document, made truthful for the agent operations.

Agent handlers read their body through the request runner (strict decoding), so Litestar sees no
request type, and its generated error responses describe its own error shape, not ours. This module
rewrites each operation from its `AgentSpec`: the request (a JSON body; or a `text/plain` body and/or
path and query parameters, from the request type's fields); the 200 body as a named union component
with a discriminator mapping on `action` (or `text/plain` text); and every status the runner can
answer (400, 404, 405, and for operations with a body 413 and 415, 422, and 500 where a stored file can
be corrupt) with the one ERROR body. The schemas are msgspec's own (`contracts/schema/` comes from the
same function), so the document, the JSON Schemas and the decoder cannot disagree.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from litestar import Litestar
from litestar._openapi.plugin import OpenAPIPlugin

from contracts.common import ErrorResponse
from graphs.agent_spec import AgentSpec, Body
from librarian_svc.request_runner import SPEC_KEY, STREAMS_KEY

REF = "#/components/schemas/{name}"

ERROR_STATUSES: dict[str, str] = {
    "400": "Malformed JSON or text, an empty body, or input the agent refuses (bad state token, history that does "
    "not continue the state, ids that are not in the input, a playbook text that does not parse); `details` name "
    "the JSON paths (or the lines)",
    "404": "No such route (or, for a stored playbook, nothing stored under that name)",
    "405": "Method not allowed on this route",
    "413": "Request body over MAX_BODY_BYTES (or a part of it over its own documented limit)",
    "415": "Request body is not UTF-8 JSON sent as is (Content-Type must be application/json or +json, charset utf-8 "
    "if given; no Content-Encoding, no transfer coding besides chunked)",
    "422": "The body does not match the request schema: unknown fields, wrong types (no coercion), values out of "
    "range; every violation is in `details` with its exact JSON path",
    "503": "A heavy request (Content-Length × the operation's memory factor) waited REQUEST_TIMEOUT_MS for the "
    "worker's memory budget (WORKER_MEMORY_BUDGET_MB) without getting it, or the instance began shutting down "
    "while it waited: `error_type` TIMEOUT, no `state`. Nothing of the request was read, so it is sent again as it "
    "was (a stateful step with the state it carried) after `Retry-After` seconds",
}
TEXT_STATUSES: dict[str, str] = {
    "415": "Request body is not UTF-8 text (Content-Type must be text/plain, charset utf-8 if given)",
    "422": "A path or query parameter does not match its schema, or is unknown or repeated; `details` name it",
}
BODYLESS = ("413", "415", "503")
"""Statuses an operation without a request body cannot answer (it never waits for memory: it holds none)."""
RETRY_AFTER = {
    "Retry-After": {"description": "Seconds to wait before sending the request again", "schema": {"type": "integer"}}
}
_TYPED_PARAMETER = re.compile(r"\{(\w+):\w+\}")


class _TruthfulOpenAPIPlugin(OpenAPIPlugin):
    """Litestar's plugin, with the agent operations rewritten once, the first time the document is asked for."""

    __slots__ = ()

    def provide_openapi_schema(self) -> dict[str, Any]:
        if not self._openapi_schema:
            self._openapi_schema = truthful_document(super().provide_openapi_schema(), self.app)
        return self._openapi_schema


def install(app: Litestar) -> None:
    """Serve the rewritten document at `/schema/openapi.json` (and to Redoc/Swagger); built lazily, on first use."""
    plugin = app.plugins.get(OpenAPIPlugin)
    plugin.__class__ = _TruthfulOpenAPIPlugin  # same slots: only the document it serves changes


def _agent_operations(app: Litestar) -> list[tuple[str, str, str, AgentSpec[Any, Any], bool]]:
    """(document path, method, operationId, spec, streams) of every agent route."""
    found = []
    for route in app.routes:
        for handler in getattr(route, "route_handlers", []):
            spec = handler.opt.get(SPEC_KEY)
            if spec is not None:
                path = _TYPED_PARAMETER.sub(r"{\1}", route.path)  # `{dataset:str}` is `{dataset}` in the document
                operation_id = handler.operation_id or handler.handler_name
                found += [(path, m.lower(), operation_id, spec, handler.opt[STREAMS_KEY]) for m in handler.http_methods]
    return found


def _response_name(operation_id: str) -> str:
    return operation_id[:1].upper() + operation_id[1:] + "Response"


def truthful_document(document: dict[str, Any], app: Litestar) -> dict[str, Any]:
    """`document` with every agent operation's request, responses and schemas taken from its spec."""
    operations = _agent_operations(app)
    types: list[Any] = [ErrorResponse]
    for *_, spec, _ in operations:
        types += [spec.request_type, spec.response_type]
        if spec.progress_type is not None:
            types.append(spec.progress_type)
    schemas, components = msgspec.json.schema_components(types, ref_template=REF)
    by_type = dict(zip(map(id, types), schemas, strict=True))
    doc_components = document.setdefault("components", {}).setdefault("schemas", {})
    doc_components.update(components)
    union_names: dict[str, str] = {}  # one name per spec: a step and its stream share their union
    for path, method, operation_id, spec, streams in sorted(operations, key=lambda op: op[4]):
        operation = document["paths"][path][method]
        _set_request(operation, path, spec.body, by_type[id(spec.request_type)], doc_components)
        if spec.response_type is str:
            success: dict[str, Any] = {
                "description": "The text (`text/plain; charset=utf-8`), or the ERROR body (`application/json`, "
                "`error_type` TIMEOUT) when the request's time ran out",
                "content": {
                    "text/plain": {"schema": {"type": "string"}},
                    "application/json": {"schema": {"$ref": REF.format(name="ErrorResponse")}},
                },
            }
        else:
            union_name = union_names.setdefault(spec.name, _response_name(operation_id))
            doc_components[union_name] = _named_union(by_type[id(spec.response_type)], union_name)
            success = _action_response(spec, union_name, by_type, streams=streams)
        operation["responses"] = {"200": success} | _error_responses(spec)
    _probe_errors(document, {(path, method) for path, method, *_ in operations})
    _drop_unreferenced(document)
    return document


PROBE_STATUSES: dict[str, str] = {
    "400": "An `X-Request-ID` header that is not 1-200 visible ASCII characters without spaces, or two with "
    "different values, or a request that is not valid HTTP/1.1",
    "405": ERROR_STATUSES["405"],
}
"""What every other operation (`/health`, `/ready`, the document itself) can answer besides its own statuses."""


def _probe_errors(document: dict[str, Any], agent_operations: set[tuple[str, str]]) -> None:
    """Add the statuses every route can answer (`PROBE_STATUSES`) to each operation that is not an agent's.

    The agent operations list every status of theirs already (`_error_responses`).
    """
    error_body = {"application/json": {"schema": {"$ref": REF.format(name="ErrorResponse")}}}
    for path, methods in document.get("paths", {}).items():
        for method, operation in methods.items():
            if (path, method) in agent_operations or not isinstance(operation, dict) or "responses" not in operation:
                continue
            for status, text in PROBE_STATUSES.items():
                operation["responses"].setdefault(status, {"description": text, "content": error_body})


def _set_request(
    operation: dict[str, Any], path: str, body: Body, request_schema: dict[str, Any], components: dict[str, Any]
) -> None:
    """The request body (JSON, or a text field's `text/plain`) and the path and query parameters."""
    operation.pop("requestBody", None)
    match body:
        case "json":
            operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": request_schema}}}
        case "text":
            text = _properties(request_schema, components)["text"]
            operation["requestBody"] = {"required": True, "content": {"text/plain": {"schema": text}}}
    if body != "json":
        operation["parameters"] = _parameters(path, request_schema, components)


def _action_response(
    spec: AgentSpec[Any, Any], union_name: str, by_type: dict[int, Any], *, streams: bool
) -> dict[str, Any]:
    """The 200 of an operation answering with an action: the named union as JSON, or as the stream's last event."""
    if not streams:
        return {
            "description": "The action: read `action` first, then the matching variant",
            "content": {"application/json": {"schema": {"$ref": REF.format(name=union_name)}}},
        }
    assert spec.progress_type is not None, "a streaming operation names its progress record type"
    progress = by_type[id(spec.progress_type)]
    return {
        "description": "Server-Sent Events: `event: progress` records, then one `event: action` whose data is "
        f"a `{union_name}`",
        "content": {"text/event-stream": {"schema": _event_schema(progress, union_name)}},
    }


def _error_responses(spec: AgentSpec[Any, Any]) -> dict[str, Any]:
    """Every error status the operation can answer, each with the one ErrorResponse body."""
    error_body = {"application/json": {"schema": {"$ref": REF.format(name="ErrorResponse")}}}
    statuses = ERROR_STATUSES | (TEXT_STATUSES if spec.body != "json" else {})
    if spec.body == "none":
        statuses = {status: text for status, text in statuses.items() if status not in BODYLESS}
    responses = {status: {"description": text, "content": error_body} for status, text in statuses.items()}
    if "503" in responses:
        responses["503"]["headers"] = RETRY_AFTER
    if spec.server_error is not None:
        responses["500"] = {"description": spec.server_error, "content": error_body}
    return responses


def _properties(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """The field schemas of a request type (following its `$ref`)."""
    resolved = components[schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema
    properties: dict[str, Any] = resolved.get("properties", {})
    return properties


def _parameters(path: str, schema: dict[str, Any], components: dict[str, Any]) -> list[dict[str, Any]]:
    """Path and query parameters from a request type built from them (`text` is the body, not a parameter)."""
    resolved = components[schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema
    required = set(resolved.get("required", []))
    parameters = []
    for name, field_schema in _properties(schema, components).items():
        if name == "text":
            continue
        where = "path" if f"{{{name}}}" in path else "query"
        parameters.append(
            {"name": name, "in": where, "required": where == "path" or name in required, "schema": field_schema}
        )
    return parameters


def _event_schema(progress: dict[str, Any], union_name: str) -> dict[str, Any]:
    """One SSE event (OpenAPI 3.1: `schema` describes each event): a progress record, or the final action."""

    def event(name: str, payload: dict[str, Any], *, with_id: bool) -> dict[str, Any]:
        properties: dict[str, Any] = {
            "event": {"const": name},
            "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": payload},
        }
        if with_id:
            properties["id"] = {"type": "string", "pattern": "^[0-9]+$"}
        return {"type": "object", "required": ["event", "data"], "properties": properties}

    return {
        "oneOf": [
            event("progress", progress, with_id=True),
            event("action", {"$ref": REF.format(name=union_name)}, with_id=False),
        ]
    }


def _named_union(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """The response union as a component: `oneOf` its variants with msgspec's discriminator on `action`."""
    variants = schema.get("anyOf") or schema.get("oneOf") or [schema]
    union: dict[str, Any] = {"title": name, "oneOf": variants}
    if "discriminator" in schema:
        union["discriminator"] = schema["discriminator"]
    return union


def _drop_unreferenced(document: dict[str, Any]) -> None:
    """Remove components nothing points at any more (Litestar's guesses from the handlers' annotations)."""
    schemas = document["components"]["schemas"]
    reachable: set[str] = set()
    pending = [document["paths"]]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                name = ref.rsplit("/", 1)[1]
                if name not in reachable and name in schemas:
                    reachable.add(name)
                    pending.append(schemas[name])
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    for name in set(schemas) - reachable:
        del schemas[name]
